/*
 * bmrm_mex.h: what the files of the MEX gateway share (private to the
 * gateway; see bmrm_mex.c). The shared functions have hidden visibility, so
 * the host process cannot interpose on them.
 */
#ifndef BMRM_MEX_H
#define BMRM_MEX_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mex.h"

#include "bmrm.h"

#if defined(BMRM_MEX_OCTAVE)
int bmrm_octave_feval(int nout, mxArray **out, int nin, mxArray **in, char *msg, size_t msg_len,
                      char *id, size_t id_len);
int bmrm_octave_interrupt_pending(void);
#else
/* MATLAB's (undocumented, long-standing) Ctrl-C query, in libut. */
extern bool utIsInterruptPending(void);
#endif

#define MSG_LEN 4096
#define ID_LEN 256

/* ------------------------------------------------------------------------ */
/* State shared by the callbacks of one call of the gateway.                */

typedef struct {
    size_t nnz;
    size_t *index;
    double *value;
    bool done;
} sparse_vec;

typedef struct {
    size_t dim;
    /* bmrm: risk(data, W) or risk(data{p}, W) */
    const mxArray *risk;
    size_t parts;           /* 0: data is one block */
    const mxArray *data;    /* the data as given */
    mxArray **current;      /* the data of each block as the risk returned it */
    int nout;               /* 2 or 3 outputs of the risk */
    /* bcfw: the param struct's fields */
    const mxArray *param, *patterns, *labels, *loss_fn, *oracle_fn, *feature_fn, *hash_fn;
    sparse_vec *truth;      /* phi(x_i, y_i), computed once per example */
    int hash_args;          /* hashFn(param, y) (2) or hashFn(y) (1, gapBCFW) */
    struct lambda_result *current_result; /* where the iterate hook writes */
    const mxArray *decoder; /* graph: the decoder handle, or NULL */
    const double *lower;    /* graph: dim lower bounds on W (Positivity), or NULL */
    double log_every;       /* keep the model of every log_every-th pass (0: none) */
    /* reporting */
    double verb;            /* print every verb iterations (0: never) */
    int bcfw;
    uint64_t iteration;     /* the iteration in progress */
    bool failed, interrupted;
    char message[MSG_LEN];
    char identifier[ID_LEN];
} gate;

/* Reading opts (struct fields checked by bmrm.m / bcfw.m; checked again).  */
typedef struct {
    char message[MSG_LEN];
    bool bad;
} arg_error;

/* Running a solve and collecting its results (no MATLAB error raised).     */
typedef struct {
    bmrm_status status;
    char last_error[MSG_LEN];
    bmrm_info info;
    size_t rows;
    bmrm_iteration *history;
    bool bcfw;               /* BCFW ran: bcfw_info and passes are set */
    bmrm_bcfw_info bcfw_info;
    bmrm_bcfw_pass *passes;  /* rows of them */
} outcome;

/* BCFW's per-block dual state, flat: block b has counts[b] corners; corner c
 * has labels[c], losses[c], alphas[c] and psi in index/value[start[c] ..
 * start[c + 1]). */
typedef struct {
    size_t n, total, nnz;
    size_t *counts;
    double *gaps;
    uint64_t *labels;
    double *losses, *alphas;
    size_t *start, *index;
    double *value;
} dual_state;

/* One lambda's results of a BCFW solve. */
typedef struct lambda_result {
    outcome o;
    double lambda;
    double *w;            /* the iterate the BCFW codes return (averaged under averaging) */
    double ell, dual;     /* ell and the dual value of that same point */
    bool have_iterate;
    double *models;       /* logged models: dim doubles each */
    double *models_ell, *models_dual, *models_pass;
    size_t num_models, cap_models;
    dual_state state;     /* the dual state after the run (export_dual) */
    bool have_state;
} lambda_result;

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* mex_gate.c */
void fail(gate *g, const char *id, const char *fmt, ...);
bool interrupt_pending(gate *g);
bool call(gate *g, const char *what, int nout, mxArray **out, int nin, mxArray **in);
mxArray *column(const double *w, size_t dim);
bool scalar_out(gate *g, const mxArray *a, const char *what, double *v);
bool vector_out(gate *g, const mxArray *v, const char *what, size_t dim, double sign,
                double *dense, bmrm_corner *corner);
/* mex_callbacks.c */
int32_t risk_cb(void *user, const double *w, size_t dim, double *risk, double *subgrad);
int32_t partial_risk_cb(void *user, size_t p, const double *w, size_t dim, double *risk,
                        double *subgrad);
int32_t bcfw_oracle_cb(void *user, size_t i, const double *w, size_t dim,
                       bmrm_corner *out);
int32_t progress_cb(void *user, const bmrm_info *info);
/* mex_options.c */
void arg_fail(arg_error *e, const char *fmt, ...);
double opt_num(arg_error *e, const mxArray *opts, const char *name, double dflt);
void opt_str(arg_error *e, const mxArray *opts, const char *name, char *buf, size_t len,
             const char *dflt);
uint64_t opt_count(arg_error *e, const mxArray *opts, const char *name, uint64_t dflt,
                   uint64_t max, bool inf_ok, uint64_t inf_value);
bool algorithm_of(const char *name, bmrm_algorithm *a);
bmrm_settings settings_from(arg_error *e, const mxArray *opts, bmrm_algorithm a,
                            double lambda);
/* mex_run.c */
void solve(gate *g, bmrm_problem *p, bmrm_settings *s, double *w, outcome *o);
void collect(bmrm_solver *solver, const bmrm_settings *s, outcome *o);
double exitflag(bmrm_exit e);
mxArray *history_column(const outcome *o, int which);
mxArray *pass_column(const outcome *o, int which);
void raise_if_failed(const gate *g, const outcome *o, const char *who);
/* mex_bmrm.c */
void do_bmrm(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[]);
/* mex_dual.c */
void free_dual(dual_state *d);
bool export_dual(gate *g, bmrm_solver *solver, size_t n, dual_state *d);
mxArray *dual_to_mx(const dual_state *d, size_t dim, double lambda);
void dual_from_mx(arg_error *e, const mxArray *m, size_t n, size_t dim, dual_state *d);
/* mex_graph.c */
void do_graph(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[]);
/* mex_bcfw.c */
void do_bcfw(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[]);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif /* BMRM_MEX_H */
