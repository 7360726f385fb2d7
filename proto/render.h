/*
 * render.h - SVG pictures of layouts: what `lcnctl render` writes and
 * `GET /jobs/<id>/solution.svg` serves.
 *
 * Coordinates convention: x grows to the right and y grows UP (the
 * mathematical convention: (0,0) is the bottom-left corner of the bounds
 * [0,W] x [0,H], (W,H) the top-right one). SVG's own y axis grows down, so
 * the picture maps y to H - y; the corners are labelled so nobody has to
 * guess. Any bounds up to the format's limit (2^30) scale to a drawing
 * about RENDER_SIZE units on its longer side (coordinates are converted to
 * doubles only for drawing; counts and validity come from the exact
 * integer oracle, common/validate.h).
 *
 * Edges are coloured by their crossing count c[e] in bins of equal width
 * over [0, K-1] (at most RENDER_BINS of them) from light to amber; the K
 * edges (c[e] = K, when K > 0) are red and thicker, and drawn last, over
 * the nodes, so that no dot hides them. Sizes follow the graph and the
 * drawing: a node's dot has a radius of RENDER_NODE_SHARE times the side
 * of the square each node would get if the nodes shared the drawing's area
 * (between 0.4 and 5 units), the edges' stroke RENDER_EDGE_SHARE times the
 * side of an edge's share (between 0.2 and 1.6; K edges 2.5 times that,
 * between 1.2 and 4): a 2,500-node graph on the 1000-unit drawing gets
 * dots of radius 2.4 twenty units apart. A legend lists every bin with its
 * range and number of edges; the caption gives K, nK, C (and Phi), n, m and
 * the bounds, and the verdict: nodes named in the report's listed
 * violations are drawn red and larger.
 *
 * Every node is a <circle id="nID">, every edge a <line id="eINDEX"> with
 * class "b<bin>" or "k" (the K edges); tests rely on these names.
 *
 * Why not a library: the picture is text of a few element kinds (line,
 * circle, rect and text, grouped in g) with ids and classes the tests
 * address. cairo (Debian's libcairo2-dev) would be a large new dependency,
 * and its SVG surface writes drawn paths with ids of its own: its API
 * (cairo-svg.h) creates the surface and picks the SVG version and unit,
 * and has no way to name an element.
 */
#ifndef LCN_PROTO_RENDER_H
#define LCN_PROTO_RENDER_H

#include <stdio.h>

#include "graph.h"
#include "validate.h"

#define RENDER_SIZE 1000.0
#define RENDER_BINS 8
#define RENDER_NODE_SHARE 0.12
#define RENDER_EDGE_SHARE 0.05

struct render_info {
    const char *title;    /* first caption line (e.g. the file name); NULL: none */
    const char *subtitle; /* second caption line (e.g. "job j... running"); NULL: none */
};

/*
 * Writes the picture of layout pts (n points, every node placed) of g to f.
 * rep is validate_layout's report on the same layout: its per-edge counts,
 * tuple and listed violations are drawn. Returns 0, or LCN_EIO when
 * writing failed.
 */
int render_svg(FILE *f, const struct lcn_graph *g, const struct lcn_pt *pts,
               const struct lcn_report *rep, const struct render_info *info);

/*
 * Like render_svg into memory: returns the picture as a malloc'd,
 * NUL-terminated string of *len bytes (free with free()), or NULL when the
 * memory stream could not be opened or written (errno set).
 */
char *render_svg_text(const struct lcn_graph *g, const struct lcn_pt *pts,
                      const struct lcn_report *rep, const struct render_info *info, size_t *len);

/*
 * Like render_svg into the file at path ("-" = stdout). A regular file is
 * written under a temporary name in the same directory and renamed into
 * place, so a viewer never sees half a picture. Returns 0 or LCN_EIO with
 * the reason in err.
 */
int render_svg_file(const char *path, const struct lcn_graph *g, const struct lcn_pt *pts,
                    const struct lcn_report *rep, const struct render_info *info, char *err,
                    size_t errlen);

struct graphio_doc;

/*
 * Checks the layout of document d with validate_layout and renders it to
 * path (as render_svg_file). Fills *obj and *valid (either may be NULL).
 * Returns 0; LCN_EINVAL when a node has no coordinates (nothing written);
 * LCN_ECORRUPT when the validator's recount failed its parity check;
 * LCN_EIO when writing failed. err receives the reason.
 */
int render_doc(const char *path, const struct graphio_doc *d, const struct render_info *info,
               struct lcn_obj *obj, int *valid, char *err, size_t errlen);

/* The bin (0..nbins-1) of count c when the layout's K is K, or nbins for the
 * K edges; *nbins receives the number of ordinary bins. */
int render_bin(int32_t c, int32_t K, int *nbins);

#endif
