/*
 * LIBLINEAR's Crammer-Singer solver (-s 4 -B 1) timed in memory, for
 * benches/liblinear.rs: the data are read from the raw files the benchmark
 * writes for the C ABI runs, built into LIBLINEAR's problem as its
 * liblinear-train builds it from a data file (the non-zeros of each row,
 * then the bias feature 1 at index D + 1), and only the call to train() is
 * timed. Our solvers get their data in memory too, so neither time counts
 * a file read.
 *
 * usage: liblinear_train X_FILE Y_FILE M D C EPS LIMIT MODEL_OUT
 * X_FILE: M * D floats (native byte order), Y_FILE: M uint32 labels.
 * Prints one line "train <wall s> <cpu s>" and writes the model (LIBLINEAR's
 * own save_model) to MODEL_OUT. A train() still running after LIMIT wall
 * seconds is stopped: the program prints "stopped <LIMIT>" and exits with
 * status 3.
 */
#define _POSIX_C_SOURCE 199309L
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linear.h>

static void quiet(const char *s) { (void)s; }

static void stop(int sig) {
    static const char msg[] = "stopped\n";
    (void)sig;
    /* Only async-signal-safe calls here. */
    if (write(STDOUT_FILENO, msg, sizeof msg - 1) < 0) _exit(4);
    _exit(3);
}

static double seconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *read_file(const char *path, size_t bytes) {
    FILE *f = fopen(path, "rb");
    void *buf = malloc(bytes ? bytes : 1);
    if (!f || !buf || fread(buf, 1, bytes, f) != bytes) {
        fprintf(stderr, "liblinear_train: cannot read %zu bytes of %s\n", bytes, path);
        exit(2);
    }
    fclose(f);
    return buf;
}

int main(int argc, char **argv) {
    if (argc != 9) {
        fprintf(stderr, "usage: liblinear_train X_FILE Y_FILE M D C EPS LIMIT MODEL_OUT\n");
        return 2;
    }
    size_t m = strtoull(argv[3], NULL, 10), d = strtoull(argv[4], NULL, 10);
    double c = strtod(argv[5], NULL), eps = strtod(argv[6], NULL);
    unsigned limit = (unsigned)strtoul(argv[7], NULL, 10);
    float *x = read_file(argv[1], m * d * sizeof(float));
    uint32_t *labels = read_file(argv[2], m * sizeof(uint32_t));

    size_t nnz = 0;
    for (size_t t = 0; t < m * d; t++) nnz += x[t] != 0.0f;
    /* Each row: its non-zeros, the bias node, the end marker. */
    struct feature_node *space = malloc((nnz + 2 * m) * sizeof *space);
    struct feature_node **rows = malloc(m * sizeof *rows);
    double *y = malloc(m * sizeof *y);
    if (!space || !rows || !y) {
        fprintf(stderr, "liblinear_train: out of memory\n");
        return 2;
    }
    struct feature_node *node = space;
    for (size_t i = 0; i < m; i++) {
        rows[i] = node;
        for (size_t j = 0; j < d; j++) {
            float v = x[i * d + j];
            if (v == 0.0f) continue;
            node->index = (int)(j + 1);
            node->value = (double)v;
            node++;
        }
        node->index = (int)(d + 1);
        node->value = 1.0;
        node++;
        node->index = -1;
        node->value = 0.0;
        node++;
        y[i] = (double)labels[i];
    }
    free(x);
    free(labels);

    struct problem prob;
    prob.l = (int)m;
    prob.n = (int)(d + 1);
    prob.y = y;
    prob.x = rows;
    prob.bias = 1.0;

    struct parameter param;
    memset(&param, 0, sizeof param);
    param.solver_type = MCSVM_CS;
    param.eps = eps;
    param.C = c;
    param.p = 0.1;
    const char *bad = check_parameter(&prob, &param);
    if (bad) {
        fprintf(stderr, "liblinear_train: %s\n", bad);
        return 2;
    }
    set_print_string_function(quiet);

    signal(SIGALRM, stop);
    alarm(limit);
    double wall = seconds(CLOCK_MONOTONIC), cpu = seconds(CLOCK_PROCESS_CPUTIME_ID);
    struct model *model = train(&prob, &param);
    wall = seconds(CLOCK_MONOTONIC) - wall;
    cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu;
    alarm(0);

    if (save_model(argv[8], model) != 0) {
        fprintf(stderr, "liblinear_train: cannot write %s\n", argv[8]);
        return 2;
    }
    printf("train %.6f %.6f\n", wall, cpu);
    free_and_destroy_model(&model);
    free(space);
    free(rows);
    free(y);
    return 0;
}
