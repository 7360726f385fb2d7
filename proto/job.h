/*
 * job.h - the job wire format: POST /jobs request parsing (strict, with
 * field paths), the job status object and progress events (docs/API.md).
 *
 * The status object is also what the daemon persists in its store, so
 * job_status_json and job_status_parse are exact inverses (a unit test
 * round-trips them).
 */
#ifndef LCN_PROTO_JOB_H
#define LCN_PROTO_JOB_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "engine.h"
#include "graphio.h"
#include "objective.h"


enum job_state {
    JOB_QUEUED = 0,
    JOB_RUNNING,
    JOB_SUCCEEDED,
    JOB_FAILED,
    JOB_CANCELLED,
    JOB_INTERRUPTED,
    JOB_STATE_COUNT
};

#define JOB_NAME_MAX   128
#define JOB_TUNING_MAX 1024
/* seed is an integer in [0, 2^53], so every seed is exact in any JSON reader */
#define JOB_SEED_MAX 9007199254740992LL

/* Admission limits the parser applies (from the daemon's configuration). */
struct job_limits {
    int32_t max_nodes, max_edges;
    double max_budget_s;
    double default_budget_s;
};

/* A rejected request: HTTP status, API code, JSON path and reason. */
struct job_error {
    int status;      /* 400, 422 */
    char code[32];   /* "bad_json", "invalid_field", "limit_exceeded" */
    char field[256]; /* "graph.edges[12].source"; "" when not about one field */
    char msg[256];   /* lower case, no full stop */
};

/* solver.gpus = "all" (job_request.gpus). */
#define JOB_GPUS_ALL (-1)

struct job_request {
    struct graphio_doc doc; /* the graph, with the submitted layout and document */
    double budget_s;
    uint64_t seed;
    int32_t target_k; /* -1: none */
    int stop_at_target;
    enum lcn_backend backend;
    int32_t threads, replicas, proposal_workers; /* 0: engine default */
    int32_t gpus; /* devices for one run (islands): 0 or 1 = one; JOB_GPUS_ALL = every
                     healthy device at admission */
    char *tuning;                                /* NULL: none */
    char *name;                                  /* NULL: none */
    int64_t init_from; /* the job whose best layout to start from (a warm start); -1: none */
    int refs;          /* the owner's reference count; the parser sets 1 */
};

/*
 * Parses and validates a POST /jobs body of len bytes. Order of checks:
 * JSON syntax (400 bad_json, with line and column), the top level is an
 * object, unknown fields, then each field (400 invalid_field or 422
 * limit_exceeded, with its path), then the graph (graphio rules, paths
 * under "graph."). Returns 0 with req filled, or a negative LCN_E* code
 * with *err filled and req zeroed.
 */
int job_request_parse(struct job_request *req, const char *body, size_t len,
                      const struct job_limits *lim, struct job_error *err);

/* The top-level request fields that POST /jobs also takes as query
 * arguments, for a bare graph body (docs/API.md), in this order. */
#define JOB_QUERY_COUNT 6
extern const char *const job_query_names[JOB_QUERY_COUNT];

/*
 * job_request_parse for a body as POST /jobs receives it, with its query
 * arguments (query[i] is the value of job_query_names[i], or NULL; query
 * itself may be NULL). A body whose top level is an object with "nodes" or
 * "edges" and no "graph" is a bare graph: it is read as {"graph": BODY}
 * plus the query arguments as fields, typed as the fields are (budget_s a
 * number, seed and target_k integers, stop_at_target true or false, backend
 * and name strings); a query value of the wrong form is a 400 with the
 * argument's name as field. Query arguments with a body that is not a bare
 * graph are a 400 (they would be ignored otherwise), and an object that is
 * neither a request nor a graph gets a message that says how to wrap it.
 * On success *wrapped is NULL when the body was a request, or for a bare
 * graph the request {"graph": BODY, fields...} as text, the body's bytes
 * kept (malloc'd, *wrapped_len bytes; the caller stores it in place of
 * body, and job_request_parse reads it back to the same request).
 * job_request_parse is this function without query arguments.
 */
int job_request_parse_post(struct job_request *req, const char *body, size_t len,
                           const char *const *query, const struct job_limits *lim,
                           struct job_error *err, char **wrapped, size_t *wrapped_len);
void job_request_release(struct job_request *req);

/*
 * Resolves a warm start: req was parsed from the len bytes at *body and
 * names job req->init_from, whose graph is src and whose best validated
 * layout is pts (src->n points). When src is the same problem as req's
 * graph (graph_same: nodes, edges, bounds; not the order of the edges or
 * fields lcn does not know), *body becomes the request the job stores: the
 * submitted one with every node's coordinates set from pts and without
 * init_from (the old body is freed, *len updated), and req is re-parsed
 * from it, so the job runs exactly what a restarted daemon re-parses from
 * the store, with no reference to the other job. Returns 0; or LCN_EINVAL
 * with *err filled (422 init_from_unusable, field "init_from", the first
 * difference in the message), req and *body unchanged.
 */
int job_request_warm(struct job_request *req, char **body, size_t *len, const struct lcn_graph *src,
                     const struct lcn_pt *pts, const struct job_limits *lim, struct job_error *err);

/* The status of a job: what GET /jobs/<id> shows and the store keeps. */
struct job_status {
    int64_t id;
    char name[JOB_NAME_MAX + 1];                 /* "" = null */
    enum job_state state;
    int64_t created_ms, started_ms, finished_ms; /* wall clock ms; 0 = null */
    double budget_s;
    double elapsed_s; /* engine time used so far, summed over resumes */
    uint64_t seed;
    int32_t target_k; /* -1 = null */
    int stop_at_target;
    enum lcn_backend backend_requested;
    char backend[8];    /* "" = null (not started) */
    char evaluator[32]; /* "" = null */
    int32_t n, m, width, height;
    int has_best;
    struct lcn_obj best;
    double time_to_target_s; /* < 0 = null */
    char stop_reason[16];    /* "" = null */
    char error_code[32];     /* "" = no error */
    char error_msg[256];
    int64_t progress_seq; /* last durable progress event */
    int has_telemetry;
    struct engine_telemetry tel;
    double start_latency_s; /* POST received -> engine started, this process; < 0 = null */
    int32_t resumes;        /* runs resumed after a daemon restart */
    int cancel_requested;
    int engine_overran; /* the daemon had to stop (or abandon) the engine past its deadline */
};

/* Fills a status for a freshly accepted request. */
void job_status_from_request(struct job_status *s, int64_t id, int64_t created_ms,
                             const struct job_request *req);

/* The status as the API shows it (with or without "telemetry"). */
json_t *job_status_json(const struct job_status *s, int with_telemetry);

/* Reads a status written by job_status_json(s, 1). Returns 0 or
 * LCN_EPARSE. */
int job_status_parse(struct job_status *s, const json_t *j);

/* Sets one integer member of o per counter of t, attempted .. recounts in
 * the order of struct engine_telemetry (the "telemetry" object of a status
 * and of `lcnd solve`'s summary share these names). */
void job_telemetry_counters_json(json_t *o, const struct engine_telemetry *t);

/*
 * The per-operator counters of a telemetry record as a JSON object
 * {name: {tried, valid, accepted, improved}}, one member per operator in
 * enum engine_op order (names from engine_op_name), and back. The parser
 * leaves operators the object does not name at zero (records written before
 * issue 15 have no "ops"); returns 0 or LCN_EPARSE for a member of the
 * wrong shape or an unknown operator name.
 */
json_t *job_ops_json(const struct engine_telemetry *t);

/* A run across GPUs: each device's island as the API writes it in
 * telemetry.devices ([{device, evaluated, accepted, imports}]; empty for
 * other runs). */
json_t *job_devices_json(const struct engine_telemetry *t);
int job_ops_parse(struct engine_telemetry *t, const json_t *ops);

/* "j" followed by 16 decimal digits. */
void job_id_format(int64_t id, char *buf, size_t len);
/* Returns 0 with *id set, or LCN_EINVAL when s is not a job id. */
int job_id_parse(const char *s, int64_t *id);

/* "queued", "running", "succeeded", "failed", "cancelled", "interrupted";
 * "unknown" for anything else. */
const char *job_state_name(enum job_state state);
/* Parses one of those names; returns 0 or LCN_EINVAL (state untouched). */
int job_state_parse(const char *name, enum job_state *state);
/* 1 for succeeded, failed, cancelled and interrupted. */
int job_state_terminal(enum job_state state);

/* ISO 8601 UTC with milliseconds ("2026-11-29T16:00:00.123Z"). */
void job_iso_time(int64_t wall_ms, char *buf, size_t len);

/* Progress events, as JSON text (malloc'd). error_code may be NULL. */
char *job_event_state(int64_t seq, double elapsed_s, enum job_state state, const char *error_code,
                      const char *error_msg);
char *job_event_improve(int64_t seq, double elapsed_s, const char *stage,
                        const struct lcn_obj *best);
char *job_event_checkpoint(int64_t seq, double elapsed_s, const struct lcn_obj *best);

#endif
