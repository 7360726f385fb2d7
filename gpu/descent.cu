/*
 * descent.cu - the crossing-surrogate descent on the device (issue 15).
 *
 * The model, the schedule and the arithmetic are the CPU version's
 * (common/layout_descent.c, common/descent_core.h): Adam on the sum over
 * edge pairs of sig(-a1 a2 / tau^2) sig(-b1 b2 / tau^2) plus a spacing
 * term, tau annealed from half to a fiftieth of the mean edge length, the
 * drawing with the fewest crossings once rounded kept. What the device
 * changes is the cost of a pass: every pair of an iteration at once, so a
 * dense graph (instance_06: 2.8 M pairs a pass, 16-120 passes in seconds on
 * the host) gets a thousand passes in a fraction of a second.
 *
 * An iteration is six launches on the slot's stream, no host round trip:
 *   k_desc_boxes   the edges' boxes widened by tau/2 (the pairs visited are
 *                  those whose boxes meet, as the CPU's sweep visits);
 *   k_desc_rows    a block per edge i: its threads take the edges j != i in
 *                  strides, add the pair term's gradient with respect to
 *                  i's endpoints and i's rounded crossings, then sum per
 *                  block in a fixed tree (each pair is seen from both rows:
 *                  twice the arithmetic, no atomics, a fixed order);
 *   k_desc_spacing a block per node, likewise over the other nodes;
 *   k_desc_best    one block: the rounded drawing's total and max, the
 *                  drawing copied when it beats the best (total, then max);
 *   k_desc_grad    per coordinate: the spacing gradient plus the incident
 *                  edges' row gradients in adjacency order;
 *   k_desc_adam    per coordinate: descent_core.h's Adam step.
 * The same inputs give the same drawing, bit for bit, on every run.
 *
 * Memory: the slot's proposal scratch (`out`, SOL_WMAX x max_edges ints),
 * idle during the start phase, holds the descent's arrays.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.cuh"

extern "C" {
#include "descent_core.h"
#include "layout.h"
#include "stop.h"
#include "util.h"
}

#define DESC_BLOCK 128
#define DESC_SYNC_EVERY 16 /* iterations between the host's stop checks */

/* The descent's arrays, carved from the slot's scratch. */
struct desc_bufs {
    double *xy, *best, *m1, *m2, *grad, *sg; /* 2n each */
    double *sv;                              /* n: spacing value per node row */
    double *box, *eg;                        /* 4m each: widened boxes, row gradients */
    double *ev;                              /* m: pair-term value per edge row */
    int *c;                                  /* m: rounded crossings per edge */
    long long *key;                          /* best total, best max; value of the last pass */
    double *value;
};

static size_t desc_bytes(int n, int m)
{
    return sizeof(double) * (12 * (size_t)n + (size_t)n + 9 * (size_t)m + 1) + sizeof(int) * (size_t)m +
           sizeof(long long) * 2 + 64;
}

static void desc_carve(struct gpu_slot *s, int n, int m, struct desc_bufs *b)
{
    double *d = (double *)s->out;
    b->xy = d;
    b->best = d + 2 * (size_t)n;
    b->m1 = d + 4 * (size_t)n;
    b->m2 = d + 6 * (size_t)n;
    b->grad = d + 8 * (size_t)n;
    b->sg = d + 10 * (size_t)n;
    b->sv = d + 12 * (size_t)n;
    b->box = d + 13 * (size_t)n;
    b->eg = b->box + 4 * (size_t)m;
    b->ev = b->eg + 4 * (size_t)m;
    b->value = b->ev + m;
    b->key = (long long *)(b->value + 1);
    b->c = (int *)(b->key + 2);
}

/* Sums v over the block into a fixed tree (DESC_BLOCK threads); every thread gets the sum. */
__device__ static double block_sum(double v, double *sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int o = DESC_BLOCK / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o)
            sh[threadIdx.x] += sh[threadIdx.x + o];
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

static __global__ void k_desc_boxes(const double *__restrict__ xy, const int2 *__restrict__ edges,
                                    int m, double h, double *box)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m)
        return;
    int2 e = edges[i];
    const double *p = &xy[2 * e.x], *q = &xy[2 * e.y];
    double *b = &box[4 * i];
    b[0] = fmin(p[0], q[0]) - h;
    b[1] = fmax(p[0], q[0]) + h;
    b[2] = fmin(p[1], q[1]) - h;
    b[3] = fmax(p[1], q[1]) + h;
}

static __global__ void __launch_bounds__(DESC_BLOCK)
    k_desc_rows(const double *__restrict__ xy, const int2 *__restrict__ edges,
                const double *__restrict__ box, int m, double tau2, double *eg, double *ev, int *c)
{
    __shared__ double sh[DESC_BLOCK];
    const int i = blockIdx.x;
    const int2 ei = edges[i];
    const double p1[2] = {xy[2 * ei.x], xy[2 * ei.x + 1]}, p2[2] = {xy[2 * ei.y], xy[2 * ei.y + 1]};
    const double bi[4] = {box[4 * i], box[4 * i + 1], box[4 * i + 2], box[4 * i + 3]};
    double g1[2] = {0, 0}, g2[2] = {0, 0}, e = 0, cnt = 0;
    for (int j = threadIdx.x; j < m; j += DESC_BLOCK) {
        if (j == i || !desc_boxes_meet(bi, &box[4 * j]))
            continue;
        int2 ej = edges[j];
        if (ej.x == ei.x || ej.x == ei.y || ej.y == ei.x || ej.y == ei.y)
            continue;
        const double q1[2] = {xy[2 * ej.x], xy[2 * ej.x + 1]}, q2[2] = {xy[2 * ej.y], xy[2 * ej.y + 1]};
        double d1[2] = {0, 0}, d2[2] = {0, 0}; /* j's side: its own row adds it */
        cnt += desc_meets_rounded(p1, p2, q1, q2);
        e += desc_pair(p1, p2, q1, q2, tau2, g1, g2, d1, d2);
    }
    g1[0] = block_sum(g1[0], sh);
    g1[1] = block_sum(g1[1], sh);
    g2[0] = block_sum(g2[0], sh);
    g2[1] = block_sum(g2[1], sh);
    e = block_sum(e, sh);
    cnt = block_sum(cnt, sh);
    if (threadIdx.x == 0) {
        eg[4 * i] = g1[0];
        eg[4 * i + 1] = g1[1];
        eg[4 * i + 2] = g2[0];
        eg[4 * i + 3] = g2[1];
        ev[i] = e;
        c[i] = (int)cnt;
    }
}

static __global__ void __launch_bounds__(DESC_BLOCK)
    k_desc_spacing(const double *__restrict__ xy, int n, double r0, double *sg, double *sv)
{
    __shared__ double sh[DESC_BLOCK];
    const int i = blockIdx.x;
    const double p[2] = {xy[2 * i], xy[2 * i + 1]};
    double gx = 0, gy = 0, e = 0;
    for (int j = threadIdx.x; j < n; j += DESC_BLOCK) {
        if (j == i || fabs(xy[2 * j] - p[0]) >= r0)
            continue;
        double gp[2];
        e += desc_spacing(p, &xy[2 * j], i, j, r0, gp);
        gx += gp[0];
        gy += gp[1];
    }
    gx = block_sum(gx, sh);
    gy = block_sum(gy, sh);
    e = block_sum(e, sh);
    if (threadIdx.x == 0) {
        sg[2 * i] = gx;
        sg[2 * i + 1] = gy;
        sv[i] = e;
    }
}

/* One block: the pass's total (each crossing is in two rows) and max, its
 * surrogate value (each pair and node pair is in two rows), and the best
 * drawing kept. */
static __global__ void __launch_bounds__(DESC_BLOCK)
    k_desc_best(const int *__restrict__ c, const double *__restrict__ ev,
                const double *__restrict__ sv, int m, int n, const double *__restrict__ xy,
                double *best, long long *key, double *value)
{
    __shared__ double sh[DESC_BLOCK];
    __shared__ int better;
    double t = 0, v = 0;
    int k = 0;
    for (int i = threadIdx.x; i < m; i += DESC_BLOCK) {
        t += c[i];
        k = max(k, c[i]);
        v += ev[i];
    }
    for (int i = threadIdx.x; i < n; i += DESC_BLOCK)
        v += sv[i];
    t = block_sum(t, sh);
    v = block_sum(v, sh);
    sh[threadIdx.x] = k;
    __syncthreads();
    for (int o = DESC_BLOCK / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o)
            sh[threadIdx.x] = fmax(sh[threadIdx.x], sh[threadIdx.x + o]);
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        long long tot = (long long)t / 2, kmax = (long long)sh[0];
        better = tot < key[0] || (tot == key[0] && kmax < key[1]);
        if (better) {
            key[0] = tot;
            key[1] = kmax;
        }
        *value = v / 2;
    }
    __syncthreads();
    if (better)
        for (int i = threadIdx.x; i < 2 * n; i += DESC_BLOCK)
            best[i] = xy[i];
}

static __global__ void k_desc_grad(const double *__restrict__ eg, const double *__restrict__ sg,
                                   const int *__restrict__ inc_off, const int *__restrict__ inc,
                                   const int2 *__restrict__ edges, int n, double *grad)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 2 * n)
        return;
    int v = i >> 1, axis = i & 1;
    double g = sg[i];
    for (int k = inc_off[v]; k < inc_off[v + 1]; k++) {
        int e = inc[k];
        g += eg[4 * e + (edges[e].x == v ? 0 : 2) + axis];
    }
    grad[i] = g;
}

static __global__ void k_desc_adam(double *xy, const double *__restrict__ grad, double *m1,
                                   double *m2, int n, double b1t, double b2t, double lr,
                                   double clip, double W, double H)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 2 * n)
        return;
    xy[i] = desc_adam(xy[i], grad[i], &m1[i], &m2[i], b1t, b2t, lr, clip, (i & 1) ? H : W);
}

static int desc_check(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g)
{
    if (!ctx->healthy)
        return LCN_EGPU_STICKY;
    if (slot < 0 || slot >= ctx->cfg.slots)
        return LCN_EINVAL;
    if (g->n > ctx->cfg.max_nodes || g->m > ctx->cfg.max_edges ||
        desc_bytes(g->n, g->m) > sizeof(int) * (size_t)SOL_WMAX * (size_t)ctx->cfg.max_edges)
        return LCN_ETOOBIG;
    return 0;
}

/* One pass at xy: boxes, rows, spacing, then the best and the gradient. */
static int desc_pass(struct gpu_ctx *ctx, struct gpu_slot *s, const struct lcn_graph *g,
                     const struct desc_bufs *b, double tau, double r0)
{
    int n = g->n, m = g->m;
    const int2 *edges = s->edges;
    k_desc_boxes<<<(m + 255) / 256, 256, 0, s->stream>>>(b->xy, edges, m, tau / 2, b->box);
    GPU_LAUNCHED(ctx);
    k_desc_rows<<<m, DESC_BLOCK, 0, s->stream>>>(b->xy, edges, b->box, m, tau * tau, b->eg, b->ev, b->c);
    GPU_LAUNCHED(ctx);
    k_desc_spacing<<<n, DESC_BLOCK, 0, s->stream>>>(b->xy, n, r0, b->sg, b->sv);
    GPU_LAUNCHED(ctx);
    k_desc_best<<<1, DESC_BLOCK, 0, s->stream>>>(b->c, b->ev, b->sv, m, n, b->xy, b->best, b->key,
                                                 b->value);
    GPU_LAUNCHED(ctx);
    k_desc_grad<<<(2 * n + 255) / 256, 256, 0, s->stream>>>(b->eg, b->sg, s->inc_off, s->inc, edges,
                                                            n, b->grad);
    GPU_LAUNCHED(ctx);
    return 0;
}

static int desc_sync(struct gpu_ctx *ctx, struct gpu_slot *s)
{
    cudaError_t e = cudaStreamSynchronize(s->stream);
    return e == cudaSuccess ? 0 : gpu_check_fail(ctx, e, "descent", __FILE__, __LINE__);
}

/* Uploads the graph and xy, resets the moments and the best key. */
static int desc_begin(struct gpu_ctx *ctx, struct gpu_slot *s, const struct lcn_graph *g,
                      const double *xy, struct desc_bufs *b)
{
    desc_carve(s, g->n, g->m, b);
    int rc = gpu_upload_graph(ctx, s, g);
    long long key0[2] = {LLONG_MAX, LLONG_MAX};
    if (!rc)
        rc = gpu_h2d(ctx, s, b->xy, xy, sizeof(double) * 2 * (size_t)g->n);
    if (!rc)
        rc = gpu_h2d(ctx, s, b->best, xy, sizeof(double) * 2 * (size_t)g->n);
    if (!rc)
        rc = gpu_h2d(ctx, s, b->key, key0, sizeof(key0));
    if (!rc)
        GPU_CHECK(ctx, cudaMemsetAsync(b->m1, 0, sizeof(double) * 4 * (size_t)g->n, s->stream));
    return rc;
}

extern "C" int gpu_descent_energy(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g,
                                  const double *xy, double tau, double r0, double *grad, int32_t *c,
                                  double *value)
{
    int rc = desc_check(ctx, slot, g);
    if (rc || g->n < 1 || g->m < 1)
        return rc ? rc : LCN_EINVAL;
    struct gpu_slot *s = &ctx->slots[slot];
    GPU_CHECK(ctx, cudaSetDevice(ctx->cfg.device));
    struct desc_bufs b;
    if ((rc = desc_begin(ctx, s, g, xy, &b)) || (rc = desc_pass(ctx, s, g, &b, tau, r0)))
        return rc;
    rc = gpu_d2h(ctx, s, grad, b.grad, sizeof(double) * 2 * (size_t)g->n);
    if (!rc)
        rc = gpu_d2h(ctx, s, c, b.c, sizeof(int32_t) * (size_t)g->m);
    if (!rc)
        rc = gpu_d2h(ctx, s, value, b.value, sizeof(double));
    return rc ? rc : desc_sync(ctx, s);
}

extern "C" int gpu_layout_descent(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g,
                                  int32_t iters, const struct lcn_stop *stop, double *xy,
                                  int64_t *crossings, int32_t *done)
{
    if (crossings)
        *crossings = -1;
    if (done)
        *done = 0;
    int rc = desc_check(ctx, slot, g);
    if (rc)
        return rc;
    int n = g->n, m = g->m;
    if (n < 2 || m < 2)
        return 0;
    if (iters <= 0) {
        /* the pairs a pass visits are at most m^2 / 2 */
        double per = 0.5 * (double)m * (double)m;
        iters = (int32_t)LCN_MAX(16.0, LCN_MIN((double)GPU_DESC_ITERS, (double)GPU_DESC_PAIRS / per));
    }
    double tau0, tau1, r0;
    layout_descent_scales(g, xy, &tau0, &tau1, &r0);
    struct gpu_slot *s = &ctx->slots[slot];
    GPU_CHECK(ctx, cudaSetDevice(ctx->cfg.device));
    struct desc_bufs b;
    if ((rc = desc_begin(ctx, s, g, xy, &b)))
        return rc;
    double b1t = 1, b2t = 1;
    int64_t t0 = lcn_now_ns();
    int32_t it = 0;
    for (; it < iters; it++) {
        double frac = iters > 1 ? (double)it / (iters - 1) : 1.0;
        double tau = tau0 * pow(tau1 / tau0, frac);
        if ((rc = desc_pass(ctx, s, g, &b, tau, r0)))
            return rc;
        if (it == 0 || (it + 1) % DESC_SYNC_EVERY == 0) {
            if ((rc = desc_sync(ctx, s)))
                return rc;
            if (lcn_stop_check(stop)) {
                it++;
                break;
            }
        }
        if (it == 0)
            iters = layout_descent_fit(iters, t0, stop);
        if (it + 1 >= iters)
            continue; /* the last pass only counts */
        b1t *= 0.9;
        b2t *= 0.99;
        k_desc_adam<<<(2 * n + 255) / 256, 256, 0, s->stream>>>(b.xy, b.grad, b.m1, b.m2, n, b1t, b2t,
                                                              DESC_ETA * tau, DESC_CLIP * tau,
                                                              (double)g->width, (double)g->height);
        GPU_LAUNCHED(ctx);
    }
    long long key[2];
    rc = gpu_d2h(ctx, s, xy, b.best, sizeof(double) * 2 * (size_t)n);
    if (!rc)
        rc = gpu_d2h(ctx, s, key, b.key, sizeof(key));
    if (!rc)
        rc = desc_sync(ctx, s);
    if (rc)
        return rc;
    if (crossings)
        *crossings = key[0] == LLONG_MAX ? -1 : key[0];
    if (done)
        *done = it;
    return 0;
}
