/*
 * graphio.h - the graph/layout file format (GD 2025 contest JSON) <-> common/
 * types.
 *
 *   {"nodes":[{"id":0,"x":12,"y":7},...], "edges":[{"source":0,"target":3},...],
 *    "width":W, "height":H}
 *
 * The reader is strict and every rejection names the JSON path of the
 * offending value and the reason, e.g. `edges[12].source: unknown node 99`.
 * The writer keeps the parsed document: node and edge order and every field
 * lcn does not know pass through unchanged, only x and y are replaced.
 * docs/FORMAT.md states every rule; the tests in tests/unit/test_graphio.c
 * pin the exact messages.
 *
 * Error codes (graphio_error.err and the return values):
 *   LCN_EPARSE   the bytes are not one well-formed JSON object (syntax,
 *                truncation, duplicate key, invalid UTF-8, nesting too
 *                deep): HTTP 400 bad_json; line and column are set;
 *   LCN_EINVAL   a field is missing, has the wrong type or an invalid
 *                value: HTTP 400 invalid_field;
 *   LCN_ETOOBIG  more nodes or edges than the limits allow: HTTP 422
 *                limit_exceeded;
 *   LCN_EIO      the file could not be read or written.
 */
#ifndef LCN_GRAPHIO_H
#define LCN_GRAPHIO_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "graph.h"
#include "objective.h"

/* Size limits applied while reading. A field <= 0 means the data model's
 * hard limit (LCN_MAX_NODES, LCN_MAX_EDGES); larger values are capped to it. */
struct graphio_limits {
    int32_t max_nodes;
    int32_t max_edges;
};

struct graphio_error {
    int err;          /* 0 or an LCN_E* code (see above) */
    int line, column; /* LCN_EPARSE only: 1-based position of the error; 0 otherwise */
    char path[256];   /* JSON path of the offending value ("" = the whole document) */
    char msg[256];    /* lower-case reason, no full stop */
};

/*
 * A parsed graph with its (possibly partial) layout and the document it came
 * from. Filled by graphio_read_*, released by graphio_release.
 */
struct graphio_doc {
    struct lcn_graph g; /* nodes 0..n-1, edges in document order */
    struct lcn_pt *pts; /* n points, indexed by node id; {0,0} where has_xy is 0 */
    uint8_t *has_xy;    /* n flags: 1 when the node had both coordinates */
    int32_t n_missing;  /* number of nodes without coordinates */
    int32_t *node_pos;  /* n entries: node id -> index in the document's "nodes" array */
    json_t *root;       /* the graph object; the doc holds one reference */
};

/*
 * Reads a graph from len bytes at buf (need not be NUL-terminated; the
 * length is explicit, so embedded NUL bytes are an error, not an end).
 * lim may be NULL (hard limits). On success returns 0 and d owns its
 * arrays and a reference to the parsed document. On failure returns the
 * negative code, fills *err (err may be NULL) and leaves d zeroed.
 */
int graphio_read_buf(struct graphio_doc *d, const char *buf, size_t len,
                     const struct graphio_limits *lim, struct graphio_error *err);

/* Finds the first NUL byte in len bytes at buf: returns 0 when there is
 * none, else 1 with its 1-based line and column (columns count bytes).
 * jansson ends the text at a NUL, so every reader given an explicit length
 * checks for one first and reports "line L column C: NUL byte in input". */
int graphio_find_nul(const char *buf, size_t len, int *line, int *column);

/* The length of a UTF-8 byte-order mark (EF BB BF) that begins the len
 * bytes at buf: 3, or 0 when there is none. RFC 8259 lets a parser ignore
 * one, and every reader of a graph or a request does (editors on Windows
 * write it), skipping it before anything else: line and column numbers
 * then count from after it. */
size_t graphio_bom(const char *buf, size_t len);

/* Like graphio_read_buf on the contents of the file at path ("-" = stdin).
 * An unreadable file gives LCN_EIO with the path and the system's reason. */
int graphio_read_file(struct graphio_doc *d, const char *path, const struct graphio_limits *lim,
                      struct graphio_error *err);

/*
 * Reads a graph from an already parsed JSON value (e.g. the "graph" member
 * of a request body). Paths in errors start with prefix ("graph" gives
 * `graph.edges[12].source`); prefix may be NULL or "". On success d takes
 * its own reference to graph, so the caller may drop its reference at any
 * time. The caller is responsible for having parsed with
 * JSON_REJECT_DUPLICATES.
 */
int graphio_read_json(struct graphio_doc *d, json_t *graph, const char *prefix,
                      const struct graphio_limits *lim, struct graphio_error *err);

/* Frees what a successful read allocated and drops the document reference.
 * Safe on a zeroed struct and after a failed read. */
void graphio_release(struct graphio_doc *d);

/*
 * Returns a new document (a new reference) that is d's document with every
 * node's "x" and "y" set from pts (n points, indexed by node id): same
 * node and edge order, every other field passed through. A top-level "lcn"
 * member of the input is dropped; when lcn is not NULL it is stored as the
 * new top-level "lcn" member (the reference is stolen). d's document is not
 * modified, so the call may be repeated with other layouts. The result
 * shares (holds references to) every member of d's document that it does not
 * replace: keep d's document unmodified while the result is alive. jansson's
 * reference counts are atomic, so d may be used from several threads.
 */
json_t *graphio_layout_json(const struct graphio_doc *d, const struct lcn_pt *pts, json_t *lcn);

/*
 * Returns a fresh document (a new reference) for graph g with layout pts
 * (n points; NULL writes nodes without coordinates): nodes in id order with
 * "id", "x", "y"; edges in edge order with "source", "target"; "width",
 * "height".
 */
json_t *graphio_build(const struct lcn_graph *g, const struct lcn_pt *pts);

/*
 * A file name (or any text from the command line) as a JSON string: text
 * that is not UTF-8 cannot be one (json_string refuses it), so its bytes
 * past ASCII are given as '?' instead. Never NULL (lcnctl's and lcnd
 * solve's summaries).
 */
json_t *graphio_text_json(const char *s);

/* Returns {"K":..,"nK":..,"Phi":..,"C":..} for o (a new reference). */
json_t *graphio_obj_json(const struct lcn_obj *o);

/* Flags for graphio_write_file. */
enum graphio_write_flags {
    GRAPHIO_PRETTY = 1 << 0, /* one node or edge per line instead of one line */
};

/*
 * Writes doc to path ("-" = stdout) followed by a newline. A regular file
 * is replaced through lcn_write_atomic (common/fileio.h: temporary file in
 * the same directory, fsync, rename, fsync of the directory), so readers
 * never see a partial file. Returns 0 or LCN_EIO with *err filled (err may
 * be NULL).
 */
int graphio_write_file(const json_t *doc, const char *path, unsigned flags,
                       struct graphio_error *err);

/* Serialises doc like graphio_write_file; returns a malloc'd NUL-terminated
 * string (free with free()). */
char *graphio_dumps(const json_t *doc, unsigned flags);

/* Formats "path: msg" (or "msg" when the path is empty) into buf. */
void graphio_error_format(const struct graphio_error *e, char *buf, size_t len);

/* The API error code for a read failure: "bad_json" (LCN_EPARSE),
 * "invalid_field" (LCN_EINVAL), "limit_exceeded" (LCN_ETOOBIG), else
 * lcn_errcode(err). */
const char *graphio_api_code(int err);

/* The JSON type name used in messages: "object", "array", "string",
 * "integer", "real", "boolean", "null". */
const char *graphio_type_name(const json_t *v);

#endif
