#include "server/store_blob.h"

#include "util.h"

void *store_layout_blob(const struct lcn_pt *p, int32_t n, size_t *bytes)
{
    *bytes = (size_t)n * 8;
    unsigned char *b = xmalloc((size_t)n * 8 + 1);
    for (int32_t i = 0; i < n; i++) {
        uint32_t x = (uint32_t)p[i].x, y = (uint32_t)p[i].y;
        for (int k = 0; k < 4; k++) {
            b[8 * (size_t)i + (size_t)k] = (unsigned char)(x >> (8 * k));
            b[8 * (size_t)i + 4 + (size_t)k] = (unsigned char)(y >> (8 * k));
        }
    }
    return b;
}

void store_blob_layout(const unsigned char *b, int32_t n, struct lcn_pt *p)
{
    for (int32_t i = 0; i < n; i++) {
        uint32_t x = 0, y = 0;
        for (int k = 0; k < 4; k++) {
            x |= (uint32_t)b[8 * (size_t)i + (size_t)k] << (8 * k);
            y |= (uint32_t)b[8 * (size_t)i + 4 + (size_t)k] << (8 * k);
        }
        p[i].x = (int32_t)x;
        p[i].y = (int32_t)y;
    }
}
