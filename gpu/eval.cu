/*
 * eval.cu - evaluator kernels: per-edge crossing counts of a whole layout
 * ("full": one thread per edge against every edge, tiled through shared
 * memory; "grid": a uniform grid over edge bounding boxes where each pair of
 * short edges is tested once, in the lower-left cell of the overlap of
 * their cell ranges, and long edges are tested against everything), and a
 * batch of W independent single-node proposals on one base layout
 * ("delta": W x m counts out). Every kernel counts the pair tests it
 * performs, so the path that ran is measured, not assumed.
 *
 * Layers: static __global__ kernels; raw launchers taking device pointers,
 * sizes and a stream; the gpu.h adapters that check preconditions, upload
 * inputs into a slot and download results.
 */
#include <cub/device/device_scan.cuh>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.cuh"

extern "C" {
#include "crossings.h"
#include "util.h"
}

#define EVAL_BLOCK 256
#define GRID_LONG_SPAN 64 /* edges whose bbox spans more cells are "long" */

__device__ static inline struct lcn_pt P(int2 v)
{
    struct lcn_pt p;
    p.x = v.x;
    p.y = v.y;
    return p;
}

/* Warp-aggregated add of a per-thread counter into a global total. */
__device__ static inline void add_tests(unsigned long long *total, unsigned long long mine)
{
    for (int o = 16; o > 0; o >>= 1)
        mine += __shfl_down_sync(0xffffffffu, mine, o);
    if ((threadIdx.x & 31) == 0 && mine)
        atomicAdd(total, mine);
}

/* ---- full ---- */

static __global__ void k_full(const int2 *__restrict__ edges, const int2 *__restrict__ pts, int m,
                              int *__restrict__ c, unsigned long long *tests)
{
    __shared__ int4 seg[EVAL_BLOCK];
    __shared__ int2 ids[EVAL_BLOCK];
    int e = blockIdx.x * blockDim.x + threadIdx.x;
    int2 me = e < m ? edges[e] : make_int2(-1, -1);
    struct lcn_pt a = {0, 0}, b = {0, 0};
    if (e < m) {
        a = P(pts[me.x]);
        b = P(pts[me.y]);
    }
    int k = 0;
    unsigned long long t = 0;
    for (int base = 0; base < m; base += blockDim.x) {
        int f = base + threadIdx.x;
        if (f < m) {
            int2 ff = edges[f];
            int2 pa = pts[ff.x], pb = pts[ff.y];
            seg[threadIdx.x] = make_int4(pa.x, pa.y, pb.x, pb.y);
            ids[threadIdx.x] = ff;
        }
        __syncthreads();
        int lim = min((int)blockDim.x, m - base);
        if (e < m) {
            for (int j = 0; j < lim; j++) {
                int2 ff = ids[j];
                if (ff.x == me.x || ff.x == me.y || ff.y == me.x || ff.y == me.y)
                    continue; /* includes f == e */
                int4 s = seg[j];
                struct lcn_pt c0 = {s.x, s.y}, c1 = {s.z, s.w};
                t++;
                k += geom_segments_meet(a, b, c0, c1);
            }
        }
        __syncthreads();
    }
    if (e < m)
        c[e] = k;
    add_tests(tests, t);
}

static int launch_full(struct gpu_ctx *ctx, struct gpu_slot *s, const int2 *pts, int m, int *c)
{
    if (m == 0)
        return 0;
    k_full<<<(m + EVAL_BLOCK - 1) / EVAL_BLOCK, EVAL_BLOCK, 0, s->stream>>>(s->edges, pts, m, c,
                                                                             s->tests);
    GPU_LAUNCHED(ctx);
    return 0;
}

int gpu_run_full(struct gpu_ctx *ctx, struct gpu_slot *s, int m, int n)
{
    (void)n;
    return launch_full(ctx, s, s->pts, m, s->counts);
}

/* ---- grid ---- */

struct grid_geo {
    long long ox, oy, cs;
    int gx, gy;
};

__device__ static inline void cell_range(const struct grid_geo g, int2 a, int2 b, int *cx0, int *cy0,
                                         int *cx1, int *cy1)
{
    long long x0 = min(a.x, b.x), x1 = max(a.x, b.x), y0 = min(a.y, b.y), y1 = max(a.y, b.y);
    *cx0 = (int)((x0 - g.ox) / g.cs);
    *cx1 = (int)((x1 - g.ox) / g.cs);
    *cy0 = (int)((y0 - g.oy) / g.cs);
    *cy1 = (int)((y1 - g.oy) / g.cs);
}

/* Edge e's cell range; 0 when it spans more than GRID_LONG_SPAN cells (a
 * long edge: the long list holds it, no cell does). */
__device__ static int edge_cells(const int2 *__restrict__ edges, const int2 *__restrict__ pts,
                                 struct grid_geo g, int e, int *cx0, int *cy0, int *cx1, int *cy1)
{
    int2 ee = edges[e];
    cell_range(g, pts[ee.x], pts[ee.y], cx0, cy0, cx1, cy1);
    long long span = (long long)(*cx1 - *cx0 + 1) * (*cy1 - *cy0 + 1);
    return span <= GRID_LONG_SPAN;
}

static __global__ void k_grid_count(const int2 *__restrict__ edges, const int2 *__restrict__ pts,
                                    int m, struct grid_geo g, int *cell_count, int *long_list,
                                    int *long_n)
{
    int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= m)
        return;
    int cx0, cy0, cx1, cy1;
    if (!edge_cells(edges, pts, g, e, &cx0, &cy0, &cx1, &cy1)) {
        long_list[atomicAdd(long_n, 1)] = e;
        return;
    }
    for (int cy = cy0; cy <= cy1; cy++)
        for (int cx = cx0; cx <= cx1; cx++)
            atomicAdd(&cell_count[cy * g.gx + cx], 1);
}

static __global__ void k_grid_fill(const int2 *__restrict__ edges, const int2 *__restrict__ pts,
                                   int m, struct grid_geo g, const int *cell_start, int *cursor,
                                   int *items)
{
    int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= m)
        return;
    int cx0, cy0, cx1, cy1;
    if (!edge_cells(edges, pts, g, e, &cx0, &cy0, &cx1, &cy1))
        return;
    for (int cy = cy0; cy <= cy1; cy++)
        for (int cx = cx0; cx <= cx1; cx++) {
            int cell = cy * g.gx + cx;
            items[cell_start[cell] + atomicAdd(&cursor[cell], 1)] = e;
        }
}

__device__ static inline int cross_pair(int2 me, struct lcn_pt a, struct lcn_pt b, int2 ff,
                                        const int2 *pts)
{
    if (ff.x == me.x || ff.x == me.y || ff.y == me.x || ff.y == me.y)
        return -1;
    return geom_segments_meet(a, b, P(pts[ff.x]), P(pts[ff.y]));
}

static __global__ void k_grid_cross(const int2 *__restrict__ edges, const int2 *__restrict__ pts,
                                    int m, struct grid_geo g, const int *cell_start,
                                    const int *cell_count, const int *items, const int *long_list,
                                    const int *long_n, int *c, unsigned long long *tests)
{
    int e = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long t = 0;
    if (e < m) {
        int2 me = edges[e];
        int2 pa = pts[me.x], pb = pts[me.y];
        struct lcn_pt a = P(pa), b = P(pb);
        int cx0, cy0, cx1, cy1;
        cell_range(g, pa, pb, &cx0, &cy0, &cx1, &cy1);
        long long span = (long long)(cx1 - cx0 + 1) * (cy1 - cy0 + 1);
        int k = 0;
        if (span > GRID_LONG_SPAN) {
            for (int f = 0; f < m; f++) {
                int r = cross_pair(me, a, b, edges[f], pts);
                if (r >= 0) {
                    t++;
                    k += r;
                }
            }
        } else {
            for (int cy = cy0; cy <= cy1; cy++)
                for (int cx = cx0; cx <= cx1; cx++) {
                    int cell = cy * g.gx + cx, s0 = cell_start[cell], s1 = s0 + cell_count[cell];
                    for (int i = s0; i < s1; i++) {
                        int f = items[i];
                        int2 ff = edges[f];
                        int fx0, fy0, fx1, fy1;
                        cell_range(g, pts[ff.x], pts[ff.y], &fx0, &fy0, &fx1, &fy1);
                        if (max(cx0, fx0) != cx || max(cy0, fy0) != cy)
                            continue; /* not this pair's canonical cell */
                        int r = cross_pair(me, a, b, ff, pts);
                        if (r >= 0) {
                            t++;
                            k += r;
                        }
                    }
                }
            int nl = *long_n;
            for (int i = 0; i < nl; i++) {
                int r = cross_pair(me, a, b, edges[long_list[i]], pts);
                if (r >= 0) {
                    t++;
                    k += r;
                }
            }
        }
        c[e] = k;
    }
    add_tests(tests, t);
}

static void grid_geometry(const struct lcn_graph *g, const struct lcn_pt *pts, struct grid_geo *geo)
{
    int64_t x0, y0, x1, y1;
    layout_bbox(pts, g->n, &x0, &y0, &x1, &y1);
    int per = (int)ceil(sqrt((double)g->m) / 1.5);
    per = per < 1 ? 1 : (per > 1024 ? 1024 : per);
    int64_t span = LCN_MAX(x1 - x0, y1 - y0) + 1;
    int64_t cs = (span + per - 1) / per;
    geo->ox = x0;
    geo->oy = y0;
    geo->cs = cs < 1 ? 1 : cs;
    geo->gx = (int)((x1 - x0) / geo->cs + 1);
    geo->gy = (int)((y1 - y0) / geo->cs + 1);
}

static int launch_grid(struct gpu_ctx *ctx, struct gpu_slot *s, const struct grid_geo *geo, int m,
                       int *c)
{
    if (m == 0)
        return 0;
    int cells = geo->gx * geo->gy, nb = (m + EVAL_BLOCK - 1) / EVAL_BLOCK;
    GPU_CHECK(ctx, cudaMemsetAsync(s->cell_count, 0, sizeof(int) * (size_t)cells, s->stream));
    GPU_CHECK(ctx, cudaMemsetAsync(s->long_n, 0, sizeof(int), s->stream));
    k_grid_count<<<nb, EVAL_BLOCK, 0, s->stream>>>(s->edges, s->pts, m, *geo, s->cell_count,
                                                   s->long_list, s->long_n);
    GPU_LAUNCHED(ctx);
    size_t tmp = s->scan_tmp_bytes;
    GPU_CHECK(ctx, cub::DeviceScan::ExclusiveSum(s->scan_tmp, tmp, s->cell_count, s->cell_start,
                                                 cells, s->stream));
    GPU_LAUNCHED(ctx);
    GPU_CHECK(ctx, cudaMemsetAsync(s->cell_count, 0, sizeof(int) * (size_t)cells, s->stream));
    k_grid_fill<<<nb, EVAL_BLOCK, 0, s->stream>>>(s->edges, s->pts, m, *geo, s->cell_start,
                                                  s->cell_count, s->cell_items);
    GPU_LAUNCHED(ctx);
    k_grid_cross<<<nb, EVAL_BLOCK, 0, s->stream>>>(s->edges, s->pts, m, *geo, s->cell_start,
                                                   s->cell_count, s->cell_items, s->long_list,
                                                   s->long_n, c, s->tests);
    GPU_LAUNCHED(ctx);
    return 0;
}

/* ---- delta (batch of W independent proposals) ---- */

static __global__ void k_delta(const int2 *__restrict__ edges, const int *__restrict__ inc_off,
                               const int *__restrict__ inc, const int2 *__restrict__ pts, int n,
                               int m, int width, int height, const int *__restrict__ base,
                               const int *__restrict__ vs, const int2 *__restrict__ qs, int *out,
                               int *valid, unsigned long long *tests)
{
    __shared__ int s_e[SOL_DMAX], s_u[SOL_DMAX], s_nc[SOL_DMAX];
    __shared__ int2 s_pu[SOL_DMAX];
    __shared__ int s_bad;
    const int i = blockIdx.x, v = vs[i];
    const int2 qi = qs[i];
    const struct lcn_pt q = P(qi), p = P(pts[v]);
    const int d = inc_off[v + 1] - inc_off[v];
    for (int k = threadIdx.x; k < d; k += blockDim.x) {
        int e = inc[inc_off[v] + k];
        int2 ee = edges[e];
        int u = ee.x == v ? ee.y : ee.x;
        s_e[k] = e;
        s_u[k] = u;
        s_pu[k] = pts[u];
        s_nc[k] = 0;
    }
    if (threadIdx.x == 0)
        s_bad = (q.x < 0 || q.y < 0 || q.x > width || q.y > height);
    __syncthreads();
    unsigned long long t = 0;
    int *row = out + (size_t)i * m;
    for (int f = threadIdx.x; f < m; f += blockDim.x) {
        int2 ff = edges[f];
        if (ff.x == v || ff.y == v)
            continue;
        struct lcn_pt a = P(pts[ff.x]), b = P(pts[ff.y]);
        if (geom_on_interior(a, b, q))
            s_bad = 1;
        int delta = 0;
        for (int k = 0; k < d; k++) {
            int u = s_u[k];
            if (ff.x == u || ff.y == u)
                continue;
            struct lcn_pt pu = P(s_pu[k]);
            t += 2;
            delta -= geom_segments_meet(p, pu, a, b);
            if (geom_segments_meet(q, pu, a, b)) {
                delta++;
                atomicAdd(&s_nc[k], 1);
            }
        }
        row[f] = base[f] + delta;
    }
    for (int w = threadIdx.x; w < n; w += blockDim.x) {
        if (w == v)
            continue;
        struct lcn_pt pw = P(pts[w]);
        if (geom_pt_eq(pw, q)) {
            s_bad = 1;
            continue;
        }
        for (int k = 0; k < d; k++)
            if (w != s_u[k] && geom_on_interior(q, P(s_pu[k]), pw))
                s_bad = 1;
    }
    __syncthreads();
    for (int k = threadIdx.x; k < d; k += blockDim.x)
        row[s_e[k]] = s_nc[k];
    if (threadIdx.x == 0)
        valid[i] = !s_bad;
    add_tests(tests, t);
}

static int launch_delta(struct gpu_ctx *ctx, struct gpu_slot *s, const struct lcn_graph *g, int W)
{
    k_delta<<<W, EVAL_BLOCK, 0, s->stream>>>(s->edges, s->inc_off, s->inc, s->pts, g->n, g->m,
                                              g->width, g->height, s->counts, s->v, s->q, s->out,
                                              s->valid, s->tests);
    GPU_LAUNCHED(ctx);
    return 0;
}

/* ---- adapters ---- */

size_t gpu_scan_bytes(int cells)
{
    size_t bytes = 0;
    cub::DeviceScan::ExclusiveSum(NULL, bytes, (const int *)NULL, (int *)NULL, cells);
    return bytes;
}

static int check_inputs(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g)
{
    if (!ctx->healthy)
        return LCN_EGPU_STICKY;
    if (slot < 0 || slot >= ctx->cfg.slots)
        return LCN_EINVAL;
    if (g->n > ctx->cfg.max_nodes || g->m > ctx->cfg.max_edges || g->max_degree > SOL_DMAX)
        return LCN_ETOOBIG;
    GPU_CHECK(ctx, cudaSetDevice(ctx->cfg.device));
    return 0;
}

static int upload_layout(struct gpu_ctx *ctx, struct gpu_slot *s, const struct lcn_graph *g,
                         const struct lcn_pt *pts)
{
    int rc = gpu_upload_graph(ctx, s, g);
    if (!rc)
        rc = gpu_h2d(ctx, s, s->pts, pts, sizeof(int2) * (size_t)g->n);
    return rc;
}

static int sync_tests(struct gpu_ctx *ctx, struct gpu_slot *s, uint64_t *pair_tests)
{
    unsigned long long t = 0;
    int rc = gpu_d2h(ctx, s, &t, s->tests, sizeof(t));
    if (rc)
        return rc;
    GPU_CHECK(ctx, cudaStreamSynchronize(s->stream));
    if (pair_tests)
        *pair_tests = t;
    return 0;
}

extern "C" int gpu_eval_counts(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g,
                               const struct lcn_pt *pts, const char *kind, int32_t *c,
                               uint64_t *pair_tests)
{
    int rc = check_inputs(ctx, slot, g);
    if (rc)
        return rc;
    struct gpu_slot *s = &ctx->slots[slot];
    int grid = strcmp(kind, "grid") == 0;
    if (!grid && strcmp(kind, "full") != 0)
        return LCN_EINVAL;
    if ((rc = upload_layout(ctx, s, g, pts)))
        return rc;
    GPU_CHECK(ctx, cudaMemsetAsync(s->tests, 0, sizeof(unsigned long long), s->stream));
    if (grid) {
        struct grid_geo geo;
        grid_geometry(g, pts, &geo);
        rc = launch_grid(ctx, s, &geo, g->m, s->counts);
    } else {
        rc = launch_full(ctx, s, s->pts, g->m, s->counts);
    }
    if (!rc)
        rc = gpu_d2h(ctx, s, c, s->counts, sizeof(int) * (size_t)g->m);
    if (!rc)
        rc = sync_tests(ctx, s, pair_tests);
    return rc;
}

static int upload_proposals(struct gpu_ctx *ctx, struct gpu_slot *s, int32_t W, const int32_t *v,
                            const struct lcn_pt *q, const struct lcn_graph *g)
{
    if (W < 1 || W > SOL_WMAX)
        return LCN_EINVAL;
    for (int32_t i = 0; i < W; i++)
        if (v[i] < 0 || v[i] >= g->n)
            return LCN_EINVAL;
    int rc = gpu_h2d(ctx, s, s->v, v, sizeof(int) * (size_t)W);
    if (!rc)
        rc = gpu_h2d(ctx, s, s->q, q, sizeof(int2) * (size_t)W);
    return rc;
}

extern "C" int gpu_eval_delta(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g,
                              const struct lcn_pt *pts, int32_t W, const int32_t *v,
                              const struct lcn_pt *q, int32_t *out, uint8_t *valid,
                              uint64_t *pair_tests)
{
    int rc = check_inputs(ctx, slot, g);
    if (rc)
        return rc;
    struct gpu_slot *s = &ctx->slots[slot];
    if ((rc = upload_layout(ctx, s, g, pts)) || (rc = upload_proposals(ctx, s, W, v, q, g)))
        return rc;
    rc = launch_full(ctx, s, s->pts, g->m, s->counts);
    GPU_CHECK(ctx, cudaMemsetAsync(s->tests, 0, sizeof(unsigned long long), s->stream));
    if (!rc)
        rc = launch_delta(ctx, s, g, W);
    int *vf = (int *)xmalloc(sizeof(int) * (size_t)W);
    if (!rc)
        rc = gpu_d2h(ctx, s, out, s->out, sizeof(int) * (size_t)W * (size_t)g->m);
    if (!rc)
        rc = gpu_d2h(ctx, s, vf, s->valid, sizeof(int) * (size_t)W);
    if (!rc)
        rc = sync_tests(ctx, s, pair_tests);
    if (!rc)
        for (int32_t i = 0; i < W; i++)
            valid[i] = (uint8_t)(vf[i] != 0);
    free(vf);
    return rc;
}

extern "C" int gpu_bench_kernel(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g,
                                const struct lcn_pt *pts, const char *kind, int32_t W,
                                const int32_t *v, const struct lcn_pt *q, int warmup, int batches,
                                int launches, float *ms)
{
    int rc = check_inputs(ctx, slot, g);
    if (rc)
        return rc;
    struct gpu_slot *s = &ctx->slots[slot];
    int which = strcmp(kind, "full") == 0 ? 0 : strcmp(kind, "grid") == 0 ? 1 : strcmp(kind, "delta") == 0 ? 2 : -1;
    if (which < 0 || batches < 1 || launches < 1 || warmup < 0)
        return LCN_EINVAL;
    if ((rc = upload_layout(ctx, s, g, pts)))
        return rc;
    if (which == 2 && ((rc = upload_proposals(ctx, s, W, v, q, g)) ||
                       (rc = launch_full(ctx, s, s->pts, g->m, s->counts))))
        return rc;
    struct grid_geo geo;
    grid_geometry(g, pts, &geo);
    for (int b = -1; b < batches && !rc; b++) {
        int count = b < 0 ? warmup : launches;
        if (b >= 0)
            GPU_CHECK(ctx, cudaEventRecord(s->ev0, s->stream));
        for (int i = 0; i < count && !rc; i++) {
            if (which == 0)
                rc = launch_full(ctx, s, s->pts, g->m, s->counts);
            else if (which == 1)
                rc = launch_grid(ctx, s, &geo, g->m, s->counts);
            else
                rc = launch_delta(ctx, s, g, W);
        }
        if (b >= 0 && !rc) {
            GPU_CHECK(ctx, cudaEventRecord(s->ev1, s->stream));
            GPU_CHECK(ctx, cudaEventSynchronize(s->ev1));
            float t = 0;
            GPU_CHECK(ctx, cudaEventElapsedTime(&t, s->ev0, s->ev1));
            ms[b] = t / (float)launches;
        }
    }
    if (!rc)
        GPU_CHECK(ctx, cudaStreamSynchronize(s->stream));
    return rc;
}
