/* SVG pictures of layouts (see render.h). */
#include "render.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "fileio.h"
#include "graphio.h"
#include "util.h"

#define MARGIN     24.0
#define LEGEND_W   230.0
#define LINE_H     18.0
#define K_COLOUR   "#d62728"
#define BAD_COLOUR "#e8000b"

int render_bin(int32_t c, int32_t K, int *nbins)
{
    if (K <= 0) {
        *nbins = 1;
        return 0;
    }
    int nb = K < RENDER_BINS ? (int)K : RENDER_BINS;
    *nbins = nb;
    if (c >= K)
        return nb;
    return (int)((int64_t)(c < 0 ? 0 : c) * nb / K);
}

/* Smallest count of bin i (ceil(i K / nb)). */
static int64_t bin_lo(int i, int32_t K, int nb)
{
    return ((int64_t)i * K + nb - 1) / nb;
}

static void bin_colour(int i, int nb, char out[8])
{
    static const double stops[][3] = {
        {0xcf, 0xd8, 0xe3}, {0x6a, 0x9f, 0xd8}, {0x8e, 0x63, 0xc7}, {0xf0, 0xa2, 0x02}};
    const int ns = (int)LCN_ARRAY_LEN(stops);
    double t = nb > 1 ? (double)i / (nb - 1) : 0.0;
    double pos = t * (ns - 1);
    int s = (int)pos;
    if (s >= ns - 1)
        s = ns - 2;
    double f = pos - s;
    int rgb[3];
    for (int k = 0; k < 3; k++)
        rgb[k] = (int)lround(stops[s][k] + f * (stops[s + 1][k] - stops[s][k]));
    snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

/* Length of the well-formed UTF-8 sequence at p (2 to 4 bytes, p[0] >=
 * 0x80), or 0: stray continuation bytes, truncated sequences, overlong
 * forms, surrogates and code points past U+10FFFF are not. *cp: its code
 * point. */
static size_t utf8_seq(const unsigned char *p, unsigned *cp)
{
    unsigned min;
    size_t n;
    if ((p[0] & 0xe0) == 0xc0)
        n = 2, *cp = p[0] & 0x1fu, min = 0x80;
    else if ((p[0] & 0xf0) == 0xe0)
        n = 3, *cp = p[0] & 0x0fu, min = 0x800;
    else if ((p[0] & 0xf8) == 0xf0)
        n = 4, *cp = p[0] & 0x07u, min = 0x10000;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) /* the terminating NUL stops here too */
            return 0;
        *cp = *cp << 6 | (p[i] & 0x3fu);
    }
    if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
        return 0;
    return n;
}

/* Text for an XML 1.0 document: <, >, & and " escaped, and what is not an
 * XML character written as '?' (control characters as ' '): a file name in
 * Latin-1, or a job name with U+FFFE, made the picture not well-formed. */
static void put_escaped(FILE *f, const char *s)
{
    static const char *const entity[] = {
        ['<'] = "&lt;", ['>'] = "&gt;", ['&'] = "&amp;", ['"'] = "&quot;"};
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned cp = *p;
        size_t n = 1;
        if (cp < LCN_ARRAY_LEN(entity) && entity[cp])
            fputs(entity[cp], f);
        else if (cp < 0x80)
            fputc(cp < 0x20 ? ' ' : (int)cp, f);
        else if (!(n = utf8_seq(p, &cp)) || cp == 0xfffe || cp == 0xffff)
            fputc('?', f);
        else
            fwrite(p, 1, n, f);
        p += n ? n : 1;
    }
}

static double clamp(double v, double lo, double hi)
{
    return fmin(hi, fmax(lo, v));
}

struct frame {
    double x0, y1; /* smallest x and largest y drawn (layout units) */
    double s;      /* drawing units per layout unit */
    double w, h;   /* drawing size */
};

static double X(const struct frame *fr, double x)
{
    return MARGIN + (x - fr->x0) * fr->s;
}

static double Y(const struct frame *fr, double y)
{
    return MARGIN + (fr->y1 - y) * fr->s; /* y up */
}

/* What the parts of a picture share: the frame, the bins, the strokes and
 * the marked nodes (pic_new, pic_free). */
struct pic {
    FILE *f;
    const struct lcn_graph *g;
    const struct lcn_pt *pts;
    const struct lcn_report *rep;
    const struct render_info *info;
    struct frame fr;
    int nb;          /* bins below K (render_bin); bin nb holds the K edges */
    int64_t *in_bin; /* edges per bin */
    uint8_t *bad;    /* nodes named by a listed violation */
    double stroke, kstroke, radius;
    int titles_nodes, titles_edges;
    double body_h, W, H;
};

static void pic_new(struct pic *pc, FILE *f, const struct lcn_graph *g, const struct lcn_pt *pts,
                    const struct lcn_report *rep, const struct render_info *info)
{
    memset(pc, 0, sizeof(*pc));
    pc->f = f;
    pc->g = g;
    pc->pts = pts;
    pc->rep = rep;
    pc->info = info;
    /* the frame: the bounds and every node (an invalid layout may leave them) */
    double x0 = 0, y0 = 0, x1 = g->width, y1 = g->height;
    for (int32_t v = 0; v < g->n; v++) {
        x0 = fmin(x0, pts[v].x);
        x1 = fmax(x1, pts[v].x);
        y0 = fmin(y0, pts[v].y);
        y1 = fmax(y1, pts[v].y);
    }
    double span = fmax(fmax(x1 - x0, y1 - y0), 1.0);
    pc->fr = (struct frame){x0, y1, RENDER_SIZE / span, 0, 0};
    pc->fr.w = (x1 - x0) * pc->fr.s;
    pc->fr.h = (y1 - y0) * pc->fr.s;

    const struct lcn_obj *o = &rep->obj;
    render_bin(0, o->K, &pc->nb);
    pc->in_bin = xcalloc((size_t)pc->nb + 1, sizeof *pc->in_bin);
    for (int32_t e = 0; e < g->m; e++)
        pc->in_bin[render_bin(rep->c[e], o->K, &pc->nb)]++;

    /* sizes from each node's and each edge's share of the drawing: on a
     * 2,500-node graph the dots are small enough to leave the edges visible
     * between them (and the K edges are drawn over the nodes) */
    double area = fmax(pc->fr.w, 1.0) * fmax(pc->fr.h, 1.0);
    pc->radius = clamp(RENDER_NODE_SHARE * sqrt(area / fmax(g->n, 1)), 0.4, 5.0);
    pc->stroke = clamp(RENDER_EDGE_SHARE * sqrt(area / fmax(g->m, 1)), 0.2, 1.6);
    pc->kstroke = clamp(2.5 * pc->stroke, 1.2, 4.0);
    pc->titles_nodes = g->n <= 5000;
    pc->titles_edges = g->m <= 5000;

    pc->bad = xcalloc((size_t)g->n + 1, 1);
    for (int32_t i = 0; i < rep->listed; i++) {
        const struct lcn_violation *v = &rep->list[i];
        if (v->kind == LCN_V1_OUT_OF_BOUNDS || v->kind == LCN_V3_NODE_ON_EDGE) {
            pc->bad[v->a] = 1;
        } else if (v->kind == LCN_V2_SHARED_POINT) {
            pc->bad[v->a] = pc->bad[v->b] = 1;
        } else {
            pc->bad[g->eu[v->a]] = pc->bad[g->ev[v->a]] = pc->bad[g->eu[v->b]] = pc->bad[g->ev[v->b]] = 1;
        }
    }

    int caption_lines = 2 + (info && info->title) + (info && info->subtitle);
    double legend_h = LINE_H * (pc->nb + 2 + (o->K > 0)) + 8;
    pc->body_h = fmax(pc->fr.h + 2 * MARGIN, legend_h + MARGIN);
    pc->W = pc->fr.w + 2 * MARGIN + LEGEND_W;
    pc->H = pc->body_h + caption_lines * LINE_H + 12;
}

static void pic_free(struct pic *pc)
{
    free(pc->in_bin);
    free(pc->bad);
}

/* The document's head, the background and the bounds with their corners. */
static void draw_head(const struct pic *pc)
{
    FILE *f = pc->f;
    const struct lcn_graph *g = pc->g;
    const struct lcn_obj *o = &pc->rep->obj;
    const struct frame *fr = &pc->fr;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
            "height=\"%.0f\" viewBox=\"0 0 %.2f %.2f\" font-family=\"sans-serif\" "
            "font-size=\"13\">\n",
            ceil(pc->W), ceil(pc->H), pc->W, pc->H);
    fprintf(f,
            "<desc>lcn layout: n=%d m=%d bounds [0,%d]x[0,%d], y axis up; K=%d nK=%d "
            "Phi=%lld C=%lld; %s</desc>\n",
            g->n, g->m, g->width, g->height, o->K, o->nK, (long long)o->Phi, (long long)o->C,
            pc->rep->valid ? "valid" : "invalid");
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.2f\" height=\"%.2f\" fill=\"white\"/>\n", pc->W, pc->H);
    /* the bounds [0,W] x [0,H] */
    fprintf(f,
            "<rect id=\"bounds\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
            "fill=\"none\" stroke=\"#999\" stroke-width=\"0.8\" stroke-dasharray=\"4 3\"/>\n",
            X(fr, 0), Y(fr, g->height), (double)g->width * fr->s, (double)g->height * fr->s);
    fprintf(f,
            "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\" fill=\"#666\">(0,0)</text>\n"
            "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\" fill=\"#666\" "
            "text-anchor=\"end\">(%d,%d)</text>\n",
            X(fr, 0), Y(fr, 0) + 14, X(fr, g->width), Y(fr, g->height) - 4, g->width, g->height);
}

/* The edges of bins first..last, bin by bin so that higher counts lie on
 * top. */
static void draw_edges(const struct pic *pc, int first, int last)
{
    FILE *f = pc->f;
    const struct lcn_graph *g = pc->g;
    int nb = pc->nb;
    for (int b = first; b <= last; b++) {
        if (!pc->in_bin[b])
            continue;
        char col[8];
        if (b == nb)
            snprintf(col, sizeof col, "%s", K_COLOUR);
        else
            bin_colour(b, nb, col);
        fprintf(f, "<g stroke=\"%s\" stroke-width=\"%.2f\" stroke-linecap=\"round\">\n", col,
                b == nb ? pc->kstroke : pc->stroke);
        for (int32_t e = 0; e < g->m; e++) {
            if (render_bin(pc->rep->c[e], pc->rep->obj.K, &nb) != b)
                continue;
            const struct lcn_pt *p = &pc->pts[g->eu[e]], *q = &pc->pts[g->ev[e]];
            char cls[16];
            if (b == nb)
                snprintf(cls, sizeof cls, "k");
            else
                snprintf(cls, sizeof cls, "b%d", b);
            fprintf(f,
                    "<line id=\"e%d\" class=\"%s\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" "
                    "y2=\"%.2f\"",
                    e, cls, X(&pc->fr, p->x), Y(&pc->fr, p->y), X(&pc->fr, q->x), Y(&pc->fr, q->y));
            if (pc->titles_edges)
                fprintf(f, "><title>edge %d: %d-%d, %d crossings</title></line>\n", e, g->eu[e],
                        g->ev[e], pc->rep->c[e]);
            else
                fputs("/>\n", f);
        }
        fputs("</g>\n", f);
    }
}

/* The nodes; the marked ones last so that they stay visible. */
static void draw_nodes(const struct pic *pc)
{
    FILE *f = pc->f;
    for (int pass = 0; pass < 2; pass++) {
        fprintf(f, "<g fill=\"%s\" stroke=\"white\" stroke-width=\"%.2f\">\n",
                pass ? BAD_COLOUR : "#222", pc->radius / 4);
        for (int32_t v = 0; v < pc->g->n; v++) {
            if (pc->bad[v] != pass)
                continue;
            struct lcn_pt p = pc->pts[v];
            fprintf(f, "<circle id=\"n%d\" cx=\"%.2f\" cy=\"%.2f\" r=\"%.2f\"", v, X(&pc->fr, p.x),
                    Y(&pc->fr, p.y), pass ? pc->radius * 1.6 : pc->radius);
            if (pc->titles_nodes)
                fprintf(f, "><title>node %d (%d, %d)</title></circle>\n", v, p.x, p.y);
            else
                fputs("/>\n", f);
        }
        fputs("</g>\n", f);
    }
}

/* The legend: every bin with its range and number of edges. */
static void draw_legend(const struct pic *pc)
{
    FILE *f = pc->f;
    const struct lcn_obj *o = &pc->rep->obj;
    int nb = pc->nb;
    double lx = pc->fr.w + 2 * MARGIN, ly = MARGIN;
    fprintf(f,
            "<g id=\"legend\">\n<text x=\"%.2f\" y=\"%.2f\" font-weight=\"bold\">crossings "
            "per edge</text>\n",
            lx, ly + 12);
    for (int b = 0; b <= nb; b++) {
        if (b == nb && o->K <= 0)
            break;
        char col[8], range[64];
        if (b == nb) {
            snprintf(col, sizeof col, "%s", K_COLOUR);
            snprintf(range, sizeof range, "%d = K", o->K);
        } else {
            bin_colour(b, nb, col);
            int64_t lo = bin_lo(b, o->K, nb), hi = o->K > 0 ? bin_lo(b + 1, o->K, nb) - 1 : 0;
            if (lo == hi)
                snprintf(range, sizeof range, "%lld", (long long)lo);
            else
                snprintf(range, sizeof range, "%lld-%lld", (long long)lo, (long long)hi);
        }
        double y = ly + LINE_H * (b + 1);
        fprintf(f,
                "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" "
                "stroke-width=\"%.1f\"/>\n",
                lx, y + 8, lx + 28, y + 8, col, b == nb ? 4.0 : 2.5);
        fprintf(f, "<text class=\"legend-row\" x=\"%.2f\" y=\"%.2f\">%s: %lld edge%s</text>\n",
                lx + 36, y + 12, range, (long long)pc->in_bin[b], pc->in_bin[b] == 1 ? "" : "s");
    }
    fputs("</g>\n", f);
}

/* The caption: title and subtitle, the tuple, and the verdict. */
static void draw_caption(const struct pic *pc)
{
    FILE *f = pc->f;
    const struct lcn_graph *g = pc->g;
    const struct lcn_report *rep = pc->rep;
    const struct lcn_obj *o = &rep->obj;
    const struct render_info *info = pc->info;
    double cy = pc->body_h + 4;
    fputs("<g id=\"caption\">\n", f);
    if (info && info->title) {
        cy += LINE_H;
        fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" font-weight=\"bold\">", MARGIN, cy);
        put_escaped(f, info->title);
        fputs("</text>\n", f);
    }
    if (info && info->subtitle) {
        cy += LINE_H;
        fprintf(f, "<text x=\"%.2f\" y=\"%.2f\">", MARGIN, cy);
        put_escaped(f, info->subtitle);
        fputs("</text>\n", f);
    }
    cy += LINE_H;
    fprintf(f,
            "<text id=\"tuple\" x=\"%.2f\" y=\"%.2f\" font-size=\"15\">K = %d, nK = %d, C = %lld "
            "(Phi = %lld)</text>\n",
            MARGIN, cy, o->K, o->nK, (long long)o->C, (long long)o->Phi);
    cy += LINE_H;
    fprintf(f,
            "<text id=\"verdict\" x=\"%.2f\" y=\"%.2f\" fill=\"%s\">n = %d, m = %d, bounds "
            "%d x %d (y up); ",
            MARGIN, cy, rep->valid ? "#333" : BAD_COLOUR, g->n, g->m, g->width, g->height);
    if (rep->valid) {
        fputs("valid", f);
    } else {
        fputs("INVALID:", f);
        for (int k = LCN_V1_OUT_OF_BOUNDS; k <= LCN_V4_EDGE_OVERLAP; k++)
            if (rep->count[k])
                fprintf(f, " %s x%lld", validate_kind_name((enum lcn_vkind)k),
                        (long long)rep->count[k]);
        fputs(" (nodes involved in red)", f);
    }
    fputs("</text>\n</g>\n", f);
}

int render_svg(FILE *f, const struct lcn_graph *g, const struct lcn_pt *pts,
               const struct lcn_report *rep, const struct render_info *info)
{
    struct pic pc;
    pic_new(&pc, f, g, pts, rep, info);
    draw_head(&pc);
    draw_edges(&pc, 0, pc.nb - 1);
    draw_nodes(&pc);
    draw_edges(&pc, pc.nb, pc.nb); /* the K edges over the nodes */
    draw_legend(&pc);
    draw_caption(&pc);
    fputs("</svg>\n", f);
    pic_free(&pc);
    return ferror(f) ? LCN_EIO : 0;
}

char *render_svg_text(const struct lcn_graph *g, const struct lcn_pt *pts,
                      const struct lcn_report *rep, const struct render_info *info, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return NULL;
    int rc = render_svg(f, g, pts, rep, info);
    if (fclose(f) != 0 || rc) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

int render_svg_file(const char *path, const struct lcn_graph *g, const struct lcn_pt *pts,
                    const struct lcn_report *rep, const struct render_info *info, char *err,
                    size_t errlen)
{
    if (strcmp(path, "-") == 0) {
        int rc = render_svg(stdout, g, pts, rep, info);
        if (fflush(stdout) != 0 || rc) {
            snprintf(err, errlen, "cannot write the picture to stdout");
            return LCN_EIO;
        }
        return 0;
    }
    /* rendered in memory first: the file is then replaced in one step */
    size_t len;
    char *buf = render_svg_text(g, pts, rep, info, &len);
    if (!buf) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        return LCN_EIO;
    }
    int rc = lcn_write_atomic(path, buf, len, err, errlen);
    free(buf);
    return rc;
}

int render_doc(const char *path, const struct graphio_doc *d, const struct render_info *info,
               struct lcn_obj *obj, int *valid, char *err, size_t errlen)
{
    if (d->n_missing) {
        int32_t v = 0;
        while (v < d->g.n && d->has_xy[v])
            v++;
        snprintf(err, errlen, "%d node%s without coordinates (first: nodes[%d], node %d)",
                 d->n_missing, d->n_missing == 1 ? "" : "s", d->node_pos[v], v);
        return LCN_EINVAL;
    }
    struct lcn_report rep;
    /* list enough violations to mark the nodes involved, not all of a hopeless layout */
    if (validate_layout(&d->g, d->pts, 10000, &rep) != 0) {
        report_release(&rep);
        snprintf(err, errlen, "internal error: odd crossing-count sum (a validator bug)");
        return LCN_ECORRUPT;
    }
    if (obj)
        *obj = rep.obj;
    if (valid)
        *valid = rep.valid;
    int rc = render_svg_file(path, &d->g, d->pts, &rep, info, err, errlen);
    report_release(&rep);
    return rc;
}
