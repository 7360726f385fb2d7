#include "objective.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "util.h"

int obj_from_counts(struct lcn_obj *o, const int32_t *c, int32_t m)
{
    int32_t K = 0, nK = 0;
    int64_t phi = 0, sum = 0;
    for (int32_t e = 0; e < m; e++) {
        if (c[e] > K) {
            K = c[e];
            nK = 1;
        } else if (c[e] == K) {
            nK++;
        }
        phi += (int64_t)c[e] * c[e];
        sum += c[e];
    }
    o->K = K;
    o->nK = m ? nK : 0;
    o->Phi = phi;
    o->C = sum / 2;
    return (sum & 1) ? LCN_ECORRUPT : 0;
}

void hist_init(struct lcn_hist *hs, const int32_t *c, int32_t m)
{
    hs->m = m;
    hs->h = xcalloc((size_t)m + 1, sizeof(int32_t));
    hs->K = 0;
    hs->phi = hs->sum = 0;
    for (int32_t e = 0; e < m; e++) {
        LCN_ASSERT(c[e] >= 0 && c[e] <= m);
        hs->h[c[e]]++;
        hs->phi += (int64_t)c[e] * c[e];
        hs->sum += c[e];
        if (c[e] > hs->K)
            hs->K = c[e];
    }
}

void hist_release(struct lcn_hist *hs)
{
    free(hs->h);
    memset(hs, 0, sizeof(*hs));
}

void hist_copy(struct lcn_hist *dst, const struct lcn_hist *src)
{
    LCN_ASSERT(dst->m == src->m);
    memcpy(dst->h, src->h, sizeof(int32_t) * ((size_t)src->m + 1));
    dst->K = src->K;
    dst->phi = src->phi;
    dst->sum = src->sum;
}

void hist_change(struct lcn_hist *hs, int32_t c, int32_t d)
{
    int32_t nc = c + d;
    LCN_ASSERT(c >= 0 && c <= hs->m && nc >= 0 && nc <= hs->m);
    hs->h[c]--;
    hs->h[nc]++;
    hs->phi += (int64_t)nc * nc - (int64_t)c * c;
    hs->sum += d;
    if (nc > hs->K)
        hs->K = nc;
    while (hs->K > 0 && hs->h[hs->K] == 0)
        hs->K--;
}

void hist_obj(const struct lcn_hist *hs, struct lcn_obj *o)
{
    o->K = hs->K;
    o->nK = hs->m ? hs->h[hs->K] : 0;
    o->Phi = hs->phi;
    o->C = hs->sum / 2;
}

void obj_format(const struct lcn_obj *o, char *buf, int len)
{
    snprintf(buf, (size_t)len, "(%d, %d, %lld, %lld)", o->K, o->nK, (long long)o->Phi,
             (long long)o->C);
}

double obj_balance_ratio(const struct lcn_obj *o, int32_t m)
{
    if (m <= 0 || o->C <= 0)
        return 0;
    int64_t floor_k = (2 * o->C + m - 1) / m;
    return (double)o->K / (double)floor_k;
}
