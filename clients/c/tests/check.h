/*
 * check.h - a minimal, thread-safe check counter for the C tests.
 * CHECK(cond) / CHECKF(cond, fmt, ...) count a pass or print the failing
 * expression with file:line; check_done() prints "<name>: N passed, M failed"
 * (tests/run.sh adds these up) and gives the exit status.
 */
#ifndef CHECK_H
#define CHECK_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int check_passed, check_failed;

static inline void check_vreport(int ok, const char *file, int line, const char *expr,
                          const char *fmt, va_list ap)
{
    if (ok) {
        __atomic_fetch_add(&check_passed, 1, __ATOMIC_RELAXED);
        return;
    }
    __atomic_fetch_add(&check_failed, 1, __ATOMIC_RELAXED);
    char msg[512] = "";
    if (fmt != NULL)
        vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "FAIL %s:%d: %s%s%s\n", file, line, expr, msg[0] ? " -- " : "", msg);
}

static inline int check_report(int ok, const char *file, int line, const char *expr,
                        const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static inline int check_report(int ok, const char *file, int line, const char *expr,
                        const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    check_vreport(ok, file, line, expr, fmt, ap);
    va_end(ap);
    return ok;
}

#define CHECK(cond) check_report(!!(cond), __FILE__, __LINE__, #cond, NULL)
#define CHECKF(cond, ...) check_report(!!(cond), __FILE__, __LINE__, #cond, __VA_ARGS__)
/* Integer equality with both values in the message. */
#define CHECK_EQ(a, b)                                                           \
    do {                                                                         \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);          \
        check_report(check_a_ == check_b_, __FILE__, __LINE__, #a " == " #b,     \
                     "got %lld, want %lld", check_a_, check_b_);                 \
    } while (0)

static inline int check_done(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
    fflush(stdout);
    return check_failed == 0 ? 0 : 1;
}

/* Test environment: the server address from run.sh, or exit. */
static inline const char *check_env(const char *var)
{
    const char *v = getenv(var);
    if (v == NULL || v[0] == '\0') {
        fprintf(stderr, "%s is not set (run the tests through tests/run.sh)\n", var);
        exit(2);
    }
    return v;
}

static inline int64_t check_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void check_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* A key prefix unique to this process, so runs against one server (plain,
 * then under valgrind) never see each other's keys. */
static inline const char *check_prefix(void)
{
    static char p[64];
    if (p[0] == '\0') {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(p, sizeof p, "t%ld-%ld-", (long)getpid(), (long)(ts.tv_nsec % 1000000));
    }
    return p;
}

/* The pid written in pidfile (run.sh's server), or -1. */
static inline long check_read_pid(const char *pidfile)
{
    FILE *f = fopen(pidfile, "r");
    long pid = -1;
    if (f != NULL) {
        if (fscanf(f, "%ld", &pid) != 1)
            pid = -1;
        fclose(f);
    }
    return pid;
}

#endif
