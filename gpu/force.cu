/*
 * force.cu - Fruchterman-Reingold on the device.
 *
 * The model is the CPU drawer's (common/layout.c layout_force_real): ideal
 * edge length k = 1, repulsion k^2/d between every pair, attraction d^2/k
 * along edges, weak gravity 0.02 towards the centroid, displacement capped
 * by a temperature falling linearly from 0.1 sqrt(n) k. The CPU version
 * approximates the repulsion with a Barnes-Hut tree; here it is exact, all
 * pairs, the positions tiled through shared memory and the forces summed in
 * registers.
 *
 * One cooperative launch runs every iteration: the grid is sized to be
 * co-resident, positions are double-buffered (read one, write the other)
 * and a grid-wide barrier separates iterations; the centroid for iteration
 * i+1 is accumulated while iteration i writes its positions.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.cuh"

extern "C" {
#include "rng.h"
#include "util.h"
}

#define FR_BLOCK 256

struct fr_sync {
    unsigned int count, gen;
    float cx[3], cy[3]; /* centroid accumulators, rotating */
};

__device__ static inline void grid_barrier(struct fr_sync *s, unsigned int nblocks)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile unsigned int *gen = &s->gen;
        unsigned int g = *gen;
        __threadfence();
        if (atomicAdd(&s->count, 1u) == nblocks - 1) {
            s->count = 0;
            __threadfence();
            atomicAdd(&s->gen, 1u);
        } else {
            while (*gen == g)
                ;
        }
        __threadfence();
    }
    __syncthreads();
}

static __global__ void __launch_bounds__(FR_BLOCK)
    k_force(float2 *pa, float2 *pb, const int *__restrict__ inc_off, const int *__restrict__ inc,
            const int2 *__restrict__ edges, int n, int iters, float t0, struct fr_sync *sync)
{
    __shared__ float2 tile[FR_BLOCK];
    const unsigned int nb = gridDim.x;
    for (int it = 0; it < iters; it++) {
        float2 *cur = (it & 1) ? pb : pa, *nxt = (it & 1) ? pa : pb;
        const int a = it % 3, b = (it + 1) % 3, c = (it + 2) % 3;
        /* written by other blocks: read through L2 (__ldcg), never a stale L1 line */
        const float gx = __ldcg(&sync->cx[a]) / n, gy = __ldcg(&sync->cy[a]) / n;
        const float temp = t0 * (1.0f - (float)it / iters) + 1e-3f;
        float lx = 0, ly = 0; /* this thread's share of the next centroid */
        for (int base = blockIdx.x * blockDim.x; base < n; base += nb * blockDim.x) {
            int i = base + threadIdx.x;
            float2 pi = i < n ? __ldcg(&cur[i]) : make_float2(0, 0);
            float dx = 0, dy = 0;
            for (int t0i = 0; t0i < n; t0i += FR_BLOCK) {
                int j = t0i + threadIdx.x;
                tile[threadIdx.x] = j < n ? __ldcg(&cur[j]) : make_float2(0, 0);
                __syncthreads();
                int lim = min(FR_BLOCK, n - t0i);
                for (int q = 0; q < lim; q++) {
                    float ex = pi.x - tile[q].x, ey = pi.y - tile[q].y;
                    float d2 = ex * ex + ey * ey;
                    if (d2 > 0) { /* k^2 / d along the unit vector: k^2 / d^2 times (ex, ey) */
                        float s = 1.0f / d2;
                        dx += ex * s;
                        dy += ey * s;
                    }
                }
                __syncthreads();
            }
            if (i < n) {
                dx -= 0.02f * (pi.x - gx);
                dy -= 0.02f * (pi.y - gy);
                for (int k = inc_off[i]; k < inc_off[i + 1]; k++) {
                    int2 e = edges[inc[k]];
                    float2 pu = __ldcg(&cur[e.x == i ? e.y : e.x]);
                    float ex = pi.x - pu.x, ey = pi.y - pu.y;
                    float d = sqrtf(ex * ex + ey * ey); /* (d^2 / k) / d with k = 1 */
                    dx -= ex * d;
                    dy -= ey * d;
                }
                float d = sqrtf(dx * dx + dy * dy);
                if (d > 0) {
                    float s = fminf(d, temp) / d;
                    pi.x += dx * s;
                    pi.y += dy * s;
                }
                nxt[i] = pi;
                lx += pi.x;
                ly += pi.y;
            }
        }
        for (int o = 16; o > 0; o >>= 1) {
            lx += __shfl_down_sync(0xffffffffu, lx, o);
            ly += __shfl_down_sync(0xffffffffu, ly, o);
        }
        if ((threadIdx.x & 31) == 0) {
            atomicAdd(&sync->cx[b], lx);
            atomicAdd(&sync->cy[b], ly);
        }
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            sync->cx[c] = 0; /* used again at it + 2, after the barrier below */
            sync->cy[c] = 0;
        }
        grid_barrier(sync, nb);
    }
}

extern "C" int gpu_layout_force(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g,
                                int32_t iterations, uint64_t seed, double *xy)
{
    if (!ctx->healthy)
        return LCN_EGPU_STICKY;
    if (slot < 0 || slot >= ctx->cfg.slots || g->n > ctx->cfg.max_nodes || g->m > ctx->cfg.max_edges)
        return g->n > ctx->cfg.max_nodes || g->m > ctx->cfg.max_edges ? LCN_ETOOBIG : LCN_EINVAL;
    int n = g->n;
    if (n == 0)
        return 0;
    if (iterations <= 0)
        iterations = n <= 1000 ? 500 : (n <= 5000 ? 300 : 150);
    struct gpu_slot *s = &ctx->slots[slot];
    GPU_CHECK(ctx, cudaSetDevice(ctx->cfg.device));
    /* the same random start as the CPU drawer */
    const double side = sqrt((double)n);
    struct lcn_rng r;
    rng_init(&r, seed, 0x464f5243u, RNG_PURPOSE_INIT);
    float2 *h = (float2 *)xmalloc(sizeof(float2) * (size_t)n);
    struct fr_sync sy;
    memset(&sy, 0, sizeof(sy));
    for (int i = 0; i < n; i++) {
        double x = rng_unit53(&r) * side, y = rng_unit53(&r) * side;
        h[i] = make_float2((float)x, (float)y);
        sy.cx[0] += (float)x;
        sy.cy[0] += (float)y;
    }
    int rc = gpu_upload_graph(ctx, s, g);
    float2 *pa = (float2 *)s->fpos, *pb = pa + n;
    /* the sync block lives in the slot's evaluator scratch (cell_count is idle here) */
    struct fr_sync *dsync = (struct fr_sync *)s->cell_count;
    if (!rc)
        rc = gpu_h2d(ctx, s, pa, h, sizeof(float2) * (size_t)n);
    if (!rc)
        rc = gpu_h2d(ctx, s, dsync, &sy, sizeof(sy));
    if (rc) {
        free(h);
        return rc;
    }
    int per_sm = 0;
    GPU_CHECK(ctx, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k_force, FR_BLOCK, 0));
    int blocks = (n + FR_BLOCK - 1) / FR_BLOCK;
    int maxb = per_sm * ctx->info.sms;
    if (blocks > maxb)
        blocks = maxb;
    float t0 = (float)(side * 0.1);
    const int2 *edges = s->edges;
    const int *inc_off = s->inc_off, *inc = s->inc;
    void *args[] = {&pa, &pb, &inc_off, &inc, &edges, &n, &iterations, &t0, &dsync};
    GPU_CHECK(ctx, cudaLaunchCooperativeKernel((void *)k_force, blocks, FR_BLOCK, args, 0, s->stream));
    GPU_LAUNCHED(ctx);
    float2 *res = (iterations & 1) ? pb : pa;
    rc = gpu_d2h(ctx, s, h, res, sizeof(float2) * (size_t)n);
    if (!rc) {
        cudaError_t e = cudaStreamSynchronize(s->stream);
        if (e != cudaSuccess)
            rc = gpu_check_fail(ctx, e, "k_force", __FILE__, __LINE__);
    }
    if (!rc)
        for (int i = 0; i < n; i++) {
            xy[2 * i] = h[i].x;
            xy[2 * i + 1] = h[i].y;
        }
    free(h);
    return rc;
}
