/*
 * fuzz_reply.c - fuzz harness for what the client parses from a server: the
 * RESP reader of conn.c (read_reply, read_line, parse_int, read_exact, fill),
 * the handshake (AUTH, SELECT, PING), and how anykv.c and kv739.c use replies.
 *
 * A server thread answers every connection with the input's bytes. The client
 * runs one scenario on them: a command, a handshake, the reply split across
 * reads (down to one byte), spurious EINTR/EAGAIN, a held-open connection
 * (timeouts), allocation failures, a reply budget. The harness checks the
 * status, outputs, error text and memory used, then that the handle still
 * works against a sane reply. Built with -fsanitize=address,undefined; the
 * library's recv/malloc/calloc/realloc are routed here (-D in the Makefile).
 *
 *   fuzz_reply [-n ITER] [-s SEED] [-o DIR] [-S SCENARIO] [-v] FILE|DIR...
 * Without -n: every input under SCENARIOS fixed scenarios (or just -S). With
 * -n: ITER mutated inputs, deterministic for a seed (a poor man's fuzzer).
 * A failing input is written to DIR (default .) as crash-*.resp. -v: a line
 * per case (scenario, time).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "kv739.h"

#define FUZZ_MAX_INPUT 65536
#define SCENARIOS 44 /* per input without -n: four of every op */

/* ---- the input under test, and how to report it -------------------- */

static unsigned char *g_in;
static size_t g_inlen;
static uint32_t g_scen;
static const char *g_outdir = ".";
static const char *g_what = "";

static void save_input(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/crash-%u-%zu.resp", g_outdir, g_scen, g_inlen);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        if (write(fd, g_in, g_inlen) < 0) { /* nothing more to do on a dying path */
        }
        close(fd);
    }
    fprintf(stderr, "fuzz_reply: %s: scenario %u, input saved as %s (rerun: fuzz_reply -S %u %s)\n",
            g_what, g_scen, path, g_scen, path);
}

static void on_death(void) { save_input(); }

#define FAIL(...)                                                                \
    do {                                                                         \
        char what_[256];                                                         \
        snprintf(what_, sizeof what_, __VA_ARGS__);                              \
        g_what = what_;                                                          \
        save_input();                                                            \
        abort();                                                                 \
    } while (0)

static void on_alarm(int sig)
{
    (void)sig;
    g_what = "hang (a case ran over 10 s)";
    save_input();
    abort();
}

static int g_verbose; /* -v: one line per case on stderr */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- deterministic randomness --------------------------------------- */

static uint64_t rnd_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint32_t rnd(uint64_t *s, uint32_t n) { return n ? (uint32_t)(rnd_next(s) % n) : 0; }

/* ---- hooks the library's calls go through ---------------------------- */

static int g_chunk;           /* recv size cap: 0 none, 1 one byte, 2 random small, 3 random */
static int g_inject;          /* nonzero: spurious EINTR / EAGAIN from recv */
static long g_failat = -1;    /* index of the allocation to fail (-1: none) */
static long g_nalloc;         /* allocations so far in this call */
static size_t g_allocated;    /* bytes requested so far in this call */
static size_t g_received;     /* bytes received so far in this call */
static uint64_t g_hookrnd;

static long g_connects;        /* connections the client opened */

int fuzz_connect(int fd, const struct sockaddr *a, socklen_t len);
ssize_t fuzz_recv(int fd, void *buf, size_t n, int flags);
void *fuzz_malloc(size_t n);
void *fuzz_calloc(size_t a, size_t b);
void *fuzz_realloc(void *p, size_t n);

ssize_t fuzz_recv(int fd, void *buf, size_t n, int flags)
{
    if (g_inject && rnd(&g_hookrnd, 8) == 0) {
        errno = rnd(&g_hookrnd, 2) ? EINTR : EAGAIN;
        return -1;
    }
    /* Byte by byte for the first 4 KiB of a call, then in small pieces up to
     * 16 KiB (enough to cross every boundary of the reader), then as it comes. */
    size_t cap = g_received >= 16384 ? n
               : g_chunk == 1 && g_received < 4096 ? 1
               : g_chunk == 1 || g_chunk == 2 ? 1 + rnd(&g_hookrnd, 7)
               : g_chunk == 3 ? 1 + rnd(&g_hookrnd, 300) : n;
    ssize_t got = recv(fd, buf, n < cap ? n : cap, flags);
    g_received += got > 0 ? (size_t)got : 0;
    return got;
}

int fuzz_connect(int fd, const struct sockaddr *a, socklen_t len)
{
    int rc = connect(fd, a, len);
    if (rc == 0 || errno == EINPROGRESS)
        g_connects++;
    return rc;
}

static int alloc_fails(size_t n)
{
    g_allocated += n;
    return g_nalloc++ == g_failat;
}
void *fuzz_malloc(size_t n) { return alloc_fails(n) ? NULL : malloc(n); }
void *fuzz_calloc(size_t a, size_t b) { return alloc_fails(a * b) ? NULL : calloc(a, b); }
void *fuzz_realloc(void *p, size_t n) { return alloc_fails(n) ? NULL : realloc(p, n); }

/* ---- the scripted server -------------------------------------------- */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char *g_script, *g_reuse; /* what a new connection gets; what a reused one gets */
static size_t g_scriptlen, g_reuselen;
static int g_hold, g_gen;        /* keep connections open; script generation */
static int g_port;
static long g_sent;              /* connections that were sent their script */
static pthread_cond_t g_sent_cond = PTHREAD_COND_INITIALIZER;

static void send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        p += w, n -= (size_t)w;
    }
}

/* Serve connections one at a time: send the script, then (unless holding)
 * shut down the write side; read until the client closes. A held connection
 * the client sends to again after the script changed gets the reuse reply,
 * as a live server would answer the next command. */
static void *server(void *arg)
{
    int lfd = *(int *)arg;
    static char buf[65536];
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            continue;
        pthread_mutex_lock(&g_lock);
        char *s = malloc(g_scriptlen + 1);
        size_t len = g_scriptlen;
        int hold = g_hold, gen = g_gen;
        if (s != NULL)
            memcpy(s, g_script, len);
        pthread_mutex_unlock(&g_lock);
        if (s != NULL)
            send_all(fd, s, len);
        free(s);
        if (!hold)
            shutdown(fd, SHUT_WR);
        pthread_mutex_lock(&g_lock);
        g_sent++;
        pthread_cond_broadcast(&g_sent_cond);
        pthread_mutex_unlock(&g_lock);
        for (;;) {
            ssize_t n = recv(fd, buf, sizeof buf, 0);
            if (n <= 0)
                break;
            pthread_mutex_lock(&g_lock);
            if (hold && g_gen != gen) {
                gen = g_gen;
                send_all(fd, g_reuse, g_reuselen);
            }
            pthread_mutex_unlock(&g_lock);
        }
        close(fd);
    }
    return NULL;
}

static void set_script(const void *s, size_t n, const char *reuse, int hold)
{
    pthread_mutex_lock(&g_lock);
    free(g_script);
    g_script = malloc(n + 1);
    memcpy(g_script, s, n);
    g_scriptlen = n;
    g_reuse = (char *)reuse;
    g_reuselen = reuse ? strlen(reuse) : 0;
    g_hold = hold;
    g_gen++;
    pthread_mutex_unlock(&g_lock);
}

/* Wait (up to 200 ms) until the server has accepted every connection the
 * client opened, sent its script and shut it down: the client must then see
 * EOF before its next call. If it still sends after that, the client has not
 * read it all and sees that instead. */
static void wait_sent(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 200000000;
    if (ts.tv_nsec >= 1000000000)
        ts.tv_sec++, ts.tv_nsec -= 1000000000;
    pthread_mutex_lock(&g_lock);
    while (g_sent < g_connects && pthread_cond_timedwait(&g_sent_cond, &g_lock, &ts) == 0)
        ;
    pthread_mutex_unlock(&g_lock);
}

static void start_server(void)
{
    static int lfd;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    pthread_t t;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 64) != 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &al) != 0 ||
        pthread_create(&t, NULL, server, &lfd) != 0) {
        perror("fuzz_reply: server");
        exit(2);
    }
    g_port = ntohs(a.sin_port);
}

/* ---- scenarios ------------------------------------------------------- */

enum { OP_PING, OP_GET, OP_SET, OP_GETSET, OP_DEL, OP_MGET, OP_INCR, OP_EXPIRE, OP_SCAN,
       OP_739GET, OP_739PUT, NOPS };
static const char *op_names[] = {"ping", "get", "set", "getset", "del", "mget", "incr",
                                 "expire", "scan", "kv739_get", "kv739_put"};

typedef struct {
    int op, hs, rawhs, chunk, inject, hold, ncalls, failat, flags;
    size_t budget;
} scenario;

/* hs: 0 none, 1 AUTH pass, 2 AUTH user pass, 3 SELECT, 4 AUTH + SELECT, 5 two servers (PING) */
static scenario decode(uint32_t id)
{
    uint64_t s = id;
    scenario c;
    c.op = (int)(id % NOPS);
    c.chunk = (int)(id / NOPS % 4);
    c.hs = (int)rnd(&s, 6);
    c.inject = rnd(&s, 4) == 0;
    c.ncalls = 1 + (int)rnd(&s, 3);
    c.failat = rnd(&s, 5) == 0 ? (int)rnd(&s, 8) : -1;
    c.flags = (int)rnd(&s, 3);
    static const size_t budgets[] = {0, 100, 4096, 1 << 20};
    c.budget = budgets[rnd(&s, 4)];
    c.hold = rnd(&s, 8) == 0;
    c.rawhs = rnd(&s, 4) == 0; /* the input answers the handshake too; else a sane one does */
    if (c.op >= OP_739GET) /* kv739 has fixed timeouts (3 s) and settings */
        c.hs = 0, c.hold = 0, c.budget = 1 << 20;
    return c;
}

static void expect_status(int rc, const int *ok, const char *op)
{
    for (; *ok != 99; ok++)
        if (rc == *ok)
            return;
    FAIL("%s returned %d (%s), not a status it may return", op, rc, anykv_strerror(rc));
}

static void check_value(const char *v, size_t len, const char *op)
{
    if (v != NULL && v[len] != '\0')
        FAIL("%s: value of %zu bytes not NUL-terminated", op, len);
}

static void check_values(const anykv_value *v, size_t n, const char *op)
{
    for (size_t i = 0; i < n; i++)
        check_value(v[i].data, v[i].len, op);
}

/* One call of the scenario's op on h; checks what the library promises. */
static void run_op(anykv_t *h, const scenario *c)
{
    static const int st_any[] = {ANYKV_OK, ANYKV_ERR_IO, ANYKV_ERR_TIMEOUT, ANYKV_ERR_PROTOCOL,
                                 ANYKV_ERR_SERVER, ANYKV_ERR_NOMEM, 99};
    static const int st_nf[] = {ANYKV_OK, ANYKV_NOTFOUND, ANYKV_ERR_IO, ANYKV_ERR_TIMEOUT,
                                ANYKV_ERR_PROTOCOL, ANYKV_ERR_SERVER, ANYKV_ERR_NOMEM, 99};
    static const int st_set[] = {ANYKV_OK, ANYKV_NOTSET, ANYKV_ERR_IO, ANYKV_ERR_TIMEOUT,
                                 ANYKV_ERR_PROTOCOL, ANYKV_ERR_SERVER, ANYKV_ERR_NOMEM, 99};
    const char *name = op_names[c->op];
    char *v = (char *)1;
    size_t vlen = 7, n = 7;
    anykv_value *vals = (anykv_value *)1;
    uint64_t next = 42;
    int64_t num = 0;
    const void *keys[3] = {"a", "bb", "ccc"};
    const size_t klens[3] = {1, 2, 3};
    int rc = 0;
    switch (c->op) {
    case OP_PING:
        expect_status(rc = anykv_ping(h), st_any, name);
        break;
    case OP_GET:
    case OP_GETSET:
        rc = c->op == OP_GET ? anykv_get(h, "k", 1, &v, &vlen)
                             : anykv_getset(h, "k", 1, "v", 1, &v, &vlen);
        expect_status(rc, st_nf, name);
        if ((rc == ANYKV_OK) != (v != NULL) || (rc != ANYKV_OK && vlen != 0))
            FAIL("%s: status %d with value %p (%zu bytes)", name, rc, (void *)v, vlen);
        check_value(v, vlen, name);
        anykv_free(v);
        break;
    case OP_SET:
        rc = anykv_set(h, "k", 1, "v", 1, c->flags ? 1000 : 0, c->flags);
        expect_status(rc, c->flags ? st_set : st_any, name);
        break;
    case OP_DEL:
    case OP_EXPIRE:
        rc = c->op == OP_DEL ? anykv_del(h, "k", 1) : anykv_expire(h, "k", 1, 10);
        expect_status(rc, st_nf, name);
        break;
    case OP_INCR:
        expect_status(rc = anykv_incr(h, "k", 1, 1, &num), st_any, name);
        break;
    case OP_MGET:
        n = 1 + (size_t)c->flags;
        expect_status(rc = anykv_mget(h, n, keys, klens, &vals), st_any, name);
        if ((rc == ANYKV_OK) != (vals != NULL))
            FAIL("mget: status %d with array %p", rc, (void *)vals);
        if (vals != NULL)
            check_values(vals, n, name);
        anykv_free(vals);
        break;
    case OP_SCAN:
        rc = anykv_scan(h, 0, c->flags ? "k*" : NULL, 2, (size_t)c->flags, &next, &vals, &n);
        expect_status(rc, st_any, name);
        if ((vals != NULL) != (rc == ANYKV_OK && n > 0) || (rc != ANYKV_OK && (n != 0 || next != 42)))
            FAIL("scan: status %d with %zu keys at %p, next %llu", rc, n, (void *)vals,
                 (unsigned long long)next);
        if (vals != NULL)
            check_values(vals, n, name);
        anykv_free(vals);
        break;
    }
    const char *e = anykv_errstr(h);
    if (rc < 0 && e[0] == '\0')
        FAIL("%s: status %s with no error text", name, anykv_strerror(rc));
    if (rc >= 0 && e[0] != '\0')
        FAIL("%s: status %s with error text \"%s\"", name, anykv_strerror(rc), e);
    if ((rc == ANYKV_ERR_IO || rc == ANYKV_ERR_TIMEOUT || rc == ANYKV_ERR_PROTOCOL) && h->fd >= 0)
        FAIL("%s: %s left the connection open", name, anykv_strerror(rc));
    if (h->rpos > h->rlen || h->rlen > h->rcap || h->rcap > 2 * KV_MAX_LINE)
        FAIL("%s: read buffer state %zu/%zu/%zu", name, h->rpos, h->rlen, h->rcap);
}

/* kv739_get / kv739_put on the process-wide handle, with a guard after the
 * 2049-byte buffer. */
static void run_739(const scenario *c)
{
    char buf[KV739_BUF_SIZE + 64];
    memset(buf, 'G', sizeof buf);
    char key[] = "k", val[] = "v";
    int rc = c->op == OP_739GET ? kv739_get(key, buf) : kv739_put(key, val, buf);
    if (rc < -1 || rc > 1)
        FAIL("%s returned %d", op_names[c->op], rc);
    for (size_t i = KV739_BUF_SIZE; i < sizeof buf; i++)
        if (buf[i] != 'G')
            FAIL("%s wrote past its 2049-byte buffer", op_names[c->op]);
    if (rc == 0 && memchr(buf, '\0', KV739_BUF_SIZE) == NULL)
        FAIL("%s: value not NUL-terminated", op_names[c->op]);
}

/* What a sane server answers to the handshake of hs, then to the command. */
static const char *hs_replies[] = {"", "+OK\r\n", "+OK\r\n", "+OK\r\n", "+OK\r\n+OK\r\n", "+PONG\r\n"};

static void run_case(const unsigned char *in, size_t len, uint32_t id)
{
    scenario c = decode(id);
    g_in = (unsigned char *)in, g_inlen = len, g_scen = id;
    g_chunk = c.chunk, g_inject = c.inject, g_hookrnd = id * 7919ull + len;
    alarm(10);
    int64_t t0 = now_ms();
    char addr[64];
    snprintf(addr, sizeof addr, c.hs == 5 ? "127.0.0.1:%d,127.0.0.1:%d" : "127.0.0.1:%d", g_port,
             g_port);
    if (c.op >= OP_739GET) {
        set_script("+PONG\r\n", 7, NULL, 0);
        if (kv739_init(addr) != 0)
            FAIL("kv739_init failed against a sane server");
    }
    anykv_options o = {.lazy = 1, .io_timeout_ms = c.hold ? 5 : 3000, .max_reply_bytes = c.budget};
    if (c.hs == 1 || c.hs == 2 || c.hs == 4)
        o.password = "pw";
    if (c.hs == 2)
        o.username = "user";
    if (c.hs == 3 || c.hs == 4)
        o.database = 2;
    anykv_t *h = anykv_connect(addr, &o);
    if (h == NULL)
        FAIL("anykv_connect (lazy) failed");
    /* The input follows a sane handshake's replies, or answers the handshake itself. */
    size_t plen = c.rawhs ? 0 : strlen(hs_replies[c.hs]);
    unsigned char *script = malloc(plen + len + 1);
    memcpy(script, hs_replies[c.hs], plen);
    if (len > 0)
        memcpy(script + plen, in, len);
    set_script(script, plen + len, NULL, c.hold);
    free(script);
    size_t cap = (c.budget ? c.budget : KV_DEFAULT_MAX_REPLY) * 3 + (1 << 20);
    for (int i = 0; i < c.ncalls; i++) {
        g_nalloc = 0, g_allocated = 0, g_received = 0, g_failat = c.failat;
        if (c.op >= OP_739GET)
            run_739(&c);
        else
            run_op(h, &c);
        if (g_allocated > cap)
            FAIL("%s allocated %zu bytes (budget %zu)", op_names[c.op], g_allocated, c.budget);
    }
    g_failat = -1, g_inject = 0;
    wait_sent();
    /* The handle must work again once the server is sane. */
    if (c.op >= OP_739GET) {
        set_script("$1\r\nx\r\n", 7, "$1\r\nx\r\n", 0);
        char buf[KV739_BUF_SIZE], key[] = "k";
        if (kv739_get(key, buf) != 0 || strcmp(buf, "x") != 0)
            FAIL("kv739_get fails against a sane server after the input");
        kv739_shutdown();
    } else {
        char sane[64];
        snprintf(sane, sizeof sane, "%s+PONG\r\n", hs_replies[c.hs]);
        set_script(sane, strlen(sane), "+PONG\r\n", c.hold);
        h->io_timeout_ms = 3000; /* a held-open case's 5 ms is too short on a busy machine */
        int rc = anykv_ping(h);
        if (rc != ANYKV_OK)
            FAIL("ping fails against a sane server after the input: %s: %s", anykv_strerror(rc),
                 anykv_errstr(h));
    }
    anykv_close(h);
    alarm(0);
    if (g_verbose)
        fprintf(stderr, "case %u: %s hs=%d rawhs=%d chunk=%d inject=%d hold=%d calls=%d failat=%d budget=%zu: %lld ms\n",
                id, op_names[c.op], c.hs, c.rawhs, c.chunk, c.inject, c.hold, c.ncalls, c.failat, c.budget,
                (long long)(now_ms() - t0));
}

/* ---- inputs: files, generated replies, mutations --------------------- */

typedef struct {
    unsigned char *p;
    size_t n;
} blob;

static blob *g_corpus;
static size_t g_ncorpus;

static void add_input(const unsigned char *p, size_t n)
{
    g_corpus = realloc(g_corpus, (g_ncorpus + 1) * sizeof *g_corpus);
    blob b = {malloc(n + 1), n};
    memcpy(b.p, p, n);
    g_corpus[g_ncorpus++] = b;
}

static void load_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        exit(2);
    }
    unsigned char *buf = malloc(4 * FUZZ_MAX_INPUT);
    size_t n = fread(buf, 1, 4 * FUZZ_MAX_INPUT, f);
    fclose(f);
    add_input(buf, n);
    free(buf);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A file, or every regular file of a directory in name order. */
static void load_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        char **names = NULL;
        size_t n = 0;
        for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
            if (e->d_name[0] == '.' || strcmp(e->d_name, "README") == 0)
                continue;
            names = realloc(names, (n + 1) * sizeof *names);
            names[n] = malloc(strlen(path) + strlen(e->d_name) + 2);
            sprintf(names[n++], "%s/%s", path, e->d_name);
        }
        if (d != NULL)
            closedir(d);
        qsort(names, n, sizeof *names, cmp_names);
        for (size_t i = 0; i < n; i++) {
            load_file(names[i]);
            free(names[i]);
        }
        free(names);
    } else {
        load_file(path);
    }
}

typedef struct {
    unsigned char *p;
    size_t n, cap;
} buf_t;

static void put(buf_t *b, const void *p, size_t n)
{
    if (n == 0 && b->p != NULL)
        return;
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
    }
    if (n > 0)
        memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void puts_(buf_t *b, const char *s) { put(b, s, strlen(s)); }

/* A well-formed random reply (what a correct server might send). */
static void gen_reply(buf_t *b, uint64_t *s, int depth)
{
    char tmp[64];
    switch (rnd(s, depth < 4 ? 7 : 6)) {
    case 0: puts_(b, rnd(s, 2) ? "+OK\r\n" : "+PONG\r\n"); break;
    case 1: puts_(b, "-ERR something\r\n"); break;
    case 2:
        snprintf(tmp, sizeof tmp, ":%lld\r\n", (long long)(rnd_next(s) >> rnd(s, 64)) * (rnd(s, 2) ? 1 : -1));
        puts_(b, tmp);
        break;
    case 3: puts_(b, rnd(s, 2) ? "$-1\r\n" : "*-1\r\n"); break;
    case 4:
    case 5: {
        uint32_t n = rnd(s, 4) == 0 ? rnd(s, 3000) : rnd(s, 12);
        snprintf(tmp, sizeof tmp, "$%u\r\n", n);
        puts_(b, tmp);
        for (uint32_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)(rnd(s, 4) ? 'a' + rnd(s, 26) : rnd(s, 256));
            put(b, &c, 1);
        }
        puts_(b, "\r\n");
        break;
    }
    default: {
        uint32_t n = rnd(s, 5);
        snprintf(tmp, sizeof tmp, "*%u\r\n", n);
        puts_(b, tmp);
        for (uint32_t i = 0; i < n; i++)
            gen_reply(b, s, depth + 1);
    }
    }
}

static const char *tokens[] = {
    "\r\n", "\r", "\n", "*", "$", ":", "+", "-", "%", "~", "_", ",", "#", "=", ">", "|", "(", "!",
    "-1", "0", "1", "-0", "00", "19", "65536", "65535", "2147483647", "2147483648", "4294967296",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
    "18446744073709551615", "18446744073709551616", "99999999999999999999", " ", "\0",
    "*1\r\n", "*2\r\n", "$1\r\nx\r\n", "$-1\r\n", "*-1\r\n", "*0\r\n", "$0\r\n\r\n", ":1\r\n",
    "+OK\r\n", "-ERR\r\n", "-\r\n", "+PONG\r\n", "HTTP/1.1 200 OK\r\n", "ERROR\r\n", "END\r\n",
};

/* 1..4 random edits of b, kept under FUZZ_MAX_INPUT bytes. */
static void mutate(buf_t *b, uint64_t *s)
{
    int edits = 1 + (int)rnd(s, 4);
    for (int e = 0; e < edits; e++) {
        size_t at = b->n ? rnd(s, (uint32_t)b->n + 1) : 0, n;
        switch (rnd(s, 9)) {
        case 0: /* flip a bit */
            if (b->n)
                b->p[rnd(s, (uint32_t)b->n)] ^= (unsigned char)(1u << rnd(s, 8));
            break;
        case 1: /* set a byte */
            if (b->n)
                b->p[rnd(s, (uint32_t)b->n)] = (unsigned char)rnd(s, 256);
            break;
        case 2: /* delete a range */
            n = rnd(s, 16) + 1;
            if (at + n <= b->n) {
                memmove(b->p + at, b->p + at + n, b->n - at - n);
                b->n -= n;
            }
            break;
        case 3: /* truncate */
            b->n = at;
            break;
        case 4:
        case 5: { /* insert a token */
            const char *t = tokens[rnd(s, sizeof tokens / sizeof *tokens)];
            n = t[0] ? strlen(t) : 1;
            buf_t tail = {0};
            put(&tail, b->p + at, b->n - at);
            b->n = at;
            put(b, t, n);
            put(b, tail.p, tail.n);
            free(tail.p);
            break;
        }
        case 6: { /* replace a run of digits with a token */
            size_t i = at;
            while (i < b->n && (b->p[i] < '0' || b->p[i] > '9'))
                i++;
            size_t j = i;
            while (j < b->n && b->p[j] >= '0' && b->p[j] <= '9')
                j++;
            const char *t = tokens[18 + rnd(s, 18)];
            buf_t tail = {0};
            put(&tail, b->p + j, b->n - j);
            b->n = i;
            puts_(b, t);
            put(b, tail.p, tail.n);
            free(tail.p);
            break;
        }
        case 7: { /* duplicate a range (nesting, repeats) */
            n = rnd(s, 64) + 1;
            if (at + n <= b->n && b->n + n < FUZZ_MAX_INPUT) {
                buf_t tail = {0};
                put(&tail, b->p + at, b->n - at);
                b->n = at;
                put(b, tail.p, n);
                put(b, tail.p, tail.n);
                free(tail.p);
            }
            break;
        }
        default: /* splice in part of another input, or a generated reply */
            if (g_ncorpus && rnd(s, 2)) {
                blob o = g_corpus[rnd(s, (uint32_t)g_ncorpus)];
                size_t from = o.n ? rnd(s, (uint32_t)o.n) : 0;
                n = o.n - from < 256 ? o.n - from : 256;
                buf_t tail = {0};
                put(&tail, b->p + at, b->n - at);
                b->n = at;
                put(b, o.p + from, n);
                put(b, tail.p, tail.n);
                free(tail.p);
            } else {
                b->n = at;
                gen_reply(b, s, 0);
            }
        }
        if (b->n > FUZZ_MAX_INPUT)
            b->n = FUZZ_MAX_INPUT;
    }
}

int main(int argc, char **argv)
{
    long iters = -1, only = -1;
    uint64_t seed = 1;
    int opt;
    while ((opt = getopt(argc, argv, "n:s:o:S:v")) != -1) {
        if (opt == 'n')
            iters = atol(optarg);
        else if (opt == 's')
            seed = strtoull(optarg, NULL, 10);
        else if (opt == 'o')
            g_outdir = optarg;
        else if (opt == 'S')
            only = atol(optarg);
        else if (opt == 'v')
            g_verbose = 1;
        else {
            fprintf(stderr, "usage: %s [-n ITER] [-s SEED] [-o DIR] [-S SCENARIO] [-v] FILE|DIR...\n", argv[0]);
            return 2;
        }
    }
    for (int i = optind; i < argc; i++)
        load_path(argv[i]);
    /* SIGPIPE stays fatal: the library must send with MSG_NOSIGNAL. */
    signal(SIGALRM, on_alarm);
    extern void __sanitizer_set_death_callback(void (*)(void));
    __sanitizer_set_death_callback(on_death);
    start_server();
    long cases = 0;
    if (iters < 0) { /* every input under the fixed scenarios */
        for (size_t i = 0; i < g_ncorpus; i++)
            for (uint32_t id = 0; id < (only < 0 ? SCENARIOS : 1); id++) {
                run_case(g_corpus[i].p, g_corpus[i].n, only < 0 ? id : (uint32_t)only);
                cases++;
            }
        printf("fuzz_reply: %zu inputs, %ld cases passed\n", g_ncorpus, cases);
        return 0;
    }
    uint64_t s = seed;
    buf_t b = {0};
    for (long it = 0; it < iters; it++) {
        b.n = 0;
        if (g_ncorpus == 0 || rnd(&s, 4) == 0)
            gen_reply(&b, &s, 0);
        else {
            blob o = g_corpus[rnd(&s, (uint32_t)g_ncorpus)];
            put(&b, o.p, o.n > FUZZ_MAX_INPUT ? FUZZ_MAX_INPUT : o.n);
        }
        mutate(&b, &s);
        if (b.p == NULL)
            put(&b, "", 0);
        run_case(b.p, b.n, only >= 0 ? (uint32_t)only : (uint32_t)rnd_next(&s));
        cases++;
    }
    free(b.p);
    printf("fuzz_reply: %ld mutated inputs (seed %llu) passed\n", cases, (unsigned long long)seed);
    return 0;
}
