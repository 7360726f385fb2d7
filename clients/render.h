/*
 * render.h - SVG pictures of layouts.
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
 * edges (c[e] = K, when K > 0) are drawn last, red and thicker. A legend
 * lists every bin with its range and number of edges; the caption gives K,
 * nK, C (and Phi), n, m and the bounds, and the verdict: nodes named in
 * the report's listed violations are drawn red and larger.
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
#ifndef LCN_CLIENTS_RENDER_H
#define LCN_CLIENTS_RENDER_H

#include <stdio.h>

#include "graph.h"
#include "validate.h"

#define RENDER_SIZE 1000.0
#define RENDER_BINS 8

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
