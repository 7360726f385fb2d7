/*
 * solver.cu - the device-resident solver: parallel tempering over private
 * replicas, one thread block per replica.
 *
 * A launch of k_steps runs S steps of every replica. A step (solver_core.h
 * holds its arithmetic, solver_ref.c its CPU twin):
 *   1. the node v: a tournament over random edges (the block draws them
 *      in parallel and reduces to the highest count) or a uniform node;
 *   2. the block loads v's incident edges and their far endpoints, and
 *      threads 0..W-1 make the W candidate points (proposal workers) from
 *      draws taken in the tournament's phase;
 *   3. for each group of candidates, the block scans the edges in chunks of
 *      `lcap` (every edge when the shared memory allows, else 256-4096 per
 *      chunk), keeps those whose box meets the union box of v's old and new
 *      incident segments (every edge that can change its count is kept),
 *      takes per kept edge the star masks (sol_star_masks: on which side of
 *      the edge's line each far end lies, shared by every position of v) and
 *      the old position's crossings, then spreads (candidate, kept edge)
 *      pairs over the threads: the crossings of each new incident segment
 *      left undecided by the masks (sol_star_meets), the per-edge count
 *      change, and the energy change accumulated in shared memory; a node
 *      scan checks V2/V3 for the candidates. With evaluator=index the kept
 *      edges come instead from the replica's edge grid (ix_*: a subset of
 *      the scan's that holds every edge the move can change, so the same
 *      step follows). Orientations are 32-bit
 *      (k_steps<1>) when every coordinate is at most GEOM_SMALL;
 *   4. warp 0 takes the valid candidate of lowest energy change (ties:
 *      lowest index) and thread 0 applies the Metropolis test at the
 *      replica's temperature;
 *   5. an accepted move is committed by the block: coordinates, per-edge
 *      counts, histogram and tuple of one generation, separated from the
 *      next evaluation by barriers (from the scan's kept edges and the
 *      winner's crossings when they fit, `keep`, else by a second scan); a
 *      strict improvement of the replica's best tuple copies the layout to
 *      its best buffer.
 * Between launches three small kernels reduce the best record, recompute
 * energies (re-referencing the energy table at the best K) and exchange
 * temperature labels within each ladder. Only the record (a few hundred
 * bytes) crosses to the host per batch; the host fetches a best layout only
 * to publish it, after the batch, and revalidates it with the CPU oracle.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.cuh"

extern "C" {
#include "crossings.h"
#include "edge_index.h"
#include "layout.h"
#include "repair.h"
#include "solver_ref.h"
#include "stop.h"
#include "util.h"
#include "validate.h"
}

#define LCAP_MAX 4096 /* largest edge chunk per scan phase */
#define LCAP_MAX_GL 8192 /* the same with the layout in global memory (large graphs) */
#define LCAP_MIN 256
#define LCAP_PREFER_BYTES (54 * 1024)
#define SOL_LMAX 64 /* longest ladder */

/*
 * The replicas' edge grids (issue 17, edge_index.h), in global memory: per
 * replica ncell + 1 cell starts, ncell build counts, icap entries, the long
 * list, the dirty list and a query's kept edges (m each), and IX_STATE ints
 * that carry a grid from one launch to the next (ix_resume). Built by the
 * block when more than dthr edges moved since the last build, and at a
 * launch's start when something else moved the replica's layout (a
 * scanning launch, a restart or import, the job's start). nodes_ok: no node
 * without edges, so V2/V3 need only the kept edges' ends and v's neighbours
 * (ix_nodes), not every node.
 */
struct sol_eix {
    int *start, *fill, *items, *lng, *dirty, *hl, *state;
    struct eix_geom g;
    int ncell, icap, dthr, nodes_ok;
};

#define IX_SEGMAX 1024 /* most (centre, far end) segments of one query; more: the scan */
/* a replica's grid state between launches: built (0: stale, rebuild), ndirty, nlong, ixok */
#define IX_STATE 4

struct sol_dev {
    const int2 *edges;
    const int *inc_off, *inc;
    int2 *cur, *best;
    int *cnt, *hist, *bcnt;
    struct sol_replica *rep;
    const int64_t *wtab;
    const double *ltab, *temps;
    struct gpu_record *rec;
    int R, L;
    struct sol_eix ix;
};

struct sh_step {
    long long best_dE, dphi, dsum;
    unsigned long long tests;
    int H, best_c, accept, nmax, improved;
    int wop;      /* the accepted winner's operator (SOL_OP_*) */
    int need_med; /* a candidate of this step goes near the neighbours' median */
    int med[2];   /* that median (sol_median_rank) */
    unsigned int tkey;
    int bx0, by0, bx1, by1; /* the scanning commit's box */
    int ib[4];              /* box of v and its neighbours: x0, y0, x1, y1 */
    long long bsum[2];      /* sum of v's neighbours' coordinates */
    struct sol_replica rep;
    int tour_e[SOL_TMAX];   /* the tournament's edges by draw */
    /* the edge grid: long and dirty list lengths, the build fitted icap
     * (else the scan until the next build) */
    int nlong, ndirty, ixok;
    int wsum[33]; /* block_scan: per-warp sums, [32] the total */
};

__device__ static inline struct lcn_pt P(int2 v)
{
    struct lcn_pt p;
    p.x = v.x;
    p.y = v.y;
    return p;
}

__device__ static inline int box_meets(int bx0, int by0, int bx1, int by1, int2 a, int2 b)
{
    int x0 = min(a.x, b.x), x1 = max(a.x, b.x), y0 = min(a.y, b.y), y1 = max(a.y, b.y);
    return !(x1 < bx0 || x0 > bx1 || y1 < by0 || y0 > by1);
}

/* Shared memory carve-up; the host computes the same size with smem_bytes. */
struct carve {
    struct lcn_u32x4 *cdraw; /* the candidates' draws, 2 W (sol_candidate_draw) */
    int4 *gbox; /* per candidate group: box of its candidates (x0, y0, x1, y1) */
    long long *cdE;
    unsigned long long *hpos, *hneg; /* star masks per (kept edge, 64-segment chunk) */
    int2 *sc, *cand;
    struct lcn_pt *inc_p;
    int *inc_e, *inc_u, *ncom, *cbad, *cntc, *hits, *hoc;
    unsigned short *hnc; /* keep: new crossings per (candidate, kept edge), G x lcap */
    /* the edge grid's query (ix): edges seen (m bits), edges dirty (m bits),
     * the query's segments' first columns (IX_SEGMAX + 1) */
    unsigned *seen, *dflag;
    int *segpre;
};

#define NCH(dmax) (((dmax) + 63) / 64)

#define MWORDS(m) (((m) + 31) / 32)

/* keep's shorts rounded up to a whole int, so the grid's words stay aligned */
#define HNC_INTS(G, lcap) (((size_t)(G) * (lcap) + 1) / 2)

__host__ __device__ static inline size_t smem_bytes(int n, int m, int W, int G, int dmax, int lcap,
                                                   int keep, int ix)
{
    return sizeof(struct lcn_u32x4) * 2 * (size_t)W + sizeof(int4) * (size_t)((W + G - 1) / G) +
           sizeof(long long) * ((size_t)W + 2 * (size_t)lcap * NCH(dmax)) +
           sizeof(int2) * ((size_t)n + dmax + W) +
           sizeof(int) * (3 * (size_t)dmax + (size_t)W + (size_t)G * dmax + 2 * (size_t)lcap) +
           (keep ? sizeof(int) * HNC_INTS(G, lcap) : 0) +
           (ix ? sizeof(int) * (2 * (size_t)MWORDS(m) + IX_SEGMAX + 1) : 0);
}

__device__ static inline struct carve carve_smem(unsigned char *base, int n, int m, int W, int G,
                                                 int dmax, int lcap, int keep)
{
    struct carve c;
    c.cdraw = (struct lcn_u32x4 *)base;
    c.gbox = (int4 *)(c.cdraw + 2 * W);
    c.cdE = (long long *)(c.gbox + (W + G - 1) / G);
    c.hpos = (unsigned long long *)(c.cdE + W);
    c.hneg = c.hpos + (size_t)lcap * NCH(dmax);
    c.sc = (int2 *)(c.hneg + (size_t)lcap * NCH(dmax));
    c.inc_p = (struct lcn_pt *)(c.sc + n);
    c.cand = (int2 *)(c.inc_p + dmax);
    c.inc_e = (int *)(c.cand + W);
    c.inc_u = c.inc_e + dmax;
    c.ncom = c.inc_u + dmax;
    c.cbad = c.ncom + dmax;
    c.cntc = c.cbad + W;
    c.hits = c.cntc + (size_t)G * dmax;
    c.hoc = c.hits + lcap;
    c.hnc = (unsigned short *)(c.hoc + lcap);
    c.seen = (unsigned *)(c.hoc + lcap + (keep ? HNC_INTS(G, lcap) : 0));
    c.dflag = c.seen + MWORDS(m);
    c.segpre = (int *)(c.dflag + MWORDS(m));
    return c;
}

/*
 * Sums *val over the lanes of a warp that hold the same key, keys being
 * non-decreasing with the lane (contiguous runs). Every lane of the warp
 * must call it. Returns 1 on the first lane of each run, whose *val is then
 * the run's sum (integer: the same for any order).
 */
__device__ static inline int warp_sum_by_key(long long *val, int key)
{
    const int lane = threadIdx.x & 31;
    long long v = *val;
    for (int off = 1; off < 32; off <<= 1) {
        long long o = __shfl_down_sync(0xffffffffu, v, off);
        int ok = __shfl_down_sync(0xffffffffu, key, off);
        if (lane + off < 32 && ok == key)
            v += o;
    }
    *val = v;
    int prev = __shfl_up_sync(0xffffffffu, key, 1);
    return lane == 0 || prev != key;
}

/* Kept edges of chunk [base, lim): box-filtered, not incident to v. */
__device__ static inline void collect_hits(const struct sol_dev &dv, struct carve &c,
                                           struct sh_step &sh, int v, int base, int lim)
{
    for (int f = base + threadIdx.x; f < lim; f += blockDim.x) {
        int2 ee = dv.edges[f];
        if (ee.x == v || ee.y == v)
            continue;
        if (box_meets(sh.bx0, sh.by0, sh.bx1, sh.by1, c.sc[ee.x], c.sc[ee.y]))
            c.hits[atomicAdd(&sh.H, 1)] = f;
    }
}

/*
 * Exclusive prefix sums of a[0..n) in place (shared or global memory), the
 * total in sh.wsum[32]; every thread of the block calls it (blockDim a
 * multiple of 32). Starts with a barrier (each thread sums a contiguous run
 * that other threads wrote) and ends with one.
 */
__device__ static void block_scan(int *a, int n, struct sh_step &sh)
{
    const int B = blockDim.x, tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    const int per = (n + B - 1) / B, lo = min(n, tid * per), hi = min(n, lo + per);
    __syncthreads();
    int own = 0;
    for (int i = lo; i < hi; i++)
        own += a[i];
    int x = own;
    for (int off = 1; off < 32; off <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, x, off);
        if (lane >= off)
            x += y;
    }
    if (lane == 31)
        sh.wsum[w] = x;
    __syncthreads();
    if (w == 0) {
        const int nw = B >> 5;
        int t = lane < nw ? sh.wsum[lane] : 0;
        for (int off = 1; off < 32; off <<= 1) {
            const int y = __shfl_up_sync(0xffffffffu, t, off);
            if (lane >= off)
                t += y;
        }
        if (lane < nw)
            sh.wsum[lane] = t;
        if (lane == nw - 1)
            sh.wsum[32] = t;
    }
    __syncthreads();
    int base = (w ? sh.wsum[w - 1] : 0) + x - own;
    for (int i = lo; i < hi; i++) {
        const int v = a[i];
        a[i] = base;
        base += v;
    }
    __syncthreads();
}

/* Edge e's cells in the grid, each given to fn(cell). */
template <typename F>
__device__ __forceinline__ static void ix_cells(const struct eix_geom &g, struct lcn_pt a,
                                                struct lcn_pt b, F fn)
{
    eix_order(&a, &b);
    for (int64_t cx = a.x / g.cs; cx <= b.x / g.cs; cx++) {
        int64_t r0, r1;
        eix_rows(&g, a, b, cx, &r0, &r1);
        for (int64_t r = r0; r <= r1; r++)
            fn((int)(r * g.gx + cx));
    }
}

/*
 * The replica's edge grid from its layout in shared memory (edge_index.h's
 * eix_build, on the device): counts per cell, their prefix sums, then every
 * listed edge scattered; edges of more than cap cells to the long list. The
 * dirty list empties. When the entries exceed icap, sh.ixok is 0 and the
 * replica's steps scan until the next build. Starts and ends with a barrier
 * (the caller's threads may still read sh.ndirty before it).
 */
__device__ static void ix_build(const struct sol_dev &dv, struct carve &c, struct sh_step &sh,
                                int m)
{
    const struct sol_eix &x = dv.ix;
    const int r = blockIdx.x, tid = threadIdx.x, B = blockDim.x;
    int *fill = x.fill + (size_t)r * x.ncell, *st = x.start + (size_t)r * (x.ncell + 1);
    int *items = x.items + (size_t)r * x.icap, *lng = x.lng + (size_t)r * m;
    __syncthreads();
    for (int i = tid; i < x.ncell; i += B)
        fill[i] = 0;
    for (int i = tid; i < MWORDS(m); i += B)
        c.dflag[i] = 0;
    if (tid == 0)
        sh.nlong = sh.ndirty = 0;
    __syncthreads();
    for (int e = tid; e < m; e += B) {
        const int2 ee = dv.edges[e];
        const struct lcn_pt a = P(c.sc[ee.x]), b = P(c.sc[ee.y]);
        if (eix_seg_count(&x.g, a, b) > x.g.cap)
            lng[atomicAdd(&sh.nlong, 1)] = e;
        else
            ix_cells(x.g, a, b, [&](int cell) { atomicAdd(&fill[cell], 1); });
    }
    __syncthreads();
    for (int i = tid; i < x.ncell; i += B)
        st[i] = fill[i];
    block_scan(st, x.ncell, sh);
    if (tid == 0) {
        st[x.ncell] = sh.wsum[32];
        sh.ixok = sh.wsum[32] <= x.icap;
    }
    __syncthreads();
    if (sh.ixok)
        for (int e = tid; e < m; e += B) {
            const int2 ee = dv.edges[e];
            const struct lcn_pt a = P(c.sc[ee.x]), b = P(c.sc[ee.y]);
            if (eix_seg_count(&x.g, a, b) <= x.g.cap)
                ix_cells(x.g, a, b, [&](int cell) { items[st[cell] + atomicSub(&fill[cell], 1) - 1] = e; });
        }
    __syncthreads();
}

/*
 * A launch's grid: the one the replica's last launch left when it is not
 * stale (its counters, and the dirty bits from the dirty list), else a
 * build. Starts after the launch's first barrier; ends with a barrier.
 */
__device__ static void ix_resume(const struct sol_dev &dv, struct carve &c, struct sh_step &sh,
                                 int m)
{
    const int *st = dv.ix.state + (size_t)blockIdx.x * IX_STATE;
    if (!st[0]) { /* the same word for every thread: the previous launch wrote it */
        ix_build(dv, c, sh, m);
        return;
    }
    for (int i = threadIdx.x; i < MWORDS(m); i += blockDim.x)
        c.dflag[i] = 0;
    if (threadIdx.x == 0) {
        sh.ndirty = st[1];
        sh.nlong = st[2];
        sh.ixok = st[3];
    }
    __syncthreads();
    const int *dl = dv.ix.dirty + (size_t)blockIdx.x * m;
    for (int i = threadIdx.x; i < sh.ndirty; i += blockDim.x)
        atomicOr(&c.dflag[dl[i] >> 5], 1u << (dl[i] & 31));
    __syncthreads();
}

/* The launch's end (thread 0): the grid carried to the next launch, or,
 * after a scanning launch (nodes moved without the dirty list), stale. */
__device__ __forceinline__ static void ix_save(const struct sol_dev &dv, const struct sh_step &sh,
                                               int ix)
{
    if (!dv.ix.state)
        return;
    int *st = dv.ix.state + (size_t)blockIdx.x * IX_STATE;
    st[0] = ix;
    st[1] = sh.ndirty;
    st[2] = sh.nlong;
    st[3] = sh.ixok;
}

/* A committed move of v: its incident edges join the dirty list (once). */
__device__ __forceinline__ static void ix_mark(const struct sol_dev &dv, struct carve &c,
                                               struct sh_step &sh, int m, int d)
{
    int *dl = dv.ix.dirty + (size_t)blockIdx.x * m;
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
        const int e = c.inc_e[j];
        const unsigned bit = 1u << (e & 31);
        if (!(atomicOr(&c.dflag[e >> 5], bit) & bit))
            dl[atomicAdd(&sh.ndirty, 1)] = e;
    }
}

/* Segment s of a query, ordered: centre s / (d + 1) (0: v's point p, i > 0:
 * candidate g0 + i - 1) to far end s % (d + 1) (d: the centre itself). */
__device__ __forceinline__ static void ix_seg(const struct carve &c, int s, int d, int g0,
                                              struct lcn_pt p, struct lcn_pt *a, struct lcn_pt *b)
{
    const int i = s / (d + 1), k = s - i * (d + 1);
    *a = i ? P(c.cand[g0 + i - 1]) : p;
    *b = k < d ? c.inc_p[k] : *a;
    eix_order(a, b);
}

/* A query's first phase: the seen bits cleared, each segment's columns. */
__device__ __forceinline__ static void ix_cols(const struct sol_dev &dv, struct carve &c, int m,
                                               struct lcn_pt p, int d, int g0, int nseg)
{
    for (int i = threadIdx.x; i < MWORDS(m); i += blockDim.x)
        c.seen[i] = 0;
    for (int s = threadIdx.x; s < nseg; s += blockDim.x) {
        struct lcn_pt a, b;
        ix_seg(c, s, d, g0, p, &a, &b);
        c.segpre[s] = (int)(b.x / dv.ix.g.cs - a.x / dv.ix.g.cs + 1);
    }
}

/* The replica's list of a query's kept edges (global memory, m entries). */
__device__ __forceinline__ static int *ix_hl(const struct sol_dev &dv, int m)
{
    return dv.ix.hl + (size_t)blockIdx.x * m;
}

/* Edge f met by the query: kept once (so at most m in all), when not
 * incident to v and its box meets bx (the scan's filter), into the list. */
__device__ __forceinline__ static void ix_take(const struct sol_dev &dv, struct carve &c,
                                               struct sh_step &sh, int m, int v, int4 bx, int f)
{
    const unsigned bit = 1u << (f & 31);
    if (atomicOr(&c.seen[f >> 5], bit) & bit)
        return;
    const int2 ee = dv.edges[f];
    if (ee.x == v || ee.y == v || !box_meets(bx.x, bx.y, bx.z, bx.w, c.sc[ee.x], c.sc[ee.y]))
        return;
    ix_hl(dv, m)[atomicAdd(&sh.H, 1)] = f;
}

/* A query's walk, after the columns' prefix sums (ncol in all): a thread per
 * (segment, column), the listed edges of its cells, then the long and the
 * dirty lists; the kept edges' count is then sh.H. */
__device__ __forceinline__ static void ix_walk(const struct sol_dev &dv, struct carve &c,
                                               struct sh_step &sh, int m, int v, struct lcn_pt p,
                                               int d, int4 bx, int g0, int nseg, int ncol)
{
    const struct sol_eix &x = dv.ix;
    const int r = blockIdx.x;
    const int *st = x.start + (size_t)r * (x.ncell + 1), *items = x.items + (size_t)r * x.icap;
    for (int t = threadIdx.x; t < ncol; t += blockDim.x) {
        int lo = 0, hi = nseg - 1; /* the last segment starting at or before t */
        while (lo < hi) {
            const int mid = (lo + hi + 1) >> 1;
            if (c.segpre[mid] <= t)
                lo = mid;
            else
                hi = mid - 1;
        }
        struct lcn_pt a, b;
        ix_seg(c, lo, d, g0, p, &a, &b);
        const int64_t cx = a.x / x.g.cs + (t - c.segpre[lo]);
        int64_t r0, r1;
        eix_rows(&x.g, a, b, cx, &r0, &r1);
        for (int64_t row = r0; row <= r1; row++) {
            const int cell = (int)(row * x.g.gx + cx);
            for (int i = st[cell]; i < st[cell + 1]; i++)
                ix_take(dv, c, sh, m, v, bx, items[i]);
        }
    }
    const int *lng = x.lng + (size_t)r * m, *dl = x.dirty + (size_t)r * m;
    for (int i = threadIdx.x; i < sh.nlong; i += blockDim.x)
        ix_take(dv, c, sh, m, v, bx, lng[i]);
    for (int i = threadIdx.x; i < sh.ndirty; i += blockDim.x)
        ix_take(dv, c, sh, m, v, bx, dl[i]);
}

/* A query for segments [0, nseg) (ix_seg) kept in the box bx: the seen bits
 * and columns, their prefix sums, the walk. Starts after a barrier that
 * follows the last reads of the seen bits and of sh.H (0 on entry); ends
 * with one, the kept edges then in ix_hl, sh.H of them. */
__device__ __forceinline__ static void ix_query(const struct sol_dev &dv, struct carve &c,
                                                struct sh_step &sh, int m, int v, struct lcn_pt p,
                                                int d, int4 bx, int g0, int nseg)
{
    ix_cols(dv, c, m, p, d, g0, nseg);
    block_scan(c.segpre, nseg, sh);
    ix_walk(dv, c, sh, m, v, p, d, bx, g0, nseg, sh.wsum[32]);
    __syncthreads();
}

/*
 * Thread 0 after the last group's pick: the Metropolis test of the winner
 * and, for an accepted move, the commit box (v's old and new position and
 * its neighbours) of the scanning commit; a reusing commit (keep) has no
 * box to draw.
 */
__device__ static inline void accept_winner(const struct sol_params &sp, const struct sol_dev &dv,
                                            const struct carve &c, struct sh_step &sh,
                                            struct lcn_pt p, int d, uint64_t step, int r,
                                            double tscale, int keep)
{
    sh.rep.attempted += sp.W;
    sh.rep.evaluated += sp.W;
    sh.accept = 0;
    if (sh.best_c >= 0) {
        sh.rep.selected++;
        sh.rep.win_att++;
        double T = dv.temps[sh.rep.slot] * tscale;
        sh.rep.T = T;
        uint32_t word = sol_draw(&sp, step, (uint32_t)r, RNG_PURPOSE_ACCEPT, SOL_LANE_ACCEPT).v[0];
        if (sol_accept(sh.best_dE, T, dv.ltab, word)) {
            sh.rep.accepted++;
            sh.rep.win_acc++;
            sh.accept = 1;
            sh.wop = sol_op_of(c.cdraw[2 * sh.best_c], sh.rep.op_cut);
            sh.rep.op_acc[sh.wop]++;
            if (sh.best_dE < 0)
                sh.rep.win_gain[sh.wop]++;
        } else {
            sh.rep.rejected++;
        }
    }
    if (sh.accept) {
        sh.dphi = sh.dsum = 0;
        sh.nmax = 0;
    }
    if (sh.accept && !keep) {
        int2 q = c.cand[sh.best_c];
        int x0 = min(p.x, q.x), x1 = max(p.x, q.x), y0 = min(p.y, q.y), y1 = max(p.y, q.y);
        for (int k = 0; k < d; k++) {
            x0 = min(x0, c.inc_p[k].x);
            x1 = max(x1, c.inc_p[k].x);
            y0 = min(y0, c.inc_p[k].y);
            y1 = max(y1, c.inc_p[k].y);
        }
        sh.bx0 = x0;
        sh.bx1 = x1;
        sh.by0 = y0;
        sh.by1 = y1;
    }
}

/* One edge's count change at commit: counts, histogram and the tuple's sums. */
__device__ static inline void commit_edge(int *cnt, int *hist, struct sh_step &sh, int f, int o, int nn)
{
    cnt[f] = nn;
    atomicSub(&hist[o], 1);
    atomicAdd(&hist[nn], 1);
    atomicAdd((unsigned long long *)&sh.dphi, (unsigned long long)((long long)nn * nn - (long long)o * o));
    atomicAdd((unsigned long long *)&sh.dsum, (unsigned long long)(long long)(nn - o));
}

/*
 * k_steps's per-launch constants and the replica's views, read by every
 * phase of a step (below). Phases are __forceinline__ so that the launch
 * compiles to the same code as one long body (issue 16 measured the step
 * rate on an H200 before and after the split: docs/GPU.md).
 */
struct kstep {
    int r, tid, B, n, m, W, G, lcap, keep, ngr, tour;
    int *cnt, *hist;
    const int64_t *wt;
};

__device__ __forceinline__ static struct kstep kstep_make(const struct sol_params &sp,
                                                          const struct sol_dev &dv, int G, int lcap,
                                                          int keep)
{
    struct kstep k;
    k.r = blockIdx.x;
    k.tid = threadIdx.x;
    k.B = blockDim.x;
    k.n = sp.n;
    k.m = sp.m;
    k.W = sp.W;
    k.G = G;
    k.lcap = lcap;
    k.keep = keep;
    k.ngr = (sp.W + G - 1) / G;
    k.tour = sol_tour_size(&sp);
    k.cnt = dv.cnt + (size_t)k.r * k.m;
    k.hist = dv.hist + (size_t)k.r * (k.m + 1);
    k.wt = dv.wtab + (size_t)sol_wtab_of(&sp, k.r, dv.R, dv.L) * (k.m + 1);
    return k;
}

/* (1) boxes reset; the tournament's draws in parallel, reduced to the winner
 * (sh.tkey); the candidates' draws too: they do not depend on the node. */
__device__ __forceinline__ static void step_draws(const struct sol_params &sp, struct carve &c,
                                                  struct sh_step &sh, const struct kstep &k,
                                                  uint64_t step, int hot)
{
    if (k.tid == 0) {
        sh.ib[0] = sh.ib[1] = INT_MAX;
        sh.ib[2] = sh.ib[3] = INT_MIN;
        sh.bsum[0] = sh.bsum[1] = 0;
    }
    for (int i = k.tid; i < k.ngr; i += k.B)
        c.gbox[i] = make_int4(INT_MAX, INT_MAX, INT_MIN, INT_MIN);
    const int nt = hot ? k.tour : 0;
    for (int j = k.tid; j < nt + 2 * k.W; j += k.B) {
        if (j < nt) {
            int e = sol_tour_edge(&sp, step, (uint32_t)k.r, j);
            sh.tour_e[j] = e;
            atomicMax(&sh.tkey, sol_tour_key(k.cnt[e], j));
        } else {
            const struct lcn_u32x4 dr = sol_candidate_draw(&sp, step, (uint32_t)k.r, (uint32_t)(j - nt));
            c.cdraw[j - nt] = dr;
            if (!((j - nt) & 1) && sol_op_of(dr, sh.rep.op_cut) == SOL_OP_MEDIAN)
                atomicOr(&sh.need_med, 1);
        }
    }
}

/* (2) v's incident edges, far ends, their box, sum and (when a candidate
 * needs it) coordinate-wise median; the step's pick state reset. */
__device__ __forceinline__ static void step_star(const struct sol_dev &dv, struct carve &c,
                                                 struct sh_step &sh, const struct kstep &k, int v,
                                                 int ioff, int d, struct lcn_pt p)
{
    for (int j = k.tid; j < d; j += k.B) {
        int e = dv.inc[ioff + j];
        int2 ee = dv.edges[e];
        int u = ee.x == v ? ee.y : ee.x;
        int2 pu = c.sc[u];
        c.inc_e[j] = e;
        c.inc_u[j] = u;
        c.inc_p[j] = P(pu);
        atomicAdd((unsigned long long *)&sh.bsum[0], (unsigned long long)(long long)pu.x);
        atomicAdd((unsigned long long *)&sh.bsum[1], (unsigned long long)(long long)pu.y);
        atomicMin(&sh.ib[0], pu.x);
        atomicMin(&sh.ib[1], pu.y);
        atomicMax(&sh.ib[2], pu.x);
        atomicMax(&sh.ib[3], pu.y);
        if (sh.need_med) {
            /* rank this neighbour's coordinates among the star's
             * (sol_median_rank): the one of rank (d - 1) / 2 writes */
            int rx = 0, ry = 0;
            for (int i = 0; i < d; i++) {
                const int2 ei = dv.edges[dv.inc[ioff + i]];
                const int2 pi = c.sc[ei.x == v ? ei.y : ei.x];
                rx += pi.x < pu.x || (pi.x == pu.x && i < j);
                ry += pi.y < pu.y || (pi.y == pu.y && i < j);
            }
            if (rx == (d - 1) / 2)
                sh.med[0] = pu.x;
            if (ry == (d - 1) / 2)
                sh.med[1] = pu.y;
        }
    }
    if (k.tid == 0) {
        if (d == 0) {
            sh.med[0] = p.x;
            sh.med[1] = p.y;
        }
        /* reset after barrier (1): a warp of the last step may still have
         * been loading H and best_c (the commit's, speculatively) before it */
        sh.H = 0;
        sh.best_c = -1;
        sh.best_dE = 0;
        atomicMin(&sh.ib[0], p.x);
        atomicMin(&sh.ib[1], p.y);
        atomicMax(&sh.ib[2], p.x);
        atomicMax(&sh.ib[3], p.y);
    }
}

/* (3) the candidates (threads 0..W-1) and their group boxes; the first
 * group's crossing counts cleared. */
__device__ __forceinline__ static void step_candidates(const struct sol_params &sp, struct carve &c,
                                                       struct sh_step &sh, const struct kstep &k,
                                                       struct lcn_pt p, int d)
{
    if (k.tid == 0) {
        sh.tkey = 0;
        sh.need_med = 0; /* read in (2) only */
    }
    for (int i = k.tid; i < k.W; i += k.B) {
        struct lcn_pt bary = p, med;
        if (d > 0) {
            bary.x = (int)(sh.bsum[0] / d);
            bary.y = (int)(sh.bsum[1] / d);
        }
        med.x = sh.med[0];
        med.y = sh.med[1];
        struct lcn_pt q = sol_candidate_of(&sp, c.cdraw[2 * i], c.cdraw[2 * i + 1], p, bary, med,
                                           sh.rep.sigma, sh.rep.op_cut);
        c.cand[i] = make_int2(q.x, q.y);
        c.cdE[i] = 0;
        c.cbad[i] = 0;
        int4 *gb = &c.gbox[i / k.G];
        atomicMin(&gb->x, q.x);
        atomicMin(&gb->y, q.y);
        atomicMax(&gb->z, q.x);
        atomicMax(&gb->w, q.y);
    }
    for (int i = k.tid; i < min(k.G, k.W) * d; i += k.B)
        c.cntc[i] = 0;
}

/* Kept edge h (edge f): its star masks (sol_star_masks) and the old
 * position's crossings with it. */
template <int SMALL>
__device__ __forceinline__ static void keep_one(struct carve &c, int h, int f, int2 ee,
                                                struct lcn_pt p, int d, unsigned long long &tests)
{
    const int nch = (d + 63) >> 6;
    const struct lcn_pt a = P(c.sc[ee.x]), b = P(c.sc[ee.y]);
    c.hits[h] = f;
    int oc = 0;
    for (int kc = 0; kc < nch; kc++) {
        uint64_t pos, neg;
        sol_star_masks(SMALL, c.inc_p, c.inc_u, d, kc * 64, ee.x, ee.y, a, b, &pos, &neg);
        c.hpos[h * nch + kc] = pos;
        c.hneg[h * nch + kc] = neg;
        tests += sol_star_counted(pos, neg);
        oc += __popcll(sol_star_meets(SMALL, p, a, b, pos, neg, c.inc_p, kc * 64));
    }
    c.hoc[h] = oc;
}

/* (4) kept edges of chunk [base, lim) (box-filtered, not incident to v),
 * each kept (keep_one), a thread per edge. */
template <int SMALL>
__device__ __forceinline__ static void scan_keep(const struct sol_dev &dv, struct carve &c,
                                                 struct sh_step &sh, const struct kstep &k, int v,
                                                 struct lcn_pt p, int d, int4 bx, int base, int lim,
                                                 unsigned long long &tests)
{
    for (int f = base + k.tid; f < lim; f += k.B) {
        int2 ee = dv.edges[f];
        if (ee.x == v || ee.y == v)
            continue;
        if (!box_meets(bx.x, bx.y, bx.z, bx.w, c.sc[ee.x], c.sc[ee.y]))
            continue;
        keep_one<SMALL>(c, atomicAdd(&sh.H, 1), f, ee, p, d, tests);
    }
}

/* (4) with the edge grid: H of the query's kept edges (hl, ix_walk), each
 * kept. */
template <int SMALL>
__device__ __forceinline__ static void ix_keep(const struct sol_dev &dv, struct carve &c,
                                               const struct kstep &k, const int *hl, struct lcn_pt p,
                                               int d, int H, unsigned long long &tests)
{
    for (int h = k.tid; h < H; h += k.B) {
        const int f = hl[h];
        keep_one<SMALL>(c, h, f, dv.edges[f], p, d, tests);
    }
}


/* (5) (candidate, kept edge) pairs, warp-uniform trips: each warp's energy
 * changes are summed per candidate (warp_sum_by_key) before one shared
 * atomic each. A pair whose edge box misses the candidate's star box (its
 * point with v's neighbours and old point: ib) has no crossing and its point
 * is on no interior of that edge, so it skips the tests (issue 17: the
 * group's box also holds its other candidates, far jumps among them). */
template <int SMALL>
__device__ __forceinline__ static void scan_pairs(const struct sol_dev &dv, struct carve &c,
                                                  const struct kstep &k, const int *ib, int d,
                                                  int g0, int Gc, int H,
                                                  unsigned long long &tests)
{
    const int total = Gc * H, nch = (d + 63) >> 6;
    for (int wb = k.tid & ~31; wb < total; wb += k.B) {
        const int it = wb + (k.tid & 31);
        int ci = -1;
        long long de = 0;
        if (it < total) {
            ci = it / H;
            const int h = it - ci * H, f = c.hits[h];
            const int2 ee = dv.edges[f];
            const int2 a2 = c.sc[ee.x], b2 = c.sc[ee.y], q2 = c.cand[g0 + ci];
            const struct lcn_pt a = P(a2), b = P(b2), q = P(q2);
            const int near = box_meets(min(ib[0], q2.x), min(ib[1], q2.y), max(ib[2], q2.x),
                                       max(ib[3], q2.y), a2, b2);
            if (near && geom_on_interior(a, b, q))
                c.cbad[g0 + ci] = 1;
            int nc = 0;
            for (int kc = 0; near && kc < nch; kc++) {
                const uint64_t pos = c.hpos[h * nch + kc], neg = c.hneg[h * nch + kc];
                tests += sol_star_counted(pos, neg);
                uint64_t met = sol_star_meets(SMALL, q, a, b, pos, neg, c.inc_p, kc * 64);
                nc += __popcll(met);
                for (; met; met &= met - 1)
                    atomicAdd(&c.cntc[ci * d + kc * 64 + __ffsll((long long)met) - 1], 1);
            }
            if (k.keep)
                c.hnc[ci * k.lcap + h] = (unsigned short)nc;
            const int delta = nc - c.hoc[h];
            if (delta) {
                const int cf = k.cnt[f];
                de = k.wt[cf + delta] - k.wt[cf];
            }
        }
        if (warp_sum_by_key(&de, ci) && ci >= 0 && de != 0)
            atomicAdd((unsigned long long *)&c.cdE[g0 + ci], (unsigned long long)de);
    }
}

/* V2 and V3 for the group: (node inside the union box, candidate) pairs. */
__device__ __forceinline__ static void node_vs_cand(struct carve &c, int w, struct lcn_pt pw, int d,
                                                    int g0, int ci)
{
    const struct lcn_pt q = P(c.cand[g0 + ci]);
    if (geom_pt_eq(pw, q)) {
        c.cbad[g0 + ci] = 1;
        return;
    }
    for (int j = 0; j < d; j++)
        if (w != c.inc_u[j] && geom_on_interior(q, c.inc_p[j], pw)) {
            c.cbad[g0 + ci] = 1;
            return;
        }
}

/* (5) V2/V3 of the group's candidates against the nodes in the box bx: per
 * (node, candidate) pair, or past SCAN_NODES_WIDE nodes per node (the box
 * test once a node, not once a pair); either sets the same cbad bits. */
#define SCAN_NODES_WIDE 8192
__device__ __forceinline__ static void scan_nodes(struct carve &c, const struct kstep &k, int v,
                                                  int d, int4 bx, int g0, int Gc)
{
    const int per_node = k.n > SCAN_NODES_WIDE;
    const int total = per_node ? k.n : k.n * Gc;
    for (int it = k.tid; it < total; it += k.B) {
        int w = per_node ? it : it / Gc, ci = per_node ? 0 : it - w * Gc;
        if (w == v)
            continue;
        int2 pw2 = c.sc[w];
        if (pw2.x < bx.x || pw2.x > bx.z || pw2.y < bx.y || pw2.y > bx.w)
            continue;
        if (!per_node)
            node_vs_cand(c, w, P(pw2), d, g0, ci);
        else
            for (ci = 0; ci < Gc; ci++)
                node_vs_cand(c, w, P(pw2), d, g0, ci);
    }
}

/*
 * (5) V2/V3 with the edge grid (nodes_ok: every node has an edge): a node w
 * on a candidate's point or on the interior of one of its new segments has
 * an edge through that point; unless all of w's edges end at v (w is then
 * v's neighbour), the query kept that edge (it meets a queried segment or
 * point and its box meets bx). So the kept edges' ends and v's neighbours
 * hold every node scan_nodes would flag, and set the same cbad bits.
 */
__device__ __forceinline__ static void ix_nodes(const struct sol_dev &dv, struct carve &c,
                                                const struct kstep &k, const int *hl, int H, int v,
                                                int d, int4 bx, int g0, int Gc)
{
    const int total = (2 * H + d) * Gc;
    for (int it = k.tid; it < total; it += k.B) {
        const int i = it / Gc, ci = it - i * Gc;
        int w;
        if (i < 2 * H) {
            const int2 ee = dv.edges[hl[i >> 1]];
            w = i & 1 ? ee.y : ee.x;
        } else {
            w = c.inc_u[i - 2 * H];
        }
        const int2 pw2 = c.sc[w];
        if (w == v || pw2.x < bx.x || pw2.x > bx.z || pw2.y < bx.y || pw2.y > bx.w)
            continue;
        node_vs_cand(c, w, P(pw2), d, g0, ci);
    }
}

/*
 * (4) and (5) for one group with the edge grid (sol_eix): the query, then
 * its kept edges in chunks of lcap (their masks and the pairs, as the
 * scan's chunks), and V2/V3 (ix_nodes, or the node scan when some node has
 * no edge). Starts after the group's barrier, ends with one.
 */
template <int SMALL>
__device__ __forceinline__ static void ix_group(const struct sol_dev &dv, struct carve &c,
                                                struct sh_step &sh, const struct kstep &k, int v,
                                                struct lcn_pt p, int d, int4 bx, int g0, int Gc,
                                                unsigned long long &tests)
{
    ix_query(dv, c, sh, k.m, v, p, d, bx, g0, (1 + Gc) * (d + 1));
    const int H = sh.H, *hl = ix_hl(dv, k.m);
    if (dv.ix.nodes_ok)
        ix_nodes(dv, c, k, hl, H, v, d, bx, g0, Gc);
    else
        scan_nodes(c, k, v, d, bx, g0, Gc);
    if (k.tid == 0)
        sh.rep.grid_groups++;
    for (int base = 0; base < H; base += k.lcap) {
        const int Hc = min(k.lcap, H - base);
        ix_keep<SMALL>(dv, c, k, hl + base, p, d, Hc, tests);
        __syncthreads();
        scan_pairs<SMALL>(dv, c, k, sh.ib, d, g0, Gc, Hc, tests);
        __syncthreads();
    }
    __syncthreads();
}

/* (6) for groups of at most 32 candidates: warp 0 adds the incident edges'
 * energy change per candidate and takes the group's valid candidate of
 * lowest change (ties: lowest index); after the last group the Metropolis
 * test. */
__device__ __forceinline__ static void pick_warp(const struct sol_params &sp, const struct sol_dev &dv,
                                                 struct carve &c, struct sh_step &sh,
                                                 const struct kstep &k, struct lcn_pt p, int d,
                                                 int g0, int Gc, int last, uint64_t step, double tscale)
{
    if (k.tid >= 32)
        return;
    const int tid = k.tid;
    int ok = 0;
    long long de = 0;
    if (tid < Gc) {
        de = c.cdE[g0 + tid];
        for (int j = 0; j < d; j++)
            de += k.wt[c.cntc[tid * d + j]] - k.wt[k.cnt[c.inc_e[j]]];
        ok = !c.cbad[g0 + tid];
    }
    const unsigned okm = __ballot_sync(0xffffffffu, ok);
    const int op = tid < Gc ? sol_op_of(c.cdraw[2 * (g0 + tid)], sh.rep.op_cut) : -1;
    unsigned tm[SOL_OPS], vm[SOL_OPS];
    for (int j = 0; j < SOL_OPS; j++) {
        tm[j] = __ballot_sync(0xffffffffu, op == j);
        vm[j] = __ballot_sync(0xffffffffu, op == j && ok);
    }
    long long bd = ok ? de : LLONG_MAX;
    int bc = ok ? tid : INT_MAX;
    for (int off = 16; off > 0; off >>= 1) {
        long long od = __shfl_xor_sync(0xffffffffu, bd, off);
        int oc = __shfl_xor_sync(0xffffffffu, bc, off);
        if (od < bd || (od == bd && oc < bc)) {
            bd = od;
            bc = oc;
        }
    }
    if (tid == 0) {
        sh.rep.valid += __popc(okm);
        for (int j = 0; j < SOL_OPS; j++) {
            sh.rep.op_tried[j] += __popc(tm[j]);
            sh.rep.win_tried[j] += __popc(tm[j]);
            sh.rep.op_valid[j] += __popc(vm[j]);
        }
        if (okm && (sh.best_c < 0 || bd < sh.best_dE)) {
            sh.best_c = g0 + bc;
            sh.best_dE = bd;
        }
        if (last)
            accept_winner(sp, dv, c, sh, p, d, step, k.r, tscale, k.keep);
    }
}

/* (6) for larger groups: the block adds the incident edges' change per
 * candidate. */
__device__ __forceinline__ static void pick_sums(struct carve &c, const struct kstep &k, int d, int g0,
                                                 int Gc)
{
    for (int ci = k.tid; ci < Gc; ci += k.B) {
        long long de = c.cdE[g0 + ci];
        for (int j = 0; j < d; j++)
            de += k.wt[c.cntc[ci * d + j]] - k.wt[k.cnt[c.inc_e[j]]];
        c.cdE[g0 + ci] = de;
    }
}

/* (6) for larger groups, after pick_sums: thread 0 picks in candidate order;
 * after the last group the Metropolis test. */
__device__ __forceinline__ static void pick_serial(const struct sol_params &sp, const struct sol_dev &dv,
                                                   struct carve &c, struct sh_step &sh,
                                                   const struct kstep &k, struct lcn_pt p, int d,
                                                   int g0, int Gc, int last, uint64_t step, double tscale)
{
    if (k.tid == 0) {
        for (int ci = g0; ci < g0 + Gc; ci++) {
            const int op = sol_op_of(c.cdraw[2 * ci], sh.rep.op_cut);
            sh.rep.op_tried[op]++;
            sh.rep.win_tried[op]++;
            if (c.cbad[ci])
                continue;
            sh.rep.valid++;
            sh.rep.op_valid[op]++;
            if (sh.best_c < 0 || c.cdE[ci] < sh.best_dE) {
                sh.best_c = ci;
                sh.best_dE = c.cdE[ci];
            }
        }
        if (last)
            accept_winner(sp, dv, c, sh, p, d, step, k.r, tscale, k.keep);
    }
}

/* (7) the reusing commit (keep): one chunk, one group: the scan's kept edges
 * (a superset of the commit box's: an edge outside that box meets neither
 * star), their old crossings and the winner's new ones, and the winner's
 * incident counts are still in shared memory. */
__device__ __forceinline__ static void commit_reuse(struct carve &c, struct sh_step &sh,
                                                    const struct kstep &k, int d)
{
    const int H = sh.H, b = sh.best_c;
    for (int h = k.tid; h < H; h += k.B) {
        const int delta = (int)c.hnc[b * k.lcap + h] - c.hoc[h];
        if (delta) {
            const int f = c.hits[h], o = k.cnt[f];
            commit_edge(k.cnt, k.hist, sh, f, o, o + delta);
            atomicMax(&sh.nmax, o + delta);
        }
    }
    for (int j = k.tid; j < d; j += k.B) {
        const int e = c.inc_e[j], o = k.cnt[e], nn = c.cntc[b * d + j];
        if (nn != o)
            commit_edge(k.cnt, k.hist, sh, e, o, nn);
        atomicMax(&sh.nmax, nn);
    }
}

/* Before the scanning commit (7), ahead of the last group's barrier: v's new
 * counts from 0, and the first chunk's H reset there because a lagging warp
 * may still load H at the commit's start (the reusing commit's, hoisted). */
__device__ __forceinline__ static void commit_clear(struct carve &c, struct sh_step &sh,
                                                    const struct kstep &k, int d)
{
    for (int j = k.tid; j < d; j += k.B)
        c.ncom[j] = 0;
    if (k.tid == 0)
        sh.H = 0;
}

/* (7) the scanning commit, one chunk's kept edges (hits: collect_hits', or
 * the grid's query, ix_commit): their crossings with v's star at p and at q,
 * counted into the edges and ncom. */
template <int SMALL>
__device__ __forceinline__ static void commit_chunk(const struct sol_dev &dv, struct carve &c,
                                                    struct sh_step &sh, const struct kstep &k,
                                                    const int *hits, struct lcn_pt p,
                                                    struct lcn_pt q, int d, int H,
                                                    unsigned long long &tests)
{
    for (int h = k.tid; h < H; h += k.B) {
        int f = hits[h];
        int2 ee = dv.edges[f];
        struct lcn_pt a = P(c.sc[ee.x]), b = P(c.sc[ee.y]);
        int delta = 0;
        for (int k0 = 0; k0 < d; k0 += 64) {
            uint64_t pos, neg;
            sol_star_masks(SMALL, c.inc_p, c.inc_u, d, k0, ee.x, ee.y, a, b, &pos, &neg);
            tests += 2 * sol_star_counted(pos, neg);
            uint64_t met = sol_star_meets(SMALL, q, a, b, pos, neg, c.inc_p, k0);
            delta += __popcll(met) - __popcll(sol_star_meets(SMALL, p, a, b, pos, neg, c.inc_p, k0));
            for (; met; met &= met - 1)
                atomicAdd(&c.ncom[k0 + __ffsll((long long)met) - 1], 1);
        }
        if (delta) {
            int o = k.cnt[f];
            commit_edge(k.cnt, k.hist, sh, f, o, o + delta);
            atomicMax(&sh.nmax, o + delta);
        }
    }
}

/* (7) the scanning commit's incident edges, after every chunk: v's counts. */
__device__ __forceinline__ static void commit_star(struct carve &c, struct sh_step &sh,
                                                   const struct kstep &k, int d)
{
    for (int j = k.tid; j < d; j += k.B) {
        int e = c.inc_e[j], o = k.cnt[e], nn = c.ncom[j];
        if (nn != o)
            commit_edge(k.cnt, k.hist, sh, e, o, nn);
        atomicMax(&sh.nmax, nn);
    }
}

/* (7) the scanning commit: each chunk's kept edges (collect_hits, then
 * commit_chunk, a barrier after each), then v's counts (commit_star). */
template <int SMALL>
__device__ __forceinline__ static void commit_scan(const struct sol_dev &dv, struct carve &c,
                                                   struct sh_step &sh, const struct kstep &k,
                                                   int v, struct lcn_pt p, struct lcn_pt q, int d,
                                                   unsigned long long &tests)
{
    for (int base = 0; base < k.m; base += k.lcap) {
        if (base > 0) {
            if (k.tid == 0)
                sh.H = 0;
            __syncthreads();
        }
        collect_hits(dv, c, sh, v, base, min(base + k.lcap, k.m));
        __syncthreads();
        commit_chunk<SMALL>(dv, c, sh, k, c.hits, p, q, d, sh.H, tests);
        __syncthreads();
    }
    commit_star(c, sh, k, d);
}

/* (7) the commit with the edge grid: a query of v's old star and the
 * winner's in the commit box (every edge whose count the move changes: a
 * subset of the scanning commit's kept edges), its kept edges counted as
 * the scan's chunks are (commit_chunk), then v's counts. */
template <int SMALL>
__device__ __forceinline__ static void ix_commit(const struct sol_dev &dv, struct carve &c,
                                                 struct sh_step &sh, const struct kstep &k, int v,
                                                 struct lcn_pt p, struct lcn_pt q, int d,
                                                 unsigned long long &tests)
{
    const int4 bx = make_int4(sh.bx0, sh.by0, sh.bx1, sh.by1);
    ix_query(dv, c, sh, k.m, v, p, d, bx, sh.best_c, 2 * (d + 1));
    const int H = sh.H, *hl = ix_hl(dv, k.m);
    commit_chunk<SMALL>(dv, c, sh, k, hl, p, q, d, H, tests);
    __syncthreads();
    commit_star(c, sh, k, d);
}

/* (7) the commit: reusing the scan's kept edges (keep), from the grid, or
 * scanning every edge again. */
template <int SMALL>
__device__ __forceinline__ static void commit_move(const struct sol_dev &dv, struct carve &c,
                                                   struct sh_step &sh, const struct kstep &k,
                                                   int ix, int v, struct lcn_pt p, struct lcn_pt q,
                                                   int d, unsigned long long &tests)
{
    if (k.keep)
        commit_reuse(c, sh, k, d);
    else if (ix && sh.ixok && 2 * (d + 1) <= IX_SEGMAX)
        ix_commit<SMALL>(dv, c, sh, k, v, p, q, d, tests);
    else
        commit_scan<SMALL>(dv, c, sh, k, v, p, q, d, tests);
}

/* (8) the tuple after a commit (thread 0). */
__device__ __forceinline__ static void commit_tuple(struct carve &c, struct sh_step &sh,
                                                    const struct kstep &k, int v, struct lcn_pt q)
{
    if (k.tid != 0)
        return;
    c.sc[v] = make_int2(q.x, q.y);
    int K = sh.rep.cur.K;
    if (sh.nmax > K)
        K = sh.nmax;
    while (K > 0 && __ldcg(&k.hist[K]) == 0)
        K--;
    sh.rep.cur.K = K;
    sh.rep.cur.nK = k.m ? __ldcg(&k.hist[K]) : 0;
    sh.rep.cur.Phi += sh.dphi;
    sh.rep.cur.C += sh.dsum / 2;
    sh.rep.E += sh.best_dE;
    sh.rep.committed++;
    sh.improved = obj_cmp(&sh.rep.cur, &sh.rep.best) < 0;
    if (sh.improved) {
        sh.rep.best = sh.rep.cur;
        sh.rep.best_updates++;
        sh.rep.op_imp[sh.wop]++;
    }
}

/* (8) a strict improvement of the best copies the layout and the counts to
 * the replica's best buffers. */
__device__ __forceinline__ static void copy_best(const struct sol_dev &dv, const struct carve &c,
                                                 const struct kstep &k)
{
    for (int i = k.tid; i < k.n; i += k.B)
        dv.best[(size_t)k.r * k.n + i] = c.sc[i];
    for (int i = k.tid; i < k.m; i += k.B)
        dv.bcnt[(size_t)k.r * k.m + i] = k.cnt[i];
}

/*
 * One launch runs S steps of replica blockIdx.x. The step's barriers: (1)
 * the tournament's and the candidates' draws; (2) the node, its incident
 * edges, their box and barycentre; (3) candidates and their group boxes; per
 * group and chunk (4) kept edges with their star masks and (5) the
 * (candidate, edge) pairs and, on the last chunk, V2/V3; (6) the group's
 * energy changes and pick (and the Metropolis test after the last group);
 * for an accepted move (7) the commit and (8) the tuple. Every thread
 * derives the step number, the node draw and the node itself, so none waits
 * for thread 0 to broadcast them. The phases are the helpers above; every
 * barrier is here, between their calls.
 */
template <int SMALL, int GL>
static __global__ void __launch_bounds__(1024)
    k_steps(const struct sol_params sp, const struct sol_dev dv, int S, long long max_steps,
            double tscale, int dmax, int G, int lcap, int keep, int ix)
{
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ struct sh_step sh;
    const struct kstep k = kstep_make(sp, dv, G, lcap, keep);
    /* GL: the layout stays in the replica's global buffer (graphs whose
     * layout does not fit shared memory, sjob_plan), else a shared copy */
    struct carve c = carve_smem(smem, GL ? 0 : k.n, k.m, k.W, G, dmax, lcap, keep);
    unsigned long long tests = 0;

    if (GL)
        c.sc = dv.cur + (size_t)k.r * k.n;
    for (int i = k.tid; !GL && i < k.n; i += k.B)
        c.sc[i] = dv.cur[(size_t)k.r * k.n + i];
    if (k.tid == 0) {
        sh.rep = dv.rep[k.r];
        sh.tests = 0;
        sh.tkey = 0;
        sh.need_med = 0;
    }
    __syncthreads();
    const uint64_t step0 = sh.rep.step;
    if (ix)
        ix_resume(dv, c, sh, k.m);

    for (int s = 0; s < S; s++) {
        const uint64_t step = step0 + (uint64_t)s;
        if (max_steps > 0 && (long long)step >= max_steps)
            break;
        if (ix && sh.ndirty > dv.ix.dthr)
            ix_build(dv, c, sh, k.m);
        const struct lcn_u32x4 nd = sol_node_draw(&sp, step, (uint32_t)k.r);
        const int hot = sol_node_hot(&sp, nd);
        step_draws(sp, c, sh, k, step, hot);
        __syncthreads();
        /* the node (sol_pick_node) */
        const int v = sol_node_of(&sp, nd, hot ? sh.tour_e[sol_tour_k(sh.tkey)] : -1,
                                  (const int32_t *)dv.edges);
        const int ioff = dv.inc_off[v], d = dv.inc_off[v + 1] - ioff;
        const struct lcn_pt p = P(c.sc[v]);
        step_star(dv, c, sh, k, v, ioff, d, p);
        __syncthreads();
        step_candidates(sp, c, sh, k, p, d);
        __syncthreads();

        for (int g0 = 0, gi = 0; g0 < k.W; g0 += G, gi++) {
            const int Gc = min(G, k.W - g0), last = g0 + G >= k.W;
            if (g0 > 0) {
                for (int i = k.tid; i < Gc * d; i += k.B)
                    c.cntc[i] = 0;
                if (k.tid == 0)
                    sh.H = 0;
                __syncthreads();
            }
            /* the union box of v's old and new incident segments for this group */
            const int4 gb = c.gbox[gi];
            const int4 bx = make_int4(min(sh.ib[0], gb.x), min(sh.ib[1], gb.y), max(sh.ib[2], gb.z),
                                      max(sh.ib[3], gb.w));
            const int queried = ix && sh.ixok && (1 + Gc) * (d + 1) <= IX_SEGMAX;
            if (queried)
                ix_group<SMALL>(dv, c, sh, k, v, p, d, bx, g0, Gc, tests);
            for (int base = 0; !queried && (base < k.m || base == 0); base += lcap) {
                /* once when m = 0: V2/V3 */
                if (base > 0) {
                    if (k.tid == 0)
                        sh.H = 0;
                    __syncthreads();
                }
                const int lim = min(base + lcap, k.m);
                scan_keep<SMALL>(dv, c, sh, k, v, p, d, bx, base, lim, tests); /* (4) */
                __syncthreads();
                scan_pairs<SMALL>(dv, c, k, sh.ib, d, g0, Gc, sh.H, tests); /* (5) */
                if (lim == k.m)
                    scan_nodes(c, k, v, d, bx, g0, Gc);
                __syncthreads();
            }
            if (Gc <= 32)
                pick_warp(sp, dv, c, sh, k, p, d, g0, Gc, last, step, tscale);
            else {
                pick_sums(c, k, d, g0, Gc);
                __syncthreads();
                pick_serial(sp, dv, c, sh, k, p, d, g0, Gc, last, step, tscale);
            }
            if (last && !keep)
                commit_clear(c, sh, k, d);
            __syncthreads();
        }

        if (sh.accept) {
            const struct lcn_pt q = P(c.cand[sh.best_c]);
            commit_move<SMALL>(dv, c, sh, k, ix, v, p, q, d, tests);
            if (ix)
                ix_mark(dv, c, sh, k.m, d);
            __syncthreads();
            commit_tuple(c, sh, k, v, q);
            __syncthreads();
            if (sh.improved)
                copy_best(dv, c, k);
        }
        if (k.tid == 0)
            sh.rep.step++;
    }
    __syncthreads();
    for (int i = k.tid; !GL && i < k.n; i += k.B)
        dv.cur[(size_t)k.r * k.n + i] = c.sc[i];
    atomicAdd(&sh.tests, tests);
    __syncthreads();
    if (k.tid == 0) {
        sh.rep.pair_tests += sh.tests;
        dv.rep[k.r] = sh.rep;
        ix_save(dv, sh, ix);
    }
}

/* Best record, counter sums and energy-table re-reference (one block). */
static __global__ void __launch_bounds__(1024)
    k_best(const struct sol_params sp, const struct sol_dev dv, int64_t *wtab, uint32_t r16, int64_t lin,
           const uint32_t *rk, unsigned long long batch)
{
    __shared__ int bi[1024];
    __shared__ unsigned long long sums[11];
    __shared__ unsigned long long minstep;
    const int tid = threadIdx.x, B = blockDim.x;
    if (tid < 11)
        sums[tid] = 0;
    if (tid == 0)
        minstep = ~0ull;
    __syncthreads();
    int best = -1;
    unsigned long long loc[11] = {0};
    unsigned long long ms = ~0ull;
    for (int r = tid; r < dv.R; r += B) {
        const struct sol_replica *x = &dv.rep[r];
        if (best < 0 || obj_cmp(&x->best, &dv.rep[best].best) < 0)
            best = r;
        loc[0] += x->attempted;
        loc[1] += x->valid;
        loc[2] += x->evaluated;
        loc[3] += x->selected;
        loc[4] += x->accepted;
        loc[5] += x->rejected;
        loc[6] += x->committed;
        loc[7] += x->best_updates;
        loc[8] += x->pair_tests;
        loc[9] += x->restarts;
        loc[10] += x->imports;
        ms = min(ms, (unsigned long long)x->step);
    }
    bi[tid] = best;
    for (int i = 0; i < 11; i++)
        atomicAdd(&sums[i], loc[i]);
    atomicMin(&minstep, ms);
    __syncthreads();
    if (tid == 0) {
        int b = bi[0];
        for (int t = 1; t < B && t < dv.R; t++) {
            int o = bi[t];
            int cmp = obj_cmp(&dv.rep[o].best, &dv.rep[b].best);
            if (cmp < 0 || (cmp == 0 && o < b))
                b = o;
        }
        struct gpu_record *rec = dv.rec;
        rec->best = dv.rep[b].best;
        rec->best_rep = b;
        rec->attempted = sums[0];
        rec->valid = sums[1];
        rec->evaluated = sums[2];
        rec->selected = sums[3];
        rec->accepted = sums[4];
        rec->rejected = sums[5];
        rec->committed = sums[6];
        rec->best_updates = sums[7];
        rec->pair_tests = sums[8];
        rec->min_step = minstep;
        rec->restarts = sums[9];
        rec->imports = sums[10];
        for (int k = 0; k < SOL_OPS; k++)
            rec->op[k][0] = rec->op[k][1] = rec->op[k][2] = rec->op[k][3] = 0;
        for (int r = 0; r < dv.R; r++)
            for (int k = 0; k < SOL_OPS; k++) {
                rec->op[k][0] += dv.rep[r].op_tried[k];
                rec->op[k][1] += dv.rep[r].op_valid[k];
                rec->op[k][2] += dv.rep[r].op_acc[k];
                rec->op[k][3] += dv.rep[r].op_imp[k];
            }
        sol_groups_boundary(&sp, dv.rep, dv.R, dv.L, batch, b, rec->grp, &rec->ex, &rec->ex_done);
        for (int h = 0; h < sol_ngroups(&sp, dv.R, dv.L); h++) {
            struct sol_group *x = &rec->grp[h];
            if (x->best.K != x->kref) {
                x->kref = x->best.K;
                sol_energy_tables(wtab + (size_t)2 * h * (sp.m + 1), &sp, x->kref, r16, lin, rk);
            }
        }
    }
}

/*
 * The layouts k_best's group decisions move (sol_group_source): a restart
 * wave's replicas take the best layout and counts of one of their group's
 * elites (sol_elite_pool, sol_restart_source; sol_restart_due), an import's
 * those of the run's best; then the energy of every replica under its
 * table (one block per replica).
 */
static __global__ void k_energy(const struct sol_params sp, const struct sol_dev dv)
{
    __shared__ unsigned long long tot;
    const int r = blockIdx.x, n = sp.n, m = sp.m;
    struct sol_replica *rp = &dv.rep[r];
    int32_t b = -1;
    const int how = sol_group_source(&sp, dv.rec->grp, dv.R, dv.L, r, rp->slot, &b);
    if (how >= 0) {
        const struct sol_replica *eb = &dv.rep[b];
        const int take_best = r != b && obj_cmp(&eb->best, &rp->best) < 0;
        int *hist = dv.hist + (size_t)r * (m + 1);
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            int2 q = dv.best[(size_t)b * n + i];
            dv.cur[(size_t)r * n + i] = q;
            if (take_best)
                dv.best[(size_t)r * n + i] = q;
        }
        for (int i = threadIdx.x; i <= m; i += blockDim.x)
            hist[i] = 0;
        __syncthreads();
        for (int i = threadIdx.x; i < m; i += blockDim.x) {
            int c = dv.bcnt[(size_t)b * m + i];
            dv.cnt[(size_t)r * m + i] = c;
            if (take_best)
                dv.bcnt[(size_t)r * m + i] = c;
            atomicAdd(&hist[c], 1);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            if (dv.ix.state) /* a new layout: its grid is rebuilt */
                dv.ix.state[(size_t)r * IX_STATE] = 0;
            rp->cur = eb->best;
            if (take_best)
                rp->best = eb->best;
            if (how)
                rp->imports++;
            else
                rp->restarts++;
        }
    }
    if (threadIdx.x == 0)
        tot = 0;
    __syncthreads();
    long long e = 0;
    const int *cnt = dv.cnt + (size_t)r * sp.m;
    const int64_t *wt = dv.wtab + (size_t)sol_wtab_of(&sp, r, dv.R, dv.L) * (sp.m + 1);
    for (int i = threadIdx.x; i < sp.m; i += blockDim.x)
        e += wt[cnt[i]];
    atomicAdd(&tot, (unsigned long long)e);
    __syncthreads();
    if (threadIdx.x == 0)
        dv.rep[r].E = (long long)tot;
}

/* Temperature exchanges within each ladder, then sigma adaptation. */
static __global__ void k_exchange(const struct sol_params sp, const struct sol_dev dv,
                                  unsigned long long batch, double tscale)
{
    const int L = dv.L, ladders = dv.R / L;
    int of_slot[SOL_LMAX];
    for (int l = threadIdx.x; l < ladders; l += blockDim.x) {
        const int base = l * L;
        for (int i = 0; i < L; i++)
            of_slot[dv.rep[base + i].slot] = base + i;
        for (int t = (int)(batch & 1); t + 1 < L; t += 2) {
            int i = of_slot[t], j = of_slot[t + 1];
            uint32_t word = sol_draw(&sp, batch, (uint32_t)l, RNG_PURPOSE_EXCHANGE, (uint32_t)t).v[0];
            struct sol_replica *ri = &dv.rep[i], *rj = &dv.rep[j];
            atomicAdd((unsigned long long *)&dv.rec->ex_att, 1ull);
            if (sol_exchange(ri->E, rj->E, dv.temps[t] * tscale, dv.temps[t + 1] * tscale, dv.ltab,
                             word)) {
                ri->slot = t + 1;
                rj->slot = t;
                of_slot[t] = j;
                of_slot[t + 1] = i;
                atomicAdd((unsigned long long *)&dv.rec->ex_acc, 1ull);
            }
        }
        for (int i = 0; i < L; i++) {
            struct sol_replica *x = &dv.rep[base + i];
            x->sigma = sol_adapt_sigma(x->sigma, x->win_att, x->win_acc, sp.sigma_min, sp.sigma_max);
            if (x->win_att >= 64)
                x->win_att = x->win_acc = 0;
            sol_bandit_update(&sp, x);
        }
    }
}

/* Copies replica 0's layout, counts and histogram to every other replica. */
static __global__ void k_replicate(const struct sol_params sp, const struct sol_dev dv)
{
    const int r = blockIdx.x;
    if (threadIdx.x == 0 && dv.ix.state) /* the pool's grids are an earlier job's */
        dv.ix.state[(size_t)r * IX_STATE] = 0;
    if (r == 0)
        return;
    for (int i = threadIdx.x; i < sp.n; i += blockDim.x) {
        dv.cur[(size_t)r * sp.n + i] = dv.cur[i];
        dv.best[(size_t)r * sp.n + i] = dv.cur[i];
    }
    for (int i = threadIdx.x; i < sp.m; i += blockDim.x) {
        dv.cnt[(size_t)r * sp.m + i] = dv.cnt[i];
        dv.bcnt[(size_t)r * sp.m + i] = dv.cnt[i];
    }
    for (int i = threadIdx.x; i <= sp.m; i += blockDim.x)
        dv.hist[(size_t)r * (sp.m + 1) + i] = dv.hist[i];
}

/* ---- host side ---- */

struct sjob {
    struct gpu_ctx *ctx;
    struct gpu_slot *s;
    const struct lcn_graph *g;
    struct gpu_solver_params gp;
    struct sol_params sp;
    struct sol_dev dv;
    uint32_t r16;
    int64_t lin;
    int R, L, G, B, dmax, lcap;
    int keep;  /* the commit reuses the scan's kept edges (smem_plan) */
    int ix;    /* the replicas have edge grids (sjob_ix_plan) */
    int ix_on; /* this batch queries them (else it scans; either, the same trajectory) */
    size_t smem_ix; /* a querying launch's shared memory: smem and the query's words */
    int small; /* every coordinate within [0, GEOM_SMALL]: k_steps<1, *>, 32-bit orientations */
    int gl;    /* the layout stays in global memory: k_steps<*, 1> (sjob_plan) */
    size_t smem;
    unsigned long long batch;
    struct lcn_obj start_obj;
};

typedef void (*steps_fn)(const struct sol_params, const struct sol_dev, int, long long, double, int,
                         int, int, int, int);

static steps_fn steps_kernel(const struct sjob *j)
{
    if (j->gl)
        return j->small ? k_steps<1, 1> : k_steps<0, 1>;
    return j->small ? k_steps<1, 0> : k_steps<0, 0>;
}

/*
 * Shared memory of one replica block: its layout, the candidates and the
 * edge chunk of a scan phase (the kept edges, their star masks and old
 * crossings). The chunk is every edge when that fits in LCAP_PREFER_BYTES or
 * takes at most 1024 edges (one scan phase per step), else the largest power
 * of two down to 1024 that does, else the largest that fits at all, at least
 * LCAP_MIN. *keep (when reuse is set): every edge in one chunk and every
 * candidate in one group, and the winner's crossings per kept edge (G x lcap
 * shorts) fit in LCAP_PREFER_BYTES too; the commit then reuses the scan's
 * kept edges instead of scanning again. gl: the layout stays in global
 * memory (k_steps<*, 1>), so it takes no shared memory. Returns 0 or
 * LCN_ETOOBIG.
 */
static int smem_plan(const struct gpu_ctx *ctx, const struct lcn_graph *g, int gl, int W,
                     int reuse, int chunk, int *G, int *dmax, int *lcap, int *keep, size_t *bytes)
{
    const int n = gl ? 0 : g->n;
    int d = g->max_degree > 0 ? g->max_degree : 1;
    int grp = W;
    if ((size_t)grp * d > 4096)
        grp = (int)(4096 / d);
    if (grp < 1)
        grp = 1;
    *G = grp;
    *dmax = d;
    size_t limit = (size_t)ctx->info.smem_per_block_optin - sizeof(struct sh_step);
    const int lmax = gl ? LCAP_MAX_GL : LCAP_MAX;
    int l = g->m < lmax ? ((g->m + 31) & ~31) : lmax;
    if (l < 32)
        l = 32;
#define LCAP_NEXT(l) ((l) > lmax ? lmax : ((l) & ((l) - 1) ? 1 << (31 - __builtin_clz((unsigned)(l))) : (l) / 2))
    /* four blocks per SM (a quarter of its 228 KB) before long chunks; with
     * the layout in global memory (graphs too large for shared memory) long
     * chunks first: a step scans every edge, chunk by chunk */
    while (!gl && l > 1024 && smem_bytes(n, g->m, W, grp, d, l, 0, 0) > LCAP_PREFER_BYTES)
        l = LCAP_NEXT(l);
    while (l > LCAP_MIN && smem_bytes(n, g->m, W, grp, d, l, 0, 0) > limit)
        l = LCAP_NEXT(l);
#undef LCAP_NEXT
    if (chunk > 0 && l > chunk)
        l = chunk < 32 ? 32 : chunk & ~31;
    *lcap = l;
    *keep = reuse && l >= g->m && grp >= W &&
            smem_bytes(n, g->m, W, grp, d, l, 1, 0) <= LCAP_PREFER_BYTES &&
            smem_bytes(n, g->m, W, grp, d, l, 1, 0) <= limit;
    *bytes = smem_bytes(n, g->m, W, grp, d, l, *keep, 0);
    return *bytes <= limit ? 0 : LCN_ETOOBIG;
}

extern "C" void gpu_ctx_last_run(const struct gpu_ctx *ctx, struct gpu_run_stats *st)
{
    *st = ctx->last_run;
}

extern "C" int gpu_fits(const struct gpu_ctx *ctx, const struct lcn_graph *g, char *why, size_t len)
{
    int G, dmax, lcap, keep;
    size_t bytes;
    if (g->n > ctx->cfg.max_nodes || g->m > ctx->cfg.max_edges) {
        snprintf(why, len, "graph of %d nodes and %d edges exceeds the gpu slot (%d nodes, %d edges)",
                 g->n, g->m, ctx->cfg.max_nodes, ctx->cfg.max_edges);
        return LCN_ETOOBIG;
    }
    if (g->max_degree > SOL_DMAX) {
        snprintf(why, len, "node degree %d exceeds the gpu solver's limit %d", g->max_degree,
                 SOL_DMAX);
        return LCN_ETOOBIG;
    }
    if (smem_plan(ctx, g, 1, 1, 0, 0, &G, &dmax, &lcap, &keep, &bytes)) {
        snprintf(why, len, "graph of degree %d does not fit the gpu's shared memory", g->max_degree);
        return LCN_ETOOBIG;
    }
    return 0;
}

/*
 * Whether the replicas get edge grids (issue 17; the knob evaluator), first
 * their shared memory: not with `scan`; else when the query's words (the
 * seen and dirty bits, the segments) fit on top of the scan's plan. A
 * querying launch asks for the larger shared memory (smem_ix), a scanning
 * one for the plan's. (Halving the chunk of a graph in global memory until
 * the bits fit, which 400,000 edges need, ran on the H200 at d96d0d8 and
 * failed its twin: at 60,000 nodes / 120,000 edges from a stress layout
 * every replica's scalars matched the twin's but the layout read back was
 * zeros. Not understood yet, so those graphs scan: docs/GPU.md.)
 */
static void sjob_ix_smem(struct sjob *j, int dyn_max)
{
    const struct lcn_graph *g = j->g;
    j->ix = j->ix_on = 0;
    j->smem_ix = j->smem;
    if (j->gp.evaluator == GPU_EVAL_SCAN)
        return;
    const size_t with = smem_bytes(j->gl ? 0 : g->n, g->m, j->gp.W, j->G, j->dmax, j->lcap,
                                   j->keep, 1);
    if (with > (size_t)dyn_max)
        return;
    j->smem_ix = with;
    j->ix = 1;
}

/*
 * Then the grids' room in the slot's pool (gpu_config.index_bytes): per
 * replica the cell starts and counts, the long, dirty and kept lists (m
 * each) and icap entries, index_items an edge or what the pool leaves (at
 * least one an edge; a build that overflows icap makes that replica scan
 * until its next build). The rebuild threshold: index_rebuild, else m / 8,
 * past SOL_EXACT_EDGES 16 sqrt(m) (every query walks the dirty list; a
 * build at 400,000 edges costs tens of ms, docs/GPU.md). Sets
 * the grids' views in j->dv.ix; no room: the scan.
 */
static void sjob_ix_pool(struct sjob *j)
{
    const struct lcn_graph *g = j->g;
    if (!j->ix)
        return;
    j->ix = 0;
    struct sol_eix *x = &j->dv.ix;
    x->g = eix_geom_for(g->width, g->height, g->m);
    x->ncell = x->g.gx * x->g.gy;
    const size_t m = (size_t)g->m, R = (size_t)j->R;
    const size_t fixed = 2 * (size_t)x->ncell + 1 + 3 * m + IX_STATE, room = j->s->ix_ints / R;
    if (room < fixed + LCN_MAX(m, 1))
        return;
    x->icap = (int)LCN_MIN(LCN_MIN((int64_t)j->gp.index_items * g->m, (int64_t)INT_MAX / 2),
                           (int64_t)(room - fixed));
    x->dthr = j->gp.index_rebuild > 0 ? j->gp.index_rebuild
              : g->m > SOL_EXACT_EDGES ? LCN_MAX(64, (int)(16 * sqrt((double)g->m)))
                                       : LCN_MAX(64, g->m / 8);
    x->nodes_ok = 1;
    for (int32_t v = 0; v < g->n && x->nodes_ok; v++)
        x->nodes_ok = g->inc_off[v + 1] > g->inc_off[v];
    int *base = j->s->ix_pool;
    x->start = base;
    x->fill = x->start + R * (x->ncell + 1);
    x->items = x->fill + R * x->ncell;
    x->lng = x->items + R * x->icap;
    x->dirty = x->lng + R * m;
    x->hl = x->dirty + R * m;
    x->state = x->hl + R * m;
    j->ix = j->ix_on = 1;
}

/* The job's plan: checks, the shared-memory plan and the kernel's limit,
 * the replica count (whole ladders). */
static int sjob_plan(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g,
                     const struct lcn_pt *start, const struct gpu_solver_params *gp,
                     struct sjob *j, char *why, size_t len)
{
    memset(j, 0, sizeof(*j));
    j->ctx = ctx;
    j->s = &ctx->slots[slot];
    j->g = g;
    j->gp = *gp;
    int rc = gpu_fits(ctx, g, why, len);
    if (rc)
        return rc;
    if (gp->W < 1 || gp->W > SOL_WMAX || gp->ladder < 1 || gp->ladder > SOL_LMAX ||
        gp->block < 32 || gp->block > 1024 || (gp->block & 31) || gp->t_lo <= 0 ||
        gp->t_hi < gp->t_lo || gp->beta <= 0 || gp->beta > 5 || gp->cool <= 0 || gp->cool > 1 ||
        gp->alt_every < 0 || (gp->alt_every > 0 && (gp->beta_alt <= 0 || gp->beta_alt > 5))) {
        snprintf(why, len, "invalid gpu solver parameters");
        return LCN_EINVAL;
    }
    /* the layout in shared memory when it fits (or is asked for), else in global memory */
    j->gl = gp->layout_mem == GPU_MEM_GLOBAL;
    rc = smem_plan(ctx, g, j->gl, gp->W, gp->reuse, gp->chunk, &j->G, &j->dmax, &j->lcap,
                   &j->keep, &j->smem);
    if (rc && gp->layout_mem == GPU_MEM_AUTO) {
        j->gl = 1;
        rc = smem_plan(ctx, g, 1, gp->W, gp->reuse, gp->chunk, &j->G, &j->dmax, &j->lcap,
                       &j->keep, &j->smem);
    }
    if (rc) {
        snprintf(why, len, "%d proposal workers do not fit the gpu's shared memory for this graph", gp->W);
        return LCN_ETOOBIG;
    }
    GPU_CHECK(ctx, cudaSetDevice(ctx->cfg.device));
    j->small = g->width <= GEOM_SMALL && g->height <= GEOM_SMALL;
    for (int32_t i = 0; j->small && i < g->n; i++)
        j->small = start[i].x >= 0 && start[i].x <= g->width && start[i].y >= 0 && start[i].y <= g->height;
    /* The limit is the function's, shared by every job of the process: always
     * the device's whole opt-in size, never this job's need, or a concurrent
     * job with a larger plan would see its next launch refused. */
    cudaFuncAttributes fa;
    GPU_CHECK(ctx, cudaFuncGetAttributes(&fa, steps_kernel(j)));
    const int dyn_max = ctx->info.smem_per_block_optin - (int)fa.sharedSizeBytes;
    if (dyn_max < 0 || (size_t)dyn_max < j->smem) {
        snprintf(why, len, "%d proposal workers do not fit the gpu's shared memory for this graph", gp->W);
        return LCN_ETOOBIG;
    }
    GPU_CHECK(ctx, cudaFuncSetAttribute(steps_kernel(j), cudaFuncAttributeMaxDynamicSharedMemorySize, dyn_max));
    sjob_ix_smem(j, dyn_max);
    j->B = gp->block;
    j->L = gp->ladder;
    int R = gp->replicas;
    if (R <= 0) {
        /* what one wave holds; with the layout in global memory and the
         * grids, of the querying launch (the replica count depends on the
         * evaluator only there) */
        int per_sm = 0;
        const size_t sm = j->gl && j->ix ? LCN_MAX(j->smem, j->smem_ix) : j->smem;
        GPU_CHECK(ctx, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, steps_kernel(j), j->B, sm));
        R = per_sm * ctx->info.sms;
    }
    if (R > ctx->cfg.max_replicas)
        R = ctx->cfg.max_replicas;
    R -= R % j->L;
    if (R < j->L) {
        snprintf(why, len, "%d replicas cannot hold one ladder of %d", R, j->L);
        return LCN_EINVAL;
    }
    j->R = R;
    sjob_ix_pool(j);
    if (gp->debug)
        fprintf(stderr,
                "lcn gpu plan: n %d m %d dmax %d gl %d small %d W %d G %d lcap %d keep %d smem %zu "
                "smem_ix %zu dyn_max %d R %d grids %d icap %d dthr %d nodes_ok %d cells %d pool %zu ints\n",
                g->n, g->m, j->dmax, j->gl, j->small, gp->W, j->G, j->lcap, j->keep, j->smem,
                j->smem_ix, dyn_max, j->R, j->ix, j->dv.ix.icap, j->dv.ix.dthr, j->dv.ix.nodes_ok,
                j->dv.ix.ncell, j->s->ix_ints);
    return 0;
}

/* The device pointers the kernels take (struct sol_dev), from the slot. */
static void sjob_bind(struct sjob *j)
{
    struct gpu_slot *s = j->s;
    struct sol_dev *dv = &j->dv;
    dv->edges = s->edges;
    dv->inc_off = s->inc_off;
    dv->inc = s->inc;
    dv->cur = s->cur;
    dv->best = s->best;
    dv->cnt = s->cnt;
    dv->hist = s->hist;
    dv->bcnt = s->bcnt;
    dv->rep = s->rep;
    dv->wtab = (const int64_t *)s->wtab;
    dv->ltab = j->ctx->ltab;
    dv->temps = s->temps;
    dv->rec = s->rec;
    dv->R = j->R;
    dv->L = j->L;
}

/* Every replica's state from the start (counts from the oracle when given,
 * start_c, else counted), uploaded and replicated on the device. */
static int sjob_upload(struct sjob *j, const struct lcn_pt *start, const int32_t *start_c,
                       uint64_t seed)
{
    struct gpu_ctx *ctx = j->ctx;
    const struct lcn_graph *g = j->g;
    struct gpu_slot *s = j->s;
    const int R = j->R, n = g->n, m = g->m;
    double *temps = (double *)xmalloc(sizeof(double) * (size_t)j->L);
    int32_t sigma0;
    solref_derive(&j->gp, g, seed, &j->sp, temps, &j->r16, &j->lin, &sigma0);
    int32_t *c0 = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)(m + 1));
    int32_t *h0 = (int32_t *)xcalloc((size_t)m + 1, sizeof(int32_t));
    const int ng = sol_ngroups(&j->sp, R, j->L);
    int64_t *w0 = (int64_t *)xmalloc(sizeof(int64_t) * 2 * (size_t)ng * (size_t)(m + 1));
    uint32_t *rk0 = (uint32_t *)xmalloc(sizeof(uint32_t) * 2 * (size_t)(m + 1));
    solref_fill_ratios(&j->sp, j->r16, rk0);
    if (start_c) /* the counts the oracle gave for this start: no recount */
        memcpy(c0, start_c, sizeof(int32_t) * (size_t)m);
    else
        crossings_grid(g, start, c0, 0);
    obj_from_counts(&j->start_obj, c0, m);
    for (int e = 0; e < m; e++)
        h0[c0[e]]++;
    sol_energy_tables(w0, &j->sp, j->start_obj.K, j->r16, j->lin, rk0);
    for (int h = 1; h < ng; h++) /* every group's pair starts at the start's K */
        memcpy(w0 + (size_t)2 * h * (m + 1), w0, sizeof(int64_t) * 2 * (size_t)(m + 1));
    int64_t E0[2] = {0, 0};
    for (int e = 0; e < m; e++) {
        E0[0] += w0[c0[e]];
        E0[1] += w0[m + 1 + c0[e]];
    }
    struct sol_replica *rp = (struct sol_replica *)xcalloc((size_t)R, sizeof(*rp));
    for (int r = 0; r < R; r++) {
        rp[r].E = E0[sol_table(&j->sp, r, j->L)];
        rp[r].cur = rp[r].best = j->start_obj;
        rp[r].sigma = LCN_MAX(j->sp.sigma_min, LCN_MIN(sigma0, j->sp.sigma_max));
        rp[r].slot = r % j->L;
        sol_fixed_cuts(&j->sp, rp[r].op_cut);
    }
    struct gpu_record rec0;
    memset(&rec0, 0, sizeof(rec0));
    rec0.best = j->start_obj;
    for (int h = 0; h < ng; h++) {
        rec0.grp[h].best = j->start_obj;
        rec0.grp[h].kref = j->start_obj.K;
    }

    int rc = gpu_upload_graph(ctx, s, g);
    if (!rc)
        rc = gpu_h2d(ctx, s, s->cur, start, sizeof(int2) * (size_t)n);
    if (!rc)
        rc = gpu_h2d(ctx, s, s->cnt, c0, sizeof(int) * (size_t)m);
    if (!rc)
        rc = gpu_h2d(ctx, s, s->bcnt, c0, sizeof(int) * (size_t)m);
    if (!rc)
        rc = gpu_h2d(ctx, s, s->hist, h0, sizeof(int) * (size_t)(m + 1));
    if (!rc)
        rc = gpu_h2d(ctx, s, s->wtab, w0, sizeof(int64_t) * 2 * (size_t)ng * (size_t)(m + 1));
    if (!rc)
        rc = gpu_h2d(ctx, s, s->rk, rk0, sizeof(uint32_t) * 2 * (size_t)(m + 1));
    if (!rc)
        rc = gpu_h2d(ctx, s, s->temps, temps, sizeof(double) * (size_t)j->L);
    if (!rc)
        rc = gpu_h2d(ctx, s, s->rep, rp, sizeof(*rp) * (size_t)R);
    if (!rc)
        rc = gpu_h2d(ctx, s, s->rec, &rec0, sizeof(rec0));
    if (!rc) {
        k_replicate<<<R, 256, 0, s->stream>>>(j->sp, j->dv);
        __atomic_fetch_add(&ctx->launches, 1, __ATOMIC_RELAXED);
        cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(s->stream);
        if (e != cudaSuccess)
            rc = gpu_check_fail(ctx, e, "k_replicate", __FILE__, __LINE__);
    }
    free(c0);
    free(h0);
    free(w0);
    free(rk0);
    free(rp);
    free(temps);
    return rc;
}

static int sjob_setup(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g,
                      const struct lcn_pt *start, const int32_t *start_c,
                      const struct gpu_solver_params *gp, uint64_t seed, struct sjob *j, char *why,
                      size_t len)
{
    int rc = sjob_plan(ctx, slot, g, start, gp, j, why, len);
    if (rc)
        return rc;
    sjob_bind(j);
    return sjob_upload(j, start, start_c, seed);
}

/* One batch launched: S steps of every replica, the boundary kernels and
 * the record's copy into the pinned mirror, all on the slot's stream
 * (sjob_wait synchronises). The test hook of gpu_ctx_inject_fault fails
 * here, before anything is launched. */
static int sjob_launch(struct sjob *j, int S, long long max_steps, double tscale)
{
    struct gpu_ctx *ctx = j->ctx;
    struct gpu_slot *s = j->s;
    int rc = gpu_fault_due(ctx);
    if (rc)
        return rc;
    GPU_CHECK(ctx, cudaSetDevice(ctx->cfg.device));
    const int ix = j->ix && j->ix_on;
    steps_kernel(j)<<<j->R, j->B, ix ? j->smem_ix : j->smem, s->stream>>>(
        j->sp, j->dv, S, max_steps, tscale, j->dmax, j->G, j->lcap, j->keep, ix);
    GPU_LAUNCHED(ctx);
    k_best<<<1, 1024, 0, s->stream>>>(j->sp, j->dv, (int64_t *)s->wtab, j->r16, j->lin, s->rk,
                                      j->batch);
    GPU_LAUNCHED(ctx);
    k_energy<<<j->R, 256, 0, s->stream>>>(j->sp, j->dv);
    GPU_LAUNCHED(ctx);
    k_exchange<<<1, 256, 0, s->stream>>>(j->sp, j->dv, j->batch, tscale);
    GPU_LAUNCHED(ctx);
    j->batch++;
    return gpu_d2h(ctx, s, s->rec_host, s->rec, sizeof(struct gpu_record));
}

/* Waits for the batch sjob_launch queued (the record is then in rec_host). */
static int sjob_wait(struct sjob *j)
{
    GPU_CHECK(j->ctx, cudaStreamSynchronize(j->s->stream));
    return 0;
}

/* One batch, launched and waited for. */
static int sjob_batch(struct sjob *j, int S, long long max_steps, double tscale)
{
    int rc = sjob_launch(j, S, max_steps, tscale);
    return rc ? rc : sjob_wait(j);
}

extern "C" int gpu_solver_debug_run(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g,
                                    const struct lcn_pt *start, const struct gpu_solver_params *gp,
                                    uint64_t seed, int32_t batches, int32_t steps,
                                    struct lcn_pt *cur, struct lcn_pt *best, int32_t *cnt,
                                    struct sol_replica *rep)
{
    if (!ctx->healthy)
        return LCN_EGPU_STICKY;
    if (slot < 0 || slot >= ctx->cfg.slots || gp->replicas < 1 || batches < 0 || steps < 1)
        return LCN_EINVAL;
    struct sjob j;
    char why[200];
    int rc = sjob_setup(ctx, slot, g, start, NULL, gp, seed, &j, why, sizeof(why));
    if (rc)
        return rc;
    for (int32_t b = 0; b < batches && !rc; b++) {
        double tscale = pow(gp->cool, (double)b / (batches > 0 ? batches : 1));
        rc = sjob_batch(&j, steps, 0, tscale);
    }
    size_t n = (size_t)g->n, m = (size_t)g->m, R = (size_t)j.R;
    if (!rc)
        rc = gpu_d2h(ctx, j.s, cur, j.s->cur, sizeof(int2) * R * n);
    if (!rc)
        rc = gpu_d2h(ctx, j.s, best, j.s->best, sizeof(int2) * R * n);
    if (!rc)
        rc = gpu_d2h(ctx, j.s, cnt, j.s->cnt, sizeof(int) * R * m);
    if (!rc)
        rc = gpu_d2h(ctx, j.s, rep, j.s->rep, sizeof(struct sol_replica) * R);
    if (!rc)
        GPU_CHECK(ctx, cudaStreamSynchronize(j.s->stream));
    return rc;
}

/*
 * The starting layout every replica begins from: the best (by tuple) of the
 * input layout (repaired), a stress layout, its crossing descent (on the
 * device: gpu_layout_descent), a force-directed layout, a
 * circle and a random layout, built on the host within a tenth of the
 * budget (at least the first one is always built), and the device's
 * force-directed layout.
 */
struct start_descender {
    struct gpu_ctx *ctx;
    int slot;
};

static int device_descent(void *arg, const struct lcn_graph *g, const struct lcn_stop *stop,
                          double *xy)
{
    struct start_descender *d = (struct start_descender *)arg;
    return gpu_layout_descent(d->ctx, d->slot, g, 0, stop, xy, NULL, NULL);
}

/* pts (counts c) replaces best (tuple *bo) when it is better or the first. */
static void keep_better(const struct lcn_graph *g, const struct lcn_pt *pts, const int32_t *c,
                        struct lcn_pt *best, struct lcn_obj *bo, int *have)
{
    struct lcn_obj o;
    obj_from_counts(&o, c, g->m);
    if (!*have || obj_cmp(&o, bo) < 0) {
        memcpy(best, pts, sizeof(*pts) * (size_t)g->n);
        *bo = o;
    }
    *have = 1;
}

#define FORCE_MAX_NODES 20000 /* the workspace's default size, where it always ran */

/* Who publishes the quick start of a large graph (build_start) at once. */
struct start_pub {
    void (*fn)(void *arg, const struct lcn_pt *pts, const struct lcn_obj *o);
    void *arg;
};

/*
 * The quick stress start (past LAYOUT_QUICK_NODES) published at once through
 * pub when the oracle agrees with its counts (validate_claim): the other
 * starts and the device's set-up take seconds at 200,000 nodes, and the
 * first layout should not wait for them (issue 17).
 */
static void publish_quick(const struct lcn_graph *g, const struct lcn_pt *pts, const int32_t *c,
                          const struct lcn_stop *hard, const struct start_pub *pub)
{
    struct lcn_obj o;
    obj_from_counts(&o, c, g->m);
    if (validate_claim(g, pts, &o, hard, NULL, NULL, 0) == 0)
        pub->fn(pub->arg, pts, &o);
}

static int build_start(struct gpu_ctx *ctx, int slot, const struct lcn_graph *g,
                       const struct engine_params *p, const struct lcn_stop *hard,
                       const struct start_pub *pub, struct lcn_pt *best)
{
    struct start_descender sd = {ctx, slot};
    const struct layout_descender dev = {device_descent, &sd};
    /* past LAYOUT_QUICK_NODES a quick stress first, as in the CPU engine */
    static const enum layout_kind order[] = {LAYOUT_INPUT,  LAYOUT_STRESS, LAYOUT_STRESS,
                                             LAYOUT_DESCENT, LAYOUT_FORCE, LAYOUT_CIRCLE,
                                             LAYOUT_RANDOM};
    int64_t share = (p->deadline_ns - p->start_ns) / 10;
    int64_t dl = p->start_ns + share;
    struct lcn_pt *pts = (struct lcn_pt *)xmalloc(sizeof(*pts) * (size_t)(g->n ? g->n : 1));
    int32_t *c = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)(g->m ? g->m : 1));
    struct lcn_obj bo = {0, 0, 0, 0};
    int have = 0, rc = 0;
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        enum layout_kind k = order[i];
        const int quick = i == 1;
        if ((k == LAYOUT_INPUT && !p->init) || (quick && g->n <= LAYOUT_QUICK_NODES))
            continue;
        if (!layout_start_worth(g, k, have, p->init, p->has_xy, dl, p->deadline_ns))
            continue;
        if (have && lcn_now_ns() >= dl)
            break;
        /* the descent runs on the device when there is one (the CPU's otherwise) */
        int r = layout_make_with(g, k, p->seed, p->init, p->has_xy,
                                 quick ? layout_quick_deadline(dl) : dl, hard,
                                 ctx && slot >= 0 ? &dev : NULL, pts);
        uint64_t tests;
        if (r == 0)
            r = crossings_grid_stop(g, pts, c, 0, hard, &tests);
        if (r == LCN_EDEADLINE || r == LCN_ECANCELLED) {
            if (!have)
                rc = r;
            break;
        }
        if (r == LCN_EINVAL) {
            rc = r;
            break;
        }
        if (r)
            continue;
        if (quick && pub)
            publish_quick(g, pts, c, hard, pub);
        keep_better(g, pts, c, best, &bo, &have);
    }
    /* the device's force-directed layout, when the host drawers left time;
     * its all-pairs launch costs n^2 per iteration and cannot be stopped, so
     * not past FORCE_MAX_NODES (50,000 nodes took more than 15 s) */
    if (!rc && ctx && slot >= 0 && g->n <= FORCE_MAX_NODES && lcn_now_ns() < dl &&
        !lcn_stop_check(hard)) {
        double *xy = (double *)xmalloc(sizeof(double) * 2 * (size_t)(g->n ? g->n : 1));
        if (gpu_layout_force(ctx, slot, g, 0, p->seed, xy) == 0 && layout_snap(g, xy, pts) == 0) {
            crossings_grid(g, pts, c, 0);
            keep_better(g, pts, c, best, &bo, &have);
        }
        free(xy);
    }
    free(pts);
    free(c);
    return rc ? rc : (have ? 0 : LCN_EINVAL);
}

/* Fetches the best layout of the record's replica and revalidates it;
 * the oracle gives up with the stop's code when stop fires (no verdict). */
static int publish(struct sjob *j, struct lcn_pt *out, struct lcn_obj *obj,
                   const struct lcn_stop *stop)
{
    struct gpu_record *rec = j->s->rec_host;
    int n = j->g->n;
    GPU_CHECK(j->ctx, cudaSetDevice(j->ctx->cfg.device));
    int rc = gpu_d2h(j->ctx, j->s, out, j->s->best + (size_t)rec->best_rep * n, sizeof(int2) * (size_t)n);
    if (rc)
        return rc;
    GPU_CHECK(j->ctx, cudaStreamSynchronize(j->s->stream));
    char diag[256];
    rc = validate_claim(j->g, out, &rec->best, stop, obj, diag, sizeof(diag));
    if (rc == LCN_ECORRUPT)
        fprintf(stderr, "lcn gpu: oracle rejected the device's best layout: %s\n", diag);
    return rc;
}

static void fill_tel(const struct gpu_record *rec, struct engine_telemetry *t, double elapsed)
{
    t->attempted = rec->attempted;
    t->valid = rec->valid;
    t->evaluated = rec->evaluated;
    t->selected = rec->selected;
    t->accepted = rec->accepted;
    t->rejected = rec->rejected;
    t->committed = rec->committed;
    t->best_updates = rec->best_updates;
    t->exchanges_attempted = rec->ex_att;
    t->exchanges_accepted = rec->ex_acc;
    t->pair_tests = rec->pair_tests;
    t->restarts = rec->restarts + rec->imports; /* an import restarts a replica from the run's elite */
    for (int k = 0; k < SOL_OPS; k++) {
        t->ops[k].tried = rec->op[k][0];
        t->ops[k].valid = rec->op[k][1];
        t->ops[k].accepted = rec->op[k][2];
        t->ops[k].improved = rec->op[k][3];
    }
    t->elapsed_s = elapsed;
}

/*
 * One engine run, set-up, loop and teardown apart (grun_new, grun_loop,
 * grun_finish, grun_free): every buffer and the slots are released in
 * grun_free alone, whatever phase failed. A run has one island per context
 * (gpu_engine_run: one; gpu_engine_run_islands: several), all driven from
 * the calling thread: each batch is launched on every island's stream, then
 * waited for on each, so the devices work at the same time.
 */
struct grun {
    int ni;                                   /* islands (contexts) */
    struct gpu_ctx *ctx[ENGINE_MAX_DEVICES];  /* island i's context */
    int slot[ENGINE_MAX_DEVICES];             /* its slot, -1 before one is taken */
    struct sjob *j;                           /* ni islands' device state */
    uint64_t imports[ENGINE_MAX_DEVICES];     /* replicas that took the elite, per island */
    int bi;                                   /* the island holding the run's best */
    const struct lcn_graph *g;
    const struct engine_params *p;
    struct gpu_solver_params gp;
    struct lcn_stop hard; /* the hard limit of every phase (stop.h; issue 14) */
    int64_t t_val;        /* one oracle pass on the start */
    int64_t reserve;      /* what the final oracle passes need before the deadline */
    double t0;
    struct lcn_pt *start, *last, *buf; /* last: the last layout the oracle passed */
    struct lcn_obj last_obj, best, pub_obj;
    struct lcn_obj ex_obj; /* the elite last exchanged between islands */
    int ex_done;
    struct lcn_pt *elite; /* exchange buffers: the elite's layout and counts */
    int32_t *elite_c, *elite_h;
    double ttt;
    uint64_t fetches;
    int64_t last_pub;
    int pub_start;             /* a start was published (grun_publish_start), tuple start_obj */
    struct lcn_obj start_obj;
    enum engine_stop stop;
    /* the evaluator per batch (grun_ev_pick): this batch's, auto's choice,
     * the trial batches' time and steps per path, batches per path */
    int ev_cur, ev_pick;
    int64_t ev_ns[2], ev_steps[2];
    uint64_t ev_batches[2];
};

static void grun_free(struct grun *r)
{
    free(r->buf);
    free(r->last);
    free(r->start);
    free(r->elite);
    free(r->elite_c);
    free(r->elite_h);
    free(r->j);
    for (int i = 0; i < r->ni; i++)
        if (r->slot[i] >= 0)
            gpu_slot_release(r->ctx[i], r->slot[i]);
}

/* Island i's seed: island 0 runs the single-device run's chains. */
static uint64_t island_seed(uint64_t seed, int i)
{
    return seed + 0x9E3779B97F4A7C15ull * (uint64_t)i;
}

/* The knobs and a slot on every context (r->ctx, r->ni set). */
static int grun_knobs(struct grun *r, const struct gpu_solver_params *gsp)
{
    const struct engine_params *p = r->p;
    if (gsp)
        r->gp = *gsp;
    else
        gpu_solver_params_default(&r->gp);
    char terr[200];
    if (gpu_solver_params_parse(&r->gp, p->tuning, terr, sizeof(terr))) {
        fprintf(stderr, "lcn gpu: %s\n", terr);
        return LCN_EINVAL;
    }
    if (p->replicas > 0)
        r->gp.replicas = p->replicas;
    if (p->proposal_workers > 0)
        r->gp.W = p->proposal_workers;
    if (p->move_limit > 0)
        r->gp.max_steps = p->move_limit;
    for (int i = 0; i < r->ni; i++) {
        int slot = gpu_slot_acquire(r->ctx[i]);
        if (slot < 0)
            return slot;
        r->slot[i] = slot;
    }
    return 0;
}

/* Every island's device state from the start (its counts vc from the
 * oracle): the run's replicas split over the islands. */
static int grun_islands(struct grun *r, const int32_t *vc)
{
    char why[200] = "";
    int rc = 0;
    r->j = (struct sjob *)xcalloc((size_t)r->ni, sizeof(*r->j));
    for (int i = 0; i < r->ni && !rc; i++) {
        struct gpu_solver_params gp = r->gp;
        if (r->ni > 1 && gp.replicas > 0)
            gp.replicas = LCN_MAX(gp.replicas / r->ni, 1);
        rc = sjob_setup(r->ctx[i], r->slot[i], r->g, r->start, vc, &gp, island_seed(r->p->seed, i),
                        &r->j[i], why, sizeof(why));
    }
    if (rc && why[0])
        fprintf(stderr, "lcn gpu: %s\n", why);
    return rc;
}

/* The knobs, the slots, the start (revalidated by the oracle, whose time
 * sets the final reserve) and the device state. */
/* A start the oracle passed (tuple *o): progress and layout, unless an
 * earlier start published was as good (r->pub_start). */
static void grun_publish_start(struct grun *r, const struct lcn_pt *pts, const struct lcn_obj *o)
{
    const struct engine_params *p = r->p;
    if (r->pub_start && obj_cmp(o, &r->start_obj) >= 0)
        return;
    r->pub_start = 1;
    r->start_obj = *o;
    const int64_t now = lcn_now_ns();
    struct engine_event ev = {(now - r->t0) / 1e9, "start", *o};
    if (p->on_progress)
        p->on_progress(p->ctx, &ev);
    if (p->on_layout)
        p->on_layout(p->ctx, pts, o, ev.elapsed_s);
    if (p->target_k >= 0 && o->K <= p->target_k && r->ttt < 0)
        r->ttt = ev.elapsed_s;
}

static void grun_publish_quick(void *arg, const struct lcn_pt *pts, const struct lcn_obj *o)
{
    grun_publish_start((struct grun *)arg, pts, o);
}

static int grun_new(struct grun *r, struct gpu_ctx *const *ctx, int n, const struct lcn_graph *g,
                    const struct engine_params *p, const struct gpu_solver_params *gsp)
{
    memset(r, 0, sizeof(*r));
    r->ni = n;
    for (int i = 0; i < n; i++) {
        r->ctx[i] = ctx[i];
        r->slot[i] = -1;
    }
    r->g = g;
    r->p = p;
    r->ttt = -1;
    r->stop = ENGINE_STOP_DEADLINE;
    r->ev_pick = 1;
    int rc = grun_knobs(r, gsp);
    if (rc)
        return rc;
    r->t0 = (double)p->start_ns;
    r->hard = lcn_stop_run(p, lcn_now_ns());
    size_t bytes = sizeof(struct lcn_pt) * (size_t)(g->n ? g->n : 1);
    r->start = (struct lcn_pt *)xmalloc(bytes);
    r->last = (struct lcn_pt *)xmalloc(bytes);
    r->buf = (struct lcn_pt *)xmalloc(bytes);
    const struct start_pub pub = {grun_publish_quick, r};
    rc = build_start(r->ctx[0], r->slot[0], g, p, &r->hard, &pub, r->start);
    /* the oracle passes the start before anything is published (its counts
     * then seed the device state); timing it tells how early the search
     * must stop for the oracle passes of its result, the host's and the
     * caller's (issue 14) */
    struct lcn_report vr;
    memset(&vr, 0, sizeof(vr));
    int64_t tv = lcn_now_ns();
    if (!rc) {
        rc = validate_layout_stop(g, r->start, 8, &r->hard, &vr);
        if (!rc && !vr.valid)
            rc = LCN_ECORRUPT;
    }
    r->t_val = lcn_now_ns() - tv;
    r->reserve = lcn_final_reserve_ns(p, r->t_val);
    if (!rc) /* published before the device is set up: the first layout comes sooner */
        grun_publish_start(r, r->start, &vr.obj);
    if (!rc)
        rc = grun_islands(r, vr.c);
    report_release(&vr);
    if (rc)
        return rc;
    memcpy(r->last, r->start, sizeof(struct lcn_pt) * (size_t)g->n);
    r->last_obj = r->best = r->j[0].start_obj;
    return 0;
}

/* The record of the island holding the run's best. */
static const struct gpu_record *grun_rec(const struct grun *r)
{
    return r->j[r->bi].s->rec_host;
}

/* Fetches, revalidates and publishes the device's best layout at el
 * seconds. Returns 0 (published), 1 (the stop fired first: no verdict,
 * nothing published) or an error code. */
static int grun_publish(struct grun *r, int64_t now, double el)
{
    int rc = publish(&r->j[r->bi], r->buf, &r->pub_obj, &r->hard);
    if (rc == LCN_EDEADLINE || rc == LCN_ECANCELLED)
        return 1;
    if (rc)
        return rc;
    r->fetches++;
    memcpy(r->last, r->buf, sizeof(struct lcn_pt) * (size_t)r->g->n);
    r->last_obj = r->pub_obj;
    if (r->p->on_layout)
        r->p->on_layout(r->p->ctx, r->buf, &r->pub_obj, el);
    r->last_pub = now;
    return 0;
}

/* The fewest steps any replica of the run has made. */
static unsigned long long grun_min_step(const struct grun *r)
{
    unsigned long long ms = r->j[0].s->rec_host->min_step;
    for (int i = 1; i < r->ni; i++)
        ms = LCN_MIN(ms, (unsigned long long)r->j[i].s->rec_host->min_step);
    return ms;
}

/* Why the loop should stop before the next batch (-1: it should not). */
static int grun_should_stop(const struct grun *r, int64_t now, int64_t batch_ns)
{
    const struct engine_params *p = r->p;
    if (p->cancel && __atomic_load_n(p->cancel, __ATOMIC_RELAXED))
        return ENGINE_STOP_CANCELLED;
    if (p->stop_at_target && r->ttt >= 0)
        return ENGINE_STOP_TARGET;
    if (r->gp.max_steps > 0 && (long long)grun_min_step(r) >= r->gp.max_steps && r->j[0].batch > 0)
        return ENGINE_STOP_LIMIT;
    if (now + batch_ns + r->reserve >= p->deadline_ns)
        return ENGINE_STOP_DEADLINE;
    return -1;
}

/* One batch on every island: all launched, then each waited for (the
 * islands already launched are waited for when a later one fails, so no
 * slot is released with work in flight); r->bi then names the island with
 * the best record (ties: the lowest). */
static int grun_batch(struct grun *r, int S, double tscale)
{
    int rc = 0, launched = 0;
    for (; launched < r->ni && !rc; launched++)
        rc = sjob_launch(&r->j[launched], S, r->gp.max_steps, tscale);
    for (int i = 0; i < launched; i++) {
        int w = sjob_wait(&r->j[i]);
        if (!rc)
            rc = w;
    }
    if (rc)
        return rc;
    r->bi = 0;
    for (int i = 1; i < r->ni; i++)
        if (obj_cmp(&r->j[i].s->rec_host->best, &r->j[r->bi].s->rec_host->best) < 0)
            r->bi = i;
    return 0;
}

/* A replica's current tuple and index, for ordering by worst first. */
struct by_cur {
    struct lcn_obj cur;
    int r;
};

static int worse_first(const void *a, const void *b)
{
    const struct by_cur *x = (const struct by_cur *)a, *y = (const struct by_cur *)b;
    int c = obj_cmp(&y->cur, &x->cur);
    return c ? c : (y->r > x->r) - (y->r < x->r); /* ties: the highest index first */
}

/* Picks the k replicas of rp[0..R) with the worst current tuples into
 * pick[] (worst first; ties: the highest index). Returns how many. */
static int worst_replicas(const struct sol_replica *rp, int R, int k, int *pick)
{
    struct by_cur *v = (struct by_cur *)xmalloc(sizeof(*v) * (size_t)(R > 0 ? R : 1));
    for (int r = 0; r < R; r++) {
        v[r].cur = rp[r].cur;
        v[r].r = r;
    }
    qsort(v, (size_t)R, sizeof(*v), worse_first);
    int got = k < R ? k : R;
    for (int q = 0; q < got; q++)
        pick[q] = v[q].r;
    free(v);
    return got;
}

/* Island j's `take` worst replicas take the elite (layout e, counts ec,
 * histogram eh, tuple eo): their current state, and their best when the
 * elite beats it; the energy under the replica's table. Returns the number
 * replaced or an error code. */
static int island_import(struct sjob *j, const struct lcn_pt *e, const int32_t *ec,
                         const int32_t *eh, const struct lcn_obj *eo, int take)
{
    struct gpu_ctx *ctx = j->ctx;
    struct gpu_slot *s = j->s;
    const size_t n = (size_t)j->g->n, m = (size_t)j->g->m;
    GPU_CHECK(ctx, cudaSetDevice(ctx->cfg.device));
    struct sol_replica *rp = (struct sol_replica *)xmalloc(sizeof(*rp) * (size_t)j->R);
    const size_t ng = (size_t)sol_ngroups(&j->sp, j->R, j->L);
    int64_t *w = (int64_t *)xmalloc(sizeof(int64_t) * 2 * ng * (m + 1));
    int *pick = (int *)xmalloc(sizeof(int) * (size_t)(take > 0 ? take : 1));
    int rc = gpu_d2h(ctx, s, rp, s->rep, sizeof(*rp) * (size_t)j->R);
    if (!rc)
        rc = gpu_d2h(ctx, s, w, s->wtab, sizeof(int64_t) * 2 * ng * (m + 1));
    if (!rc)
        rc = sjob_wait(j);
    int k = rc ? 0 : worst_replicas(rp, j->R, take, pick);
    for (int q = 0; q < k && !rc; q++) {
        const int r = pick[q];
        struct sol_replica *x = &rp[r];
        const int64_t *wt = w + (size_t)sol_wtab_of(&j->sp, r, j->R, j->L) * (m + 1);
        int64_t E = 0;
        for (size_t i = 0; i < m; i++)
            E += wt[ec[i]];
        x->cur = *eo;
        x->E = E;
        rc = gpu_h2d(ctx, s, s->cur + (size_t)r * n, e, sizeof(int2) * n);
        if (!rc && j->dv.ix.state) { /* a new layout: its grid is rebuilt */
            static const int stale = 0;
            rc = gpu_h2d(ctx, s, j->dv.ix.state + (size_t)r * IX_STATE, &stale, sizeof(stale));
        }
        if (!rc)
            rc = gpu_h2d(ctx, s, s->cnt + (size_t)r * m, ec, sizeof(int) * m);
        if (!rc)
            rc = gpu_h2d(ctx, s, s->hist + (size_t)r * (m + 1), eh, sizeof(int) * (m + 1));
        if (!rc && obj_cmp(eo, &x->best) < 0) {
            x->best = *eo;
            rc = gpu_h2d(ctx, s, s->best + (size_t)r * n, e, sizeof(int2) * n);
            if (!rc)
                rc = gpu_h2d(ctx, s, s->bcnt + (size_t)r * m, ec, sizeof(int) * m);
        }
        if (!rc)
            rc = gpu_h2d(ctx, s, s->rep + r, x, sizeof(*x));
    }
    if (!rc)
        rc = sjob_wait(j); /* the host buffers are freed next */
    free(rp);
    free(w);
    free(pick);
    return rc ? rc : k;
}

/* The elite exchange between islands (a run across GPUs): when the run's
 * best is new since the last exchange, its layout and counts are fetched
 * from its island and the island_take worst replicas of every island
 * whose best is worse take it. */
static int grun_exchange(struct grun *r)
{
    const struct gpu_record *rec = grun_rec(r);
    if (r->ni < 2 || r->gp.island_take <= 0 || (r->ex_done && obj_cmp(&rec->best, &r->ex_obj) >= 0))
        return 0;
    struct sjob *src = &r->j[r->bi];
    const size_t n = (size_t)r->g->n, m = (size_t)r->g->m;
    if (!r->elite) {
        r->elite = (struct lcn_pt *)xmalloc(sizeof(struct lcn_pt) * (n ? n : 1));
        r->elite_c = (int32_t *)xmalloc(sizeof(int32_t) * (m ? m : 1));
        r->elite_h = (int32_t *)xmalloc(sizeof(int32_t) * (m + 1));
    }
    GPU_CHECK(src->ctx, cudaSetDevice(src->ctx->cfg.device));
    int rc = gpu_d2h(src->ctx, src->s, r->elite, src->s->best + (size_t)rec->best_rep * n,
                     sizeof(int2) * n);
    if (!rc)
        rc = gpu_d2h(src->ctx, src->s, r->elite_c, src->s->bcnt + (size_t)rec->best_rep * m,
                     sizeof(int) * m);
    if (!rc)
        rc = sjob_wait(src);
    if (rc)
        return rc;
    memset(r->elite_h, 0, sizeof(int32_t) * (m + 1));
    for (size_t i = 0; i < m; i++)
        r->elite_h[r->elite_c[i]]++;
    const struct lcn_obj eo = rec->best;
    for (int i = 0; i < r->ni; i++) {
        if (i == r->bi || obj_cmp(&r->j[i].s->rec_host->best, &eo) <= 0)
            continue;
        int k = island_import(&r->j[i], r->elite, r->elite_c, r->elite_h, &eo, r->gp.island_take);
        if (k < 0)
            return k;
        r->imports[i] += (uint64_t)k;
    }
    r->ex_obj = eo;
    r->ex_done = 1;
    return 0;
}

/* The telemetry of the run: island 0's record for one device; the sums
 * over the islands, and each island in tel->devices, for several. */
static void grun_tel(const struct grun *r, struct engine_telemetry *t, double el)
{
    fill_tel(r->j[0].s->rec_host, t, el);
    if (r->ni < 2)
        return;
    const int32_t *dev = r->p->devices;
    t->n_devices = r->ni;
    for (int i = 0; i < r->ni; i++) {
        struct engine_telemetry x;
        memset(&x, 0, sizeof(x));
        fill_tel(r->j[i].s->rec_host, &x, el);
        if (i > 0)
            engine_telemetry_add(t, &x);
        t->devices[i].device = dev ? dev[i] : i;
        t->devices[i].evaluated = x.evaluated;
        t->devices[i].accepted = x.accepted;
        t->devices[i].imports = r->imports[i];
    }
}

/*
 * The evaluator of the next batch. With evaluator=auto both paths are timed
 * per step over trial batches, alternately (batches 2..7 of every
 * EV_PERIOD), and the faster runs the others: the grid is exact, so either
 * path gives the same trajectory and only the speed differs; the layout's
 * shape changes during a run, hence the trials again every period.
 */
#define EV_PERIOD 512
#define EV_TRIALS 6

static void grun_ev_pick(struct grun *r)
{
    int on = r->gp.evaluator != GPU_EVAL_SCAN;
    if (r->gp.evaluator == GPU_EVAL_AUTO) {
        const unsigned long long b = r->j[0].batch % EV_PERIOD;
        on = b >= 2 && b < 2 + EV_TRIALS ? !(b & 1) : r->ev_pick;
    }
    r->ev_cur = on && r->j[0].ix;
    for (int i = 0; i < r->ni; i++)
        r->j[i].ix_on = on;
}

/* After a batch of S steps that took ns: the trial's sums, and at the
 * trials' end auto's choice (the grid on a tie). */
static void grun_ev_note(struct grun *r, int64_t ns, int S)
{
    r->ev_batches[r->ev_cur]++;
    if (r->gp.evaluator != GPU_EVAL_AUTO || !r->j[0].ix)
        return;
    const unsigned long long b = (r->j[0].batch - 1) % EV_PERIOD;
    if (b >= 2 && b < 2 + EV_TRIALS) {
        r->ev_ns[r->ev_cur] += ns;
        r->ev_steps[r->ev_cur] += S;
    }
    if (b == 1 + EV_TRIALS) {
        r->ev_pick = (double)r->ev_ns[1] * (double)r->ev_steps[0] <=
                     (double)r->ev_ns[0] * (double)r->ev_steps[1];
        if (r->gp.debug)
            fprintf(stderr, "lcn gpu auto: batch %llu: scan %.1f us/step (%lld steps), grid %.1f us/step (%lld steps): %s\n",
                    (unsigned long long)r->j[0].batch, r->ev_ns[0] / 1e3 / (double)LCN_MAX(r->ev_steps[0], 1),
                    (long long)r->ev_steps[0], r->ev_ns[1] / 1e3 / (double)LCN_MAX(r->ev_steps[1], 1),
                    (long long)r->ev_steps[1], r->ev_pick ? "grid" : "scan");
        r->ev_ns[0] = r->ev_ns[1] = r->ev_steps[0] = r->ev_steps[1] = 0;
    }
}

/* Batches until a stop: progress on each better best, a checkpoint (the
 * layout, revalidated) at most every checkpoint interval and at once when
 * the target is first reached, telemetry every interval, and the islands'
 * elite exchange every island_every batches. */
static int grun_loop(struct grun *r)
{
    const struct engine_params *p = r->p;
    int64_t now = lcn_now_ns();
    double span = (double)(p->deadline_ns - p->start_ns);
    if (span <= 0)
        span = 1;
    struct engine_event ev = {(now - r->t0) / 1e9, "start", r->best};
    r->last_pub = now;
    int64_t last_tel = now, batch_ns = 0;
    int64_t tel_iv = p->telemetry_interval_ns > 0 ? p->telemetry_interval_ns : 1000000000;
    int64_t ck_iv = p->checkpoint_interval_ns > 0 ? p->checkpoint_interval_ns : 1000000000;
    /* steps per launch, one count per evaluator (auto's trials alternate
     * them, and at 400,000 edges a scanning step costs a hundred querying ones) */
    int S_ev[2] = {r->gp.batch_steps > 0 ? r->gp.batch_steps : 4, 0}, pending = 0, rc = 0;
    S_ev[1] = S_ev[0];
    struct engine_telemetry tel;
    memset(&tel, 0, sizeof(tel));
    for (;;) {
        now = lcn_now_ns();
        int why = grun_should_stop(r, now, batch_ns);
        if (why >= 0) {
            r->stop = (enum engine_stop)why;
            return 0;
        }
        double prog = (now - p->start_ns) / span;
        double tscale = pow(r->gp.cool, prog < 0 ? 0 : (prog > 1 ? 1 : prog));
        int64_t b0 = lcn_now_ns();
        grun_ev_pick(r);
        const int evi = r->ev_cur;
        int S = S_ev[evi];
        if ((rc = grun_batch(r, S, tscale)))
            return rc;
        batch_ns = lcn_now_ns() - b0;
        grun_ev_note(r, batch_ns, S);
        if (r->gp.batch_steps <= 0) {
            /* keep a launch near 20 ms: the host checks the deadline at least every ~50 ms */
            double f = 20e6 / (double)(batch_ns > 0 ? batch_ns : 1);
            f = f > 2 ? 2 : (f < 0.25 ? 0.25 : f);
            S = (int)(S * f);
            S_ev[evi] = S < 1 ? 1 : (S > 1 << 16 ? 1 << 16 : S);
        }
        const struct gpu_record *rec = grun_rec(r);
        now = lcn_now_ns();
        double el = (now - r->t0) / 1e9;
        if (obj_cmp(&rec->best, &r->best) < 0) {
            r->best = rec->best;
            ev.elapsed_s = el;
            ev.stage = "anneal";
            ev.best = r->best;
            if (p->on_progress)
                p->on_progress(p->ctx, &ev);
            pending = 1;
        }
        /* the time to target counts only once the oracle accepted the layout */
        int to_target = pending && p->target_k >= 0 && r->ttt < 0 && r->best.K <= p->target_k;
        if (to_target || (pending && now - r->last_pub >= ck_iv)) {
            rc = grun_publish(r, now, el);
            if (rc == 1)
                continue; /* stopping anyway: no verdict, nothing published */
            if (rc)
                return rc;
            if (to_target)
                r->ttt = el;
            pending = 0;
        }
        if (now - last_tel >= tel_iv && p->on_telemetry) {
            grun_tel(r, &tel, el);
            p->on_telemetry(p->ctx, &tel);
            last_tel = now;
        }
        if (r->ni > 1 && r->j[0].batch % (unsigned long long)r->gp.island_every == 0 &&
            (rc = grun_exchange(r)))
            return rc;
    }
}

/* The final layout: fetched and revalidated, then published once. The
 * oracle has until the deadline less the caller's passes (at least a little
 * grace); a cancelled run validates only when the oracle is cheap.
 * Otherwise, or when the oracle cannot finish in time, the last validated
 * layout is the result (issue 14). */
static int grun_finish(struct grun *r, struct engine_result *out)
{
    const struct engine_params *p = r->p;
    int cancelled = r->stop == ENGINE_STOP_CANCELLED;
    struct lcn_stop dl = lcn_final_stop(p, r->t_val);
    int fr = LCN_EDEADLINE;
    if (r->j[0].batch > 0 && obj_cmp(&grun_rec(r)->best, &r->last_obj) != 0 &&
        (!cancelled || lcn_final_cheap(p, r->t_val)))
        fr = publish(&r->j[r->bi], r->buf, &r->pub_obj, &dl);
    if (fr != LCN_EDEADLINE && fr)
        return fr;
    if (fr == LCN_EDEADLINE) {
        memcpy(r->buf, r->last, sizeof(struct lcn_pt) * (size_t)r->g->n);
        r->pub_obj = r->last_obj;
    }
    out->elapsed_s = (lcn_now_ns() - r->t0) / 1e9;
    if (p->on_layout)
        p->on_layout(p->ctx, r->buf, &r->pub_obj, out->elapsed_s);
    out->best = r->pub_obj;
    out->layout = r->buf;
    r->buf = NULL;
    out->time_to_target_s = r->ttt;
    out->stop = r->stop;
    out->backend = "gpu";
    out->evaluator = r->ev_batches[1] > r->ev_batches[0] ? "device-index" : "device-scan";
    out->threads = 1;
    out->replicas = 0;
    for (int i = 0; i < r->ni; i++)
        out->replicas += r->j[i].R;
    out->proposal_workers = r->gp.W;
    if (r->j[0].batch > 0)
        grun_tel(r, &out->tel, out->elapsed_s);
    out->tel.elapsed_s = out->elapsed_s;
    return 0;
}

/* The run's traffic and allocations while it searched (test_gpu's residency
 * check), on the first island's context. */
static void grun_stats(struct grun *r, const struct gpu_counters *k0)
{
    struct gpu_counters k1;
    gpu_ctx_counters(r->ctx[0], &k1);
    struct gpu_run_stats *st = &r->ctx[0]->last_run;
    st->batches = r->j[0].batch;
    st->mallocs = k1.mallocs - k0->mallocs;
    st->frees = k1.frees - k0->frees;
    st->h2d_bytes = k1.h2d_bytes - k0->h2d_bytes;
    st->d2h_bytes = k1.d2h_bytes - k0->d2h_bytes;
    st->record_bytes = sizeof(struct gpu_record);
    st->layout_fetches = r->fetches;
    st->layout_bytes = sizeof(int2) * (size_t)r->g->n;
}

extern "C" int gpu_engine_run_islands(struct gpu_ctx *const *ctx, int n, const struct lcn_graph *g,
                                      const struct engine_params *p,
                                      const struct gpu_solver_params *gsp, struct engine_result *out)
{
    memset(out, 0, sizeof(*out));
    if (n < 1 || n > ENGINE_MAX_DEVICES)
        return LCN_EINVAL;
    for (int i = 0; i < n; i++)
        if (!ctx[i] || !ctx[i]->healthy)
            return ctx[i] ? LCN_EGPU_STICKY : LCN_ENOGPU;
    struct grun *r = (struct grun *)xmalloc(sizeof(*r));
    int rc = grun_new(r, ctx, n, g, p, gsp);
    if (!rc) {
        struct gpu_counters k0;
        gpu_ctx_counters(ctx[0], &k0);
        rc = grun_loop(r);
        grun_stats(r, &k0);
    }
    if (!rc)
        rc = grun_finish(r, out);
    grun_free(r);
    free(r);
    return rc;
}

extern "C" int gpu_engine_run(struct gpu_ctx *ctx, const struct lcn_graph *g,
                              const struct engine_params *p, const struct gpu_solver_params *gsp,
                              struct engine_result *out)
{
    if (!ctx) {
        memset(out, 0, sizeof(*out));
        return LCN_ENOGPU;
    }
    return gpu_engine_run_islands(&ctx, 1, g, p, gsp, out);
}
