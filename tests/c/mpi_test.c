/*
 * The distributed solver from C (feature mpi), run by tests/mpi.rs under
 * mpirun -np 3: every rank holds its examples of a multiclass SVM (those
 * bmrm_mpi_examples_of gives it), P-BMRM runs on MPI_COMM_WORLD through
 * bmrm_solver_new_mpi, and rank 0 checks that w and the iterations are
 * bit-identical to a single-process run over all examples. Then a layout
 * that does not fit is refused with the same status on every rank.
 *
 * Prints lines "C ..." that the driver reads.
 */
#define BMRM_MPI 1
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bmrm.h"

enum { K = 4, D = 10, M = 600, DP = D + 1 };

static double X[M * DP];
static int Y[M];

static uint64_t rng_state = 777;
static double uniform(void) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return ((double)(rng_state >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double gaussian(void) {
    return sqrt(-2.0 * log(uniform())) * cos(6.283185307179586 * uniform());
}

/* The same data on every rank (the same seed). */
static void make_data(void) {
    for (size_t i = 0; i < M; i++) {
        int c = (int)(uniform() * K);
        Y[i] = c;
        for (int j = 0; j < D; j++)
            X[i * DP + j] = ((j == c || j == c + K) ? 1.5 : 0.0) + gaussian();
        X[i * DP + D] = 1.0;
    }
}

/* The examples first .. first + count of the data. */
typedef struct {
    size_t first;
} view;

static int32_t oracle(void *user, size_t i, const double *w, size_t dim, bmrm_corner *out) {
    const view *v = user;
    const double *x = X + (v->first + i) * DP;
    int yi = Y[v->first + i], best = yi;
    double score[K];
    (void)dim;
    for (int c = 0; c < K; c++) {
        score[c] = 0.0;
        for (int j = 0; j < DP; j++) score[c] += w[c * DP + j] * x[j];
    }
    double best_score = score[yi];
    for (int c = 0; c < K; c++)
        if (c != yi && 1.0 + score[c] > best_score) {
            best = c;
            best_score = 1.0 + score[c];
        }
    bmrm_corner_set_label(out, (uint64_t)best);
    if (best == yi) return 0;
    bmrm_corner_set_loss(out, 1.0);
    for (int j = 0; j < DP; j++) {
        if (bmrm_corner_add(out, (size_t)(yi * DP + j), x[j]) != BMRM_OK) return 1;
        if (bmrm_corner_add(out, (size_t)(best * DP + j), -x[j]) != BMRM_OK) return 1;
    }
    return 0;
}

static uint64_t hash(const double *w, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    const unsigned char *b = (const unsigned char *)w;
    for (size_t k = 0; k < n * sizeof(double); k++) {
        h ^= b[k];
        h *= 1099511628211ULL;
    }
    return h;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    make_data();

    bmrm_settings s = bmrm_settings_default(BMRM_ALGORITHM_P_BMRM);
    s.lambda = 1e-2;
    s.tol_rel = 1e-4;
    s.num_parts = 5;
    s.num_threads = 1;
    size_t first = 0, count = 0;
    if (bmrm_mpi_examples_of(M, &s, (size_t)size, (size_t)rank, &first, &count) != BMRM_OK) {
        printf("C FAIL examples_of: %s\n", bmrm_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    view mine = {first};
    bmrm_problem *p;
    bmrm_problem_new(K * DP, &p);
    bmrm_problem_set_max_oracle(p, count, oracle, &mine, true);
    bmrm_solver *solver = NULL;
    bmrm_status st = bmrm_solver_new_mpi(p, &s, (int32_t)MPI_Comm_c2f(MPI_COMM_WORLD), 0.0, &solver);
    if (st != BMRM_OK) {
        printf("C FAIL new_mpi on rank %d: %s\n", rank, bmrm_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double w[K * DP] = {0};
    st = bmrm_solver_run(solver, w, K * DP);
    bmrm_info info;
    bmrm_solver_info(solver, &info);
    printf("C RUN %d status %d iterations %llu w %016llx examples %zu..%zu\n", rank, (int)st,
           (unsigned long long)info.iterations, (unsigned long long)hash(w, K * DP), first,
           first + count);
    bmrm_solver_free(solver);
    bmrm_problem_free(p);

    if (rank == 0) {
        view all = {0};
        bmrm_problem *q;
        bmrm_problem_new(K * DP, &q);
        bmrm_problem_set_max_oracle(q, M, oracle, &all, true);
        bmrm_solver *one;
        bmrm_solver_new(q, &s, &one);
        double w1[K * DP] = {0};
        bmrm_solver_run(one, w1, K * DP);
        bmrm_info i1;
        bmrm_solver_info(one, &i1);
        int same = memcmp(w, w1, sizeof w) == 0 && i1.iterations == info.iterations &&
                   i1.primal == info.primal && i1.lower_bound == info.lower_bound;
        printf("C CHECK %s iterations %llu (one process %llu)\n", same ? "ok" : "FAIL",
               (unsigned long long)info.iterations, (unsigned long long)i1.iterations);
        bmrm_solver_free(one);
        bmrm_problem_free(q);
    }

    /* Rank 1 holds one example too many: every rank gets the error. */
    size_t wrong = count + (rank == 1 ? 1 : 0);
    if (first + wrong > M) first = M - wrong;
    mine.first = first;
    bmrm_problem_new(K * DP, &p);
    bmrm_problem_set_max_oracle(p, wrong, oracle, &mine, true);
    solver = NULL;
    st = bmrm_solver_new_mpi(p, &s, (int32_t)MPI_Comm_c2f(MPI_COMM_WORLD), 0.0, &solver);
    printf("C BADLAYOUT %d status %d named %d\n", rank, (int)st,
           strstr(bmrm_last_error(), "rank 1 holds") != NULL);
    bmrm_solver_free(solver);
    bmrm_problem_free(p);
    MPI_Finalize();
    return 0;
}
