/*
 * store_blob.h - a checkpoint's layout as both job stores keep it (store.c,
 * store_pg.c): n points as little-endian int32 x, y pairs, 8 n bytes. A
 * module of its own so that neither store calls into the other.
 */
#ifndef LCN_SERVER_STORE_BLOB_H
#define LCN_SERVER_STORE_BLOB_H

#include <stddef.h>
#include <stdint.h>

#include "geom.h"

/* The bytes of n points (malloc'd; *bytes = 8 n). */
void *store_layout_blob(const struct lcn_pt *p, int32_t n, size_t *bytes);
/* The n points of b (8 n bytes). */
void store_blob_layout(const unsigned char *b, int32_t n, struct lcn_pt *p);

#endif
