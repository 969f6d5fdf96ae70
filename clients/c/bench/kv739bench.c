/*
 * kv739bench - latency and throughput of the kv739 operations over libanykv.
 *
 *   kv739bench -s host:port -t THREADS -n OPS [-w workload] [-v bytes] [-T]
 *
 * Every row runs OPS operations in total, split over T threads, for
 * T = 1..THREADS (only THREADS with -T). Each thread has its own libanykv
 * handle, connected before the clock starts. Writes are "SET key value GET"
 * (what kv739_put sends), reads are GET. Workloads (-w, default all):
 *   write-one    repeated writes of one key
 *   read-one     repeated reads of one key
 *   distinct     writes of distinct keys, then reads of the same keys
 *   read-absent  reads of random keys that do not exist
 *   sizes        write-one and read-one for values of 16..2048 bytes
 * Latencies are per operation (client-side round trip) in microseconds.
 * Keys are prefixed "bench:<pid>:" and deleted afterwards (not timed).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "anykv.h"

enum op { OP_WRITE_ONE, OP_READ_ONE, OP_WRITE_DISTINCT, OP_READ_DISTINCT, OP_READ_ABSENT };
static const char *op_names[] = {"write-one", "read-one", "write-distinct",
                                 "read-distinct", "read-absent"};

static const char *g_addr;
static char g_prefix[64];

typedef struct {
    int id;
    enum op op;
    size_t vsize;
    long ops;              /* operations for this thread */
    long first;            /* index of its first distinct key */
    anykv_t *h;
    uint64_t *lat;         /* ns per operation */
    long errors;
    pthread_barrier_t *start;
} worker;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t key_for(char *buf, size_t cap, enum op op, int thread, long i, size_t vsize)
{
    switch (op) {
    case OP_WRITE_ONE:
    case OP_READ_ONE: /* one key per value size, shared by all threads */
        return (size_t)snprintf(buf, cap, "%sone:%zu", g_prefix, vsize);
    case OP_WRITE_DISTINCT:
    case OP_READ_DISTINCT:
        return (size_t)snprintf(buf, cap, "%sd:%ld", g_prefix, i);
    default:
        return (size_t)snprintf(buf, cap, "%sabsent:%d:%ld", g_prefix, thread, i);
    }
}

static void *run(void *arg)
{
    worker *w = arg;
    char key[128], *value = malloc(w->vsize);
    memset(value, 'v', w->vsize);
    uint64_t rnd = 0x9e3779b97f4a7c15ull * (uint64_t)(w->id + 1) ^ now_ns();
    pthread_barrier_wait(w->start);
    for (long i = 0; i < w->ops; i++) {
        long idx = w->first + i;
        if (w->op == OP_READ_ABSENT) { /* xorshift64: a fresh random key */
            rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
            idx = (long)(rnd >> 1);
        }
        size_t kl = key_for(key, sizeof key, w->op, w->id, idx, w->vsize);
        char *v = NULL;
        int rc, want;
        uint64_t t0 = now_ns();
        if (w->op == OP_WRITE_ONE || w->op == OP_WRITE_DISTINCT) {
            rc = anykv_getset(w->h, key, kl, value, w->vsize, &v, NULL);
            want = rc == ANYKV_OK || rc == ANYKV_NOTFOUND;
        } else {
            rc = anykv_get(w->h, key, kl, &v, NULL);
            want = w->op == OP_READ_ABSENT ? rc == ANYKV_NOTFOUND : rc == ANYKV_OK;
        }
        w->lat[i] = now_ns() - t0;
        anykv_free(v);
        if (!want && w->errors++ == 0)
            fprintf(stderr, "thread %d: %s: %s %s\n", w->id, op_names[w->op],
                    anykv_strerror(rc), anykv_errstr(w->h));
    }
    free(value);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted samples, in microseconds. */
static double pct(const uint64_t *s, long n, double p)
{
    long r = (long)((p / 100.0) * (double)n + 0.999999);
    if (r < 1)
        r = 1;
    if (r > n)
        r = n;
    return (double)s[r - 1] / 1000.0;
}

/* Run one row: ops operations of kind op over threads threads. */
static int row(enum op op, size_t vsize, int threads, long ops)
{
    worker *w = calloc((size_t)threads, sizeof *w);
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    uint64_t *lat = malloc((size_t)ops * sizeof *lat);
    pthread_barrier_t start;
    if (w == NULL || t == NULL || lat == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    long given = 0;
    for (int i = 0; i < threads; i++) {
        w[i].id = i;
        w[i].op = op;
        w[i].vsize = vsize;
        w[i].ops = ops / threads + (i < ops % threads);
        w[i].first = given;
        w[i].lat = lat + given;
        w[i].start = &start;
        given += w[i].ops;
        w[i].h = anykv_connect(g_addr, NULL);
        if (w[i].h == NULL) {
            fprintf(stderr, "kv739bench: cannot connect to %s\n", g_addr);
            exit(1);
        }
        pthread_create(&t[i], NULL, run, &w[i]);
    }
    pthread_barrier_wait(&start);
    uint64_t t0 = now_ns();
    long errors = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        errors += w[i].errors;
        anykv_close(w[i].h);
    }
    double secs = (double)(now_ns() - t0) / 1e9;
    qsort(lat, (size_t)ops, sizeof *lat, cmp_u64);
    double sum = 0;
    for (long i = 0; i < ops; i++)
        sum += (double)lat[i];
    printf("%-14s %5zu %7d %8ld %6ld %10.0f %8.1f %8.1f %8.1f %8.1f %8.1f %9.1f\n",
           op_names[op], vsize, threads, ops, errors, (double)ops / secs,
           sum / (double)ops / 1000.0, pct(lat, ops, 50), pct(lat, ops, 90),
           pct(lat, ops, 99), pct(lat, ops, 99.9), (double)lat[ops - 1] / 1000.0);
    fflush(stdout);
    pthread_barrier_destroy(&start);
    free(lat);
    free(t);
    free(w);
    return errors > 0;
}

/* Untimed setup and cleanup through one extra handle. */
static void put_one(size_t vsize)
{
    anykv_t *h = anykv_connect(g_addr, NULL);
    char key[128], *v = calloc(1, vsize);
    memset(v, 'v', vsize);
    size_t kl = key_for(key, sizeof key, OP_WRITE_ONE, 0, 0, vsize);
    if (h == NULL || anykv_set(h, key, kl, v, vsize, 0, 0) != ANYKV_OK) {
        fprintf(stderr, "kv739bench: setup failed\n");
        exit(1);
    }
    free(v);
    anykv_close(h);
}

static void cleanup(long ndistinct, const size_t *sizes, int nsizes)
{
    anykv_t *h = anykv_connect(g_addr, NULL);
    char key[128];
    if (h == NULL)
        return;
    for (long i = 0; i < ndistinct; i++)
        anykv_del(h, key, key_for(key, sizeof key, OP_WRITE_DISTINCT, 0, i, 0));
    for (int i = 0; i < nsizes; i++)
        anykv_del(h, key, key_for(key, sizeof key, OP_WRITE_ONE, 0, 0, sizes[i]));
    anykv_close(h);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: kv739bench -s host:port -t THREADS -n OPS [-w workload] [-v bytes] [-T]\n"
            "  workloads: all (default), write-one, read-one, distinct, read-absent, sizes\n"
            "  -v  value size for the non-sweep workloads (default 128, max 2048)\n"
            "  -T  run only with THREADS threads instead of 1..THREADS\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *wl = "all";
    int maxthreads = 1, only_max = 0;
    long ops = 10000;
    size_t vsize = 128;
    int c;
    while ((c = getopt(argc, argv, "s:t:n:w:v:T")) != -1) {
        switch (c) {
        case 's': g_addr = optarg; break;
        case 't': maxthreads = atoi(optarg); break;
        case 'n': ops = atol(optarg); break;
        case 'w': wl = optarg; break;
        case 'v': vsize = (size_t)atol(optarg); break;
        case 'T': only_max = 1; break;
        default: usage();
        }
    }
    int all = strcmp(wl, "all") == 0;
    if (g_addr == NULL || maxthreads < 1 || maxthreads > 1024 || ops < maxthreads ||
        vsize < 1 || vsize > 2048 ||
        !(all || !strcmp(wl, "write-one") || !strcmp(wl, "read-one") ||
          !strcmp(wl, "distinct") || !strcmp(wl, "read-absent") || !strcmp(wl, "sizes")))
        usage();
    snprintf(g_prefix, sizeof g_prefix, "bench:%ld:", (long)getpid());
    anykv_t *probe = anykv_connect(g_addr, NULL);
    if (probe == NULL || anykv_ping(probe) != ANYKV_OK) {
        fprintf(stderr, "kv739bench: %s does not answer PING\n", g_addr);
        return 1;
    }
    anykv_close(probe);

    static const size_t sizes[] = {16, 128, 512, 1024, 2048};
    printf("kv739bench %s: %ld ops per row, threads %s%d, latency in us\n", g_addr, ops,
           only_max ? "" : "1..", maxthreads);
    printf("%-14s %5s %7s %8s %6s %10s %8s %8s %8s %8s %8s %9s\n", "workload", "size",
           "threads", "ops", "errors", "ops/s", "mean", "p50", "p90", "p99", "p99.9", "max");
    int failed = 0;
    for (int th = only_max ? maxthreads : 1; th <= maxthreads; th++) {
        if (all || !strcmp(wl, "write-one"))
            failed |= row(OP_WRITE_ONE, vsize, th, ops);
        if (all || !strcmp(wl, "read-one")) {
            put_one(vsize);
            failed |= row(OP_READ_ONE, vsize, th, ops);
        }
        if (all || !strcmp(wl, "distinct")) {
            failed |= row(OP_WRITE_DISTINCT, vsize, th, ops);
            failed |= row(OP_READ_DISTINCT, vsize, th, ops);
        }
        if (all || !strcmp(wl, "read-absent"))
            failed |= row(OP_READ_ABSENT, vsize, th, ops);
        if (all || !strcmp(wl, "sizes")) {
            for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
                failed |= row(OP_WRITE_ONE, sizes[i], th, ops);
                failed |= row(OP_READ_ONE, sizes[i], th, ops);
            }
        }
    }
    cleanup(all || !strcmp(wl, "distinct") ? ops : 0, sizes, 5);
    if (vsize != 16 && vsize != 128 && vsize != 512 && vsize != 1024 && vsize != 2048)
        cleanup(0, &vsize, 1);
    return failed ? 1 : 0;
}
