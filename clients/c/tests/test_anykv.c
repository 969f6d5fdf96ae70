/*
 * test_anykv.c - libanykv against the real server at $KV_ADDR (binary
 * safety, TTL, NX/XX, getset, mget, incr, expire, scan, server errors,
 * SELECT, reply caps) and against fake servers (protocol errors, timeouts,
 * reconnection, AUTH).
 */
#include <dlfcn.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "anykv.h"
#include "check.h"
#include "fakeserver.h"

#define KV_LINE_CAP 65536 /* KV_MAX_LINE of src/internal.h: a reply line's bytes before CRLF */

static char addr[256];
static char pfx[96];

/* Build "<prefix><name>" into buf, return its length. */
static size_t key(char *buf, size_t cap, const char *name)
{
    return (size_t)snprintf(buf, cap, "%s%s", pfx, name);
}

static anykv_t *connect_default(void)
{
    anykv_t *h = anykv_connect(addr, NULL);
    CHECKF(h != NULL, "connect %s", addr);
    return h;
}

static void test_basic(anykv_t *h)
{
    char k[128], *v = (char *)1;
    size_t kl = key(k, sizeof k, "basic"), vl = 99;
    CHECK_EQ(anykv_ping(h), ANYKV_OK);
    CHECK_EQ(anykv_get(h, k, kl, &v, &vl), ANYKV_NOTFOUND);
    CHECK(v == NULL && vl == 0);
    CHECK_EQ(anykv_set(h, k, kl, "hello", 5, 0, 0), ANYKV_OK);
    CHECK_EQ(anykv_get(h, k, kl, &v, &vl), ANYKV_OK);
    CHECK(vl == 5 && memcmp(v, "hello", 5) == 0 && v[5] == '\0');
    anykv_free(v);
    CHECK_EQ(anykv_errstr(h)[0], '\0');
    /* Overwrite with a shorter value: no residue. */
    CHECK_EQ(anykv_set(h, k, kl, "hi", 2, 0, 0), ANYKV_OK);
    CHECK_EQ(anykv_get(h, k, kl, &v, &vl), ANYKV_OK);
    CHECK(vl == 2 && strcmp(v, "hi") == 0);
    anykv_free(v);
    /* Empty value is a value, not absence. */
    CHECK_EQ(anykv_set(h, k, kl, "", 0, 0, 0), ANYKV_OK);
    CHECK_EQ(anykv_get(h, k, kl, &v, &vl), ANYKV_OK);
    CHECK(v != NULL && vl == 0);
    anykv_free(v);
    CHECK_EQ(anykv_del(h, k, kl), ANYKV_OK);
    CHECK_EQ(anykv_del(h, k, kl), ANYKV_NOTFOUND);
    /* vlen may be NULL. */
    CHECK_EQ(anykv_get(h, k, kl, &v, NULL), ANYKV_NOTFOUND);
}

static void test_binary(anykv_t *h)
{
    /* Key and value with NUL, CR, LF and high bytes. */
    char k[128];
    size_t kl = key(k, sizeof k, "bin");
    memcpy(k + kl, "\0\r\n\xff", 4);
    kl += 4;
    const char val[] = "a\0b\r\n$3\r\n\xff\x00z";
    size_t vlen = sizeof val - 1;
    char *v;
    size_t vl;
    CHECK_EQ(anykv_set(h, k, kl, val, vlen, 0, 0), ANYKV_OK);
    CHECK_EQ(anykv_get(h, k, kl, &v, &vl), ANYKV_OK);
    CHECK(vl == vlen && memcmp(v, val, vlen) == 0);
    anykv_free(v);
    /* The same key without its binary tail is a different key. */
    CHECK_EQ(anykv_get(h, k, kl - 4, &v, &vl), ANYKV_NOTFOUND);
    CHECK_EQ(anykv_del(h, k, kl), ANYKV_OK);

    /* A 1 MiB value of every byte value round-trips. */
    size_t big = 1u << 20;
    char *b = malloc(big);
    for (size_t i = 0; i < big; i++)
        b[i] = (char)(i * 7 + i / 256);
    kl = key(k, sizeof k, "big");
    CHECK_EQ(anykv_set(h, k, kl, b, big, 0, 0), ANYKV_OK);
    CHECK_EQ(anykv_get(h, k, kl, &v, &vl), ANYKV_OK);
    CHECK(vl == big && v != NULL && memcmp(v, b, big) == 0);
    anykv_free(v);
    anykv_del(h, k, kl);
    free(b);
}

static void test_conditions_ttl(anykv_t *h)
{
    char k[128], *v;
    size_t kl = key(k, sizeof k, "cond"), vl;
    CHECK_EQ(anykv_set(h, k, kl, "x", 1, 0, ANYKV_SET_XX), ANYKV_NOTSET);
    CHECK_EQ(anykv_get(h, k, kl, &v, &vl), ANYKV_NOTFOUND);
    CHECK_EQ(anykv_set(h, k, kl, "one", 3, 0, ANYKV_SET_NX), ANYKV_OK);
    CHECK_EQ(anykv_set(h, k, kl, "two", 3, 0, ANYKV_SET_NX), ANYKV_NOTSET);
    CHECK_EQ(anykv_get(h, k, kl, &v, &vl), ANYKV_OK);
    CHECK(strcmp(v, "one") == 0);
    anykv_free(v);
    CHECK_EQ(anykv_set(h, k, kl, "three", 5, 0, ANYKV_SET_XX), ANYKV_OK);
    CHECK_EQ(anykv_get(h, k, kl, &v, &vl), ANYKV_OK);
    CHECK(strcmp(v, "three") == 0);
    anykv_free(v);

    /* getset: absent, then present. */
    char k2[128], *old = (char *)1;
    size_t k2l = key(k2, sizeof k2, "getset"), ol = 7;
    CHECK_EQ(anykv_getset(h, k2, k2l, "first", 5, &old, &ol), ANYKV_NOTFOUND);
    CHECK(old == NULL && ol == 0);
    CHECK_EQ(anykv_getset(h, k2, k2l, "second", 6, &old, &ol), ANYKV_OK);
    CHECK(ol == 5 && strcmp(old, "first") == 0);
    anykv_free(old);
    CHECK_EQ(anykv_getset(h, k2, k2l, "third", 5, NULL, NULL), ANYKV_OK);
    CHECK_EQ(anykv_get(h, k2, k2l, &v, &vl), ANYKV_OK);
    CHECK(strcmp(v, "third") == 0);
    anykv_free(v);

    /* TTL in ms (SET PX, with NX too) and EXPIRE in seconds: present now,
     * gone after one shared wait; EXPIRE of an absent key is NOTFOUND. */
    char k3[128], k4[128];
    size_t k3l = key(k3, sizeof k3, "ttl"), k4l = key(k4, sizeof k4, "never-set");
    CHECK_EQ(anykv_set(h, k3, k3l, "tmp", 3, 1000, ANYKV_SET_NX), ANYKV_OK);
    CHECK_EQ(anykv_get(h, k3, k3l, &v, &vl), ANYKV_OK);
    anykv_free(v);
    CHECK_EQ(anykv_expire(h, k, kl, 1), ANYKV_OK);
    CHECK_EQ(anykv_expire(h, k4, k4l, 1), ANYKV_NOTFOUND);
    CHECK_EQ(anykv_get(h, k, kl, &v, &vl), ANYKV_OK);
    anykv_free(v);
    check_sleep_ms(1600);
    CHECK_EQ(anykv_get(h, k3, k3l, &v, &vl), ANYKV_NOTFOUND);
    CHECK_EQ(anykv_get(h, k, kl, &v, &vl), ANYKV_NOTFOUND);
    anykv_del(h, k2, k2l);
}

static void test_mget_incr(anykv_t *h)
{
    char k[3][128];
    size_t kl[3];
    kl[0] = key(k[0], sizeof k[0], "m0");
    kl[1] = key(k[1], sizeof k[1], "m1-absent");
    kl[2] = key(k[2], sizeof k[2], "m2");
    CHECK_EQ(anykv_set(h, k[0], kl[0], "zero", 4, 0, 0), ANYKV_OK);
    CHECK_EQ(anykv_set(h, k[2], kl[2], "t\0o", 3, 0, 0), ANYKV_OK);
    const void *keys[3] = {k[0], k[1], k[2]};
    anykv_value *vals = NULL;
    CHECK_EQ(anykv_mget(h, 3, keys, kl, &vals), ANYKV_OK);
    if (CHECK(vals != NULL)) {
        CHECK(vals[0].len == 4 && strcmp(vals[0].data, "zero") == 0);
        CHECK(vals[1].data == NULL && vals[1].len == 0);
        CHECK(vals[2].len == 3 && memcmp(vals[2].data, "t\0o", 3) == 0);
        anykv_free(vals); /* one free for the whole array */
    }
    CHECK_EQ(anykv_mget(h, 0, keys, kl, &vals), ANYKV_ERR_ARG);

    /* INCRBY on a new key, then negative, then a server error. */
    char c[128];
    size_t cl = key(c, sizeof c, "counter");
    int64_t r = 0;
    CHECK_EQ(anykv_incr(h, c, cl, 5, &r), ANYKV_OK);
    CHECK_EQ(r, 5);
    CHECK_EQ(anykv_incr(h, c, cl, -7, &r), ANYKV_OK);
    CHECK_EQ(r, -2);
    CHECK_EQ(anykv_incr(h, c, cl, 1000000000000LL, &r), ANYKV_OK);
    CHECK_EQ(r, 999999999998LL);
    CHECK_EQ(anykv_incr(h, k[0], kl[0], 1, &r), ANYKV_ERR_SERVER);
    CHECKF(strlen(anykv_errstr(h)) > 0, "errstr: '%s'", anykv_errstr(h));
    printf("  server error text: %s\n", anykv_errstr(h));
    /* The connection survives a server error reply. */
    CHECK_EQ(anykv_ping(h), ANYKV_OK);
    CHECK_EQ(anykv_errstr(h)[0], '\0');
    for (int i = 0; i < 3; i++)
        anykv_del(h, k[i], kl[i]);
    anykv_del(h, c, cl);
}

static void test_scan(anykv_t *h)
{
    enum { N = 60 };
    char k[128];
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "scan:%d", i);
        size_t kl = key(k, sizeof k, name);
        CHECK_EQ(anykv_set(h, k, kl, "v", 1, 0, 0), ANYKV_OK);
    }
    char pat[128];
    size_t pl = key(pat, sizeof pat, "scan:*");
    int seen[N] = {0}, steps = 0, bad = 0, rc = ANYKV_OK;
    uint64_t cur = 0;
    do {
        anykv_value *keys;
        size_t n;
        rc = anykv_scan(h, cur, pat, pl, 10, &cur, &keys, &n);
        if (rc != ANYKV_OK)
            break;
        for (size_t i = 0; i < n; i++) {
            int idx = -1;
            if (keys[i].len > pl - 1 && memcmp(keys[i].data, pat, pl - 1) == 0)
                idx = atoi(keys[i].data + pl - 1);
            if (idx >= 0 && idx < N)
                seen[idx] = 1;
            else
                bad++;
        }
        anykv_free(keys);
    } while (cur != 0 && ++steps < 100000);
    CHECKF(rc == ANYKV_OK, "scan: %s", anykv_errstr(h));
    CHECKF(cur == 0, "scan did not finish in %d steps", steps);
    int all = 1;
    for (int i = 0; i < N; i++)
        all &= seen[i];
    CHECKF(all, "scan did not return every key");
    CHECK_EQ(bad, 0);
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "scan:%d", i);
        size_t kl = key(k, sizeof k, name);
        anykv_del(h, k, kl);
    }
    /* No match, no count: still a valid step. */
    anykv_value *keys;
    size_t n;
    CHECK_EQ(anykv_scan(h, 0, NULL, 0, 0, &cur, &keys, &n), ANYKV_OK);
    anykv_free(keys);
}

static void test_args_and_options(anykv_t *h)
{
    char *v;
    CHECK_EQ(anykv_ping(NULL), ANYKV_ERR_ARG);
    CHECK_EQ(anykv_get(NULL, "k", 1, &v, NULL), ANYKV_ERR_ARG);
    CHECK_EQ(anykv_get(h, NULL, 3, &v, NULL), ANYKV_ERR_ARG);
    CHECK_EQ(anykv_set(h, "k", 1, "v", 1, -1, 0), ANYKV_ERR_ARG);
    CHECK_EQ(anykv_set(h, "k", 1, "v", 1, 0, ANYKV_SET_NX | ANYKV_SET_XX), ANYKV_ERR_ARG);
    CHECK_EQ(anykv_set(h, "k", 1, NULL, 1, 0, 0), ANYKV_ERR_ARG);
    CHECK(strlen(anykv_errstr(h)) > 0);
    CHECK(strcmp(anykv_strerror(ANYKV_ERR_TIMEOUT), "ANYKV_ERR_TIMEOUT") == 0);
    CHECK(strcmp(anykv_errstr(NULL), "no handle") == 0);

    /* Bad addresses never give a handle. */
    const char *bad[] = {NULL, "", "127.0.0.1", "127.0.0.1:", ":6379", "127.0.0.1:0",
                         "127.0.0.1:65536", "127.0.0.1:12ab", "::1:6379", "[::1]6379",
                         "127.0.0.1:-1",
                         /* whitespace is no part of a host: the entry could never be resolved */
                         " 127.0.0.1:6379", "127.0.0.1 :6379", "127.0.0.1:1, 127.0.0.1:2",
                         "127.0.0.1:1,\t127.0.0.1:2", "[ ::1]:6379"};
    anykv_options lazy = {.lazy = 1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECKF(anykv_connect(bad[i], &lazy) == NULL, "address %s", bad[i] ? bad[i] : "NULL");
    anykv_t *v6 = anykv_connect("[::1]:1", &lazy);
    CHECK(v6 != NULL);
    anykv_close(v6);

    /* "localhost:port" resolves (possibly ::1 first, then 127.0.0.1). */
    char lh[64];
    snprintf(lh, sizeof lh, "localhost:%s", strrchr(addr, ':') + 1);
    anykv_t *l = anykv_connect(lh, NULL);
    CHECKF(l != NULL && anykv_ping(l) == ANYKV_OK, "connect %s", lh);
    anykv_close(l);

    /* SELECT: database 1 is separate from database 0. */
    anykv_options o1 = {.database = 1};
    anykv_t *d1 = anykv_connect(addr, &o1);
    if (CHECK(d1 != NULL)) {
        char k[128];
        size_t kl = key(k, sizeof k, "db1");
        CHECK_EQ(anykv_set(d1, k, kl, "in1", 3, 0, 0), ANYKV_OK);
        CHECK_EQ(anykv_get(h, k, kl, &v, NULL), ANYKV_NOTFOUND);
        CHECK_EQ(anykv_get(d1, k, kl, &v, NULL), ANYKV_OK);
        anykv_free(v);
        CHECK_EQ(anykv_del(d1, k, kl), ANYKV_OK);
        anykv_close(d1);
    }

    /* A reply larger than max_reply_bytes is refused without allocating it;
     * the handle reconnects and keeps working. */
    anykv_options small = {.max_reply_bytes = 1024};
    anykv_t *s = anykv_connect(addr, &small);
    if (CHECK(s != NULL)) {
        char k[128], big[2048];
        size_t kl = key(k, sizeof k, "capped");
        memset(big, 'x', sizeof big);
        CHECK_EQ(anykv_set(s, k, kl, big, sizeof big, 0, 0), ANYKV_OK);
        CHECK_EQ(anykv_get(s, k, kl, &v, NULL), ANYKV_ERR_PROTOCOL);
        CHECK(strstr(anykv_errstr(s), "max_reply_bytes") != NULL);
        CHECK_EQ(anykv_set(s, k, kl, "small", 5, 0, 0), ANYKV_OK);
        CHECK_EQ(anykv_get(s, k, kl, &v, NULL), ANYKV_OK);
        anykv_free(v);
        anykv_del(s, k, kl);
        anykv_close(s);
    }
}

/* ---- misbehaving peers ----------------------------------------------- */

/* Run one GET against a fake server that answers with reply; return the
 * status and copy the handle's error text into err. */
static int get_from_fake(const char *reply, anykv_options *o, char *err, size_t errcap)
{
    const char *s0[] = {reply, NULL};
    const char *const *scripts[] = {s0};
    fake_server *f = fake_start(scripts, 1);
    if (!CHECK(f != NULL))
        return 99;
    char a[64];
    snprintf(a, sizeof a, "127.0.0.1:%d", fake_port(f));
    anykv_options lazy = {.lazy = 1};
    if (o == NULL)
        o = &lazy;
    o->lazy = 1;
    anykv_t *h = anykv_connect(a, o);
    char *v = NULL;
    int rc = anykv_get(h, "k", 1, &v, NULL);
    snprintf(err, errcap, "%s", anykv_errstr(h));
    CHECK(v == NULL);
    anykv_close(h);
    fake_stop(f);
    return rc;
}

static void test_bad_replies(void)
{
    char err[512];
    CHECK_EQ(get_from_fake("hello\r\n", NULL, err, sizeof err), ANYKV_ERR_PROTOCOL);
    /* A server of another protocol: the error quotes what it said, escaped and cut short. */
    CHECK_EQ(get_from_fake("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", NULL, err,
                           sizeof err), ANYKV_ERR_PROTOCOL);
    CHECKF(strstr(err, "not a RESP reply: \"HTTP/1.1 400 Bad Request\"") != NULL, "%s", err);
    CHECK_EQ(get_from_fake("ERROR \"\x01\x7f\\0123456789012345678901234567890123456789\r\n", NULL,
                           err, sizeof err), ANYKV_ERR_PROTOCOL);
    CHECKF(strstr(err, "\"ERROR \\x22\\x01\\x7f\\x5c012345678901234567890\"...") != NULL, "%s", err);
    CHECK_EQ(get_from_fake("+OK\n", NULL, err, sizeof err), ANYKV_ERR_PROTOCOL);
    CHECK_EQ(get_from_fake(":12a\r\n", NULL, err, sizeof err), ANYKV_ERR_PROTOCOL);
    CHECK_EQ(get_from_fake("$-2\r\n", NULL, err, sizeof err), ANYKV_ERR_PROTOCOL);
    CHECK_EQ(get_from_fake("$3\r\nabcd\r\n", NULL, err, sizeof err), ANYKV_ERR_PROTOCOL);
    CHECK_EQ(get_from_fake("+OK\r\n", NULL, err, sizeof err), ANYKV_ERR_PROTOCOL);
    CHECK(strstr(err, "unexpected status reply") != NULL);
    /* Claimed lengths far beyond the cap fail before any allocation. */
    CHECK_EQ(get_from_fake("$999999999999\r\n", NULL, err, sizeof err), ANYKV_ERR_PROTOCOL);
    CHECK(strstr(err, "max_reply_bytes") != NULL);
    CHECK_EQ(get_from_fake("$99999999999999999999\r\n", NULL, err, sizeof err),
             ANYKV_ERR_PROTOCOL);
    CHECK_EQ(get_from_fake("*999999999999\r\n", NULL, err, sizeof err), ANYKV_ERR_PROTOCOL);
    anykv_options capped = {.max_reply_bytes = 100};
    CHECK_EQ(get_from_fake("$200\r\n", &capped, err, sizeof err), ANYKV_ERR_PROTOCOL);
    /* Deep nesting. */
    char deep[256] = "";
    for (int i = 0; i < 20; i++)
        strcat(deep, "*1\r\n");
    CHECK_EQ(get_from_fake(deep, NULL, err, sizeof err), ANYKV_ERR_PROTOCOL);
    CHECK(strstr(err, "nested") != NULL);
    /* A line that never ends is cut off at the line cap. */
    size_t n = 200000;
    char *longline = malloc(n + 1);
    memset(longline, 'a', n);
    longline[0] = '+';
    longline[n] = '\0';
    CHECK_EQ(get_from_fake(longline, NULL, err, sizeof err), ANYKV_ERR_PROTOCOL);
    CHECK(strstr(err, "longer than") != NULL);
    /* So is one that ends, but past the cap, and arrives in one read with its end (120000 bytes). */
    n = 120000;
    memset(longline, 'a', n);
    longline[0] = '+';
    memcpy(longline + n - 2, "\r\n", 3);
    CHECK_EQ(get_from_fake(longline, NULL, err, sizeof err), ANYKV_ERR_PROTOCOL);
    CHECK(strstr(err, "longer than") != NULL);
    free(longline);
    /* The peer closes without answering. */
    CHECK_EQ(get_from_fake(FAKE_CLOSE, NULL, err, sizeof err), ANYKV_ERR_IO);
    /* A server error reply is reported with its text. */
    CHECK_EQ(get_from_fake("-WRONGTYPE nope\r\n", NULL, err, sizeof err), ANYKV_ERR_SERVER);
    CHECK(strcmp(err, "WRONGTYPE nope") == 0);
    /* An error reply with no text still gives an error text, not "" (which means success). */
    CHECK_EQ(get_from_fake("-\r\n", NULL, err, sizeof err), ANYKV_ERR_SERVER);
    CHECKF(strcmp(err, "server error reply with no text") == 0, "%s", err);
}

/* One GET against a fake server that sends its reply in two pieces, 100 ms
 * apart (first may be "" for the whole reply in one piece); returns the status. */
static int get_in_pieces(const char *first, const char *second)
{
    const char *s0[] = {first, FAKE_PAUSE, second, NULL};
    const char *s1[] = {second, NULL};
    const char *const *scripts[] = {first[0] != '\0' ? s0 : s1};
    fake_server *f = fake_start(scripts, 1);
    if (!CHECK(f != NULL))
        return 99;
    char a[64];
    snprintf(a, sizeof a, "127.0.0.1:%d", fake_port(f));
    anykv_options lazy = {.lazy = 1};
    anykv_t *h = anykv_connect(a, &lazy);
    char *v = NULL;
    int rc = anykv_get(h, "k", 1, &v, NULL);
    anykv_free(v);
    anykv_close(h);
    fake_stop(f);
    return rc;
}

/* A line at the 64 KiB cap is accepted however it arrives: it was refused
 * ("longer than 65536 bytes") when its CR came in one read and its LF in the
 * next, and accepted when both came together. One byte longer is refused
 * both ways. */
static void test_line_cap_pieces(void)
{
    for (size_t n = KV_LINE_CAP; n <= KV_LINE_CAP + 1; n++) {
        char *line = malloc(n + 3);
        memset(line, 'e', n);
        line[0] = '-';
        memcpy(line + n, "\r\n", 3);
        int want = n == KV_LINE_CAP ? ANYKV_ERR_SERVER : ANYKV_ERR_PROTOCOL;
        CHECKF(get_in_pieces("", line) == want, "%zu-byte line in one piece", n);
        line[n + 1] = '\0'; /* "...\r" now, then "\n" */
        CHECKF(get_in_pieces(line, "\n") == want, "%zu-byte line, CR and LF in two reads", n);
        free(line);
    }
}

static void test_timeout_reconnect_auth(void)
{
    /* A peer that never answers: the call times out after io_timeout_ms. */
    {
        const char *s0[] = {FAKE_HANG, NULL};
        const char *const *scripts[] = {s0};
        fake_server *f = fake_start(scripts, 1);
        char a[64];
        snprintf(a, sizeof a, "127.0.0.1:%d", fake_port(f));
        anykv_options o = {.io_timeout_ms = 300};
        anykv_t *h = anykv_connect(a, &o);
        int64_t t0 = check_now_ms();
        CHECK_EQ(anykv_ping(h), ANYKV_ERR_TIMEOUT);
        int64_t took = check_now_ms() - t0;
        CHECKF(took >= 250 && took < 3000, "timeout took %lld ms", (long long)took);
        CHECK(strstr(anykv_errstr(h), "timeout") != NULL);
        anykv_close(h);
        fake_stop(f);
    }
    /* Broken connection: the call that sees it fails, the next reconnects. */
    {
        const char *s0[] = {"+PONG\r\n", NULL};
        const char *s1[] = {"+PONG\r\n", NULL};
        const char *const *scripts[] = {s0, s1};
        fake_server *f = fake_start(scripts, 2);
        char a[64];
        snprintf(a, sizeof a, "127.0.0.1:%d", fake_port(f));
        anykv_t *h = anykv_connect(a, NULL);
        CHECK_EQ(anykv_ping(h), ANYKV_OK);
        CHECK_EQ(anykv_ping(h), ANYKV_ERR_IO);
        CHECK_EQ(anykv_ping(h), ANYKV_OK);
        CHECK_EQ(fake_accepted(f), 2);
        anykv_close(h);
        fake_stop(f);
    }
    /* A connection closed while idle is replaced before sending. */
    {
        const char *s0[] = {"+PONG\r\n", FAKE_CLOSE};
        const char *s1[] = {"+PONG\r\n", NULL};
        const char *const *scripts[] = {s0, s1};
        fake_server *f = fake_start(scripts, 2);
        char a[64];
        snprintf(a, sizeof a, "127.0.0.1:%d", fake_port(f));
        anykv_t *h = anykv_connect(a, NULL);
        CHECK_EQ(anykv_ping(h), ANYKV_OK);
        check_sleep_ms(100);
        CHECK_EQ(anykv_ping(h), ANYKV_OK);
        CHECK_EQ(fake_accepted(f), 2);
        anykv_close(h);
        fake_stop(f);
    }
    /* AUTH user pass and SELECT are sent on connect, exactly encoded. */
    {
        const char *s0[] = {"+OK\r\n", "+OK\r\n", "+PONG\r\n", NULL};
        const char *const *scripts[] = {s0};
        fake_server *f = fake_start(scripts, 1);
        char a[64];
        snprintf(a, sizeof a, "127.0.0.1:%d", fake_port(f));
        anykv_options o = {.username = "u", .password = "secret", .database = 3};
        anykv_t *h = anykv_connect(a, &o);
        CHECK(h != NULL);
        CHECK_EQ(anykv_ping(h), ANYKV_OK);
        char *rx = fake_received(f, NULL);
        CHECKF(strcmp(rx, "*3\r\n$4\r\nAUTH\r\n$1\r\nu\r\n$6\r\nsecret\r\n"
                          "*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n*1\r\n$4\r\nPING\r\n") == 0,
               "received: %s", rx);
        free(rx);
        anykv_close(h);
        fake_stop(f);
    }
    /* A username without a password is refused (it would connect as the default user, no AUTH sent), lazy or
     * not, before any connection. */
    {
        anykv_options o = {.username = "u"};
        CHECK(anykv_connect("127.0.0.1:1", &o) == NULL);
        o.lazy = 1;
        CHECK(anykv_connect("127.0.0.1:1", &o) == NULL);
    }
    /* A rejected AUTH: connect fails; a lazy handle reports why. */
    {
        const char *s0[] = {"-WRONGPASS invalid password\r\n", NULL};
        const char *s1[] = {"-WRONGPASS invalid password\r\n", NULL};
        const char *const *scripts[] = {s0, s1};
        fake_server *f = fake_start(scripts, 2);
        char a[64];
        snprintf(a, sizeof a, "127.0.0.1:%d", fake_port(f));
        anykv_options o = {.password = "bad"};
        CHECK(anykv_connect(a, &o) == NULL);
        o.lazy = 1;
        anykv_t *h = anykv_connect(a, &o);
        CHECK_EQ(anykv_ping(h), ANYKV_ERR_SERVER);
        CHECKF(strstr(anykv_errstr(h), "AUTH failed: WRONGPASS") != NULL, "%s",
               anykv_errstr(h));
        anykv_close(h);
        fake_stop(f);
    }
}

/* AUTH and SELECT succeed only with +OK: any other reply is a server that
 * does not speak the protocol (or a stream out of step), and the connect fails. */
static void test_handshake_replies(void)
{
    static const char *const replies[][2] = {{":1\r\n", NULL}, {"$-1\r\n", NULL},
                                             {"+QUEUED\r\n", NULL}, {"+OK\r\n", "*0\r\n"}};
    for (int i = 0; i < 4; i++) {
        const char *s0[] = {replies[i][0], replies[i][1], NULL};
        const char *const *scripts[] = {s0};
        fake_server *f = fake_start(scripts, 1);
        char a[64];
        snprintf(a, sizeof a, "127.0.0.1:%d", fake_port(f));
        anykv_options o = {.password = "pw", .database = 1, .lazy = 1};
        anykv_t *h = anykv_connect(a, &o);
        CHECK_EQ(anykv_ping(h), ANYKV_ERR_PROTOCOL);
        const char *want = i < 3 ? "AUTH failed: unexpected" : "SELECT 1 failed: unexpected array";
        CHECKF(strstr(anykv_errstr(h), want) != NULL, "%s", anykv_errstr(h));
        anykv_close(h);
        fake_stop(f);
    }
}

/* Failover between servers that accept connections but stop answering (a
 * stopped or wedged process: the kernel still accepts for it), and a reply of
 * the wrong shape, which closes the connection as any protocol error does. */
static void test_unanswering_servers(void)
{
    char list[160], err[512];
    /* The first server never answers: the handshake's PING times out and the
     * second is used; the skipped server's error is not the call's. */
    {
        const char *sa[] = {FAKE_HANG, NULL};
        const char *sb[] = {"+PONG\r\n", "+PONG\r\n", NULL};
        const char *const *ta[] = {sa}, *const *tb[] = {sb};
        fake_server *a = fake_start(ta, 1), *b = fake_start(tb, 1);
        snprintf(list, sizeof list, "127.0.0.1:%d,127.0.0.1:%d", fake_port(a), fake_port(b));
        anykv_options o = {.io_timeout_ms = 300};
        anykv_t *h = anykv_connect(list, &o);
        if (CHECKF(h != NULL, "connect to %s with the first server silent", list)) {
            CHECK_EQ(anykv_ping(h), ANYKV_OK);
            CHECKF(anykv_errstr(h)[0] == '\0', "errstr after success: %s", anykv_errstr(h));
            CHECK_EQ(fake_accepted(a), 1);
            CHECK_EQ(fake_accepted(b), 1);
        }
        anykv_close(h);
        fake_stop(a);
        fake_stop(b);
    }
    /* The server in use stops answering: that call times out, and the next
     * one goes to the next server at once, not through another timeout. */
    {
        const char *sa[] = {"+PONG\r\n", "+PONG\r\n", FAKE_HANG, NULL};
        const char *sb[] = {"+PONG\r\n", "+PONG\r\n", NULL};
        const char *const *ta[] = {sa, sa}, *const *tb[] = {sb};
        fake_server *a = fake_start(ta, 2), *b = fake_start(tb, 1);
        snprintf(list, sizeof list, "127.0.0.1:%d,127.0.0.1:%d", fake_port(a), fake_port(b));
        anykv_options o = {.io_timeout_ms = 300};
        anykv_t *h = anykv_connect(list, &o);
        if (CHECKF(h != NULL, "connect to %s", list)) {
            CHECK_EQ(anykv_ping(h), ANYKV_OK);
            CHECK_EQ(anykv_ping(h), ANYKV_ERR_TIMEOUT);
            int64_t t0 = check_now_ms();
            CHECK_EQ(anykv_ping(h), ANYKV_OK);
            int64_t took = check_now_ms() - t0;
            CHECKF(took < 250, "the call after a timeout took %lld ms", (long long)took);
            CHECK_EQ(fake_accepted(a), 1);
            CHECK_EQ(fake_accepted(b), 1);
        }
        anykv_close(h);
        fake_stop(a);
        fake_stop(b);
    }
    /* A reply of the wrong shape closes the connection: the next call
     * reconnects rather than read on a stream it no longer trusts. */
    {
        const char *s0[] = {":7\r\n", NULL};
        const char *s1[] = {"+PONG\r\n", NULL};
        const char *const *scripts[] = {s0, s1};
        fake_server *f = fake_start(scripts, 2);
        char a[64];
        snprintf(a, sizeof a, "127.0.0.1:%d", fake_port(f));
        anykv_t *h = anykv_connect(a, NULL);
        CHECK_EQ(anykv_ping(h), ANYKV_ERR_PROTOCOL);
        snprintf(err, sizeof err, "%s", anykv_errstr(h));
        CHECKF(strstr(err, "unexpected integer reply") != NULL, "%s", err);
        CHECK_EQ(anykv_ping(h), ANYKV_OK);
        CHECK_EQ(fake_accepted(f), 2);
        anykv_close(h);
        fake_stop(f);
    }
}

/* A slow resolver: while slow_resolver_ms > 0, every getaddrinfo of the library
 * (this definition interposes on libc's) takes that long before answering. */
static int slow_resolver_ms;

__attribute__((visibility("default"))) /* built with -fvisibility=hidden: export it to interpose */
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res)
{
    int (*real)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
    *(void **)&real = dlsym(RTLD_NEXT, "getaddrinfo");
    if (slow_resolver_ms > 0)
        check_sleep_ms(slow_resolver_ms);
    return real(node, service, hints, res);
}

/* Resolution is not bounded by the connect timeout, and does not spend it
 * either: with a resolver slower than the connect timeout (a first nameserver
 * down, say) every connect failed at once with "connect ...: timed out", the
 * server being up, since the deadline was set before resolving. */
static void test_slow_resolver(void)
{
    anykv_options o = {.lazy = 1, .connect_timeout_ms = 300};
    anykv_t *h = anykv_connect(addr, &o);
    slow_resolver_ms = 500;
    int rc = anykv_ping(h);
    slow_resolver_ms = 0;
    CHECKF(rc == ANYKV_OK, "ping through a 500 ms resolver with a 300 ms connect timeout: %s: %s",
           anykv_strerror(rc), anykv_errstr(h));
    anykv_close(h);
}

/* A port nobody listens on: bound but not listening, so refused for sure. */
static void test_refused(void)
{
    const char *const *scripts[] = {NULL};
    fake_server *f = fake_start(scripts, 0);
    char a[64];
    snprintf(a, sizeof a, "127.0.0.1:%d", fake_port(f));
    fake_stop(f); /* port now closed */
    int64_t t0 = check_now_ms();
    CHECK(anykv_connect(a, NULL) == NULL);
    anykv_options lazy = {.lazy = 1};
    anykv_t *h = anykv_connect(a, &lazy);
    CHECK_EQ(anykv_ping(h), ANYKV_ERR_IO);
    CHECKF(strstr(anykv_errstr(h), "refused") != NULL, "%s", anykv_errstr(h));
    CHECK(check_now_ms() - t0 < 2000);
    anykv_close(h);
}

int main(void)
{
    snprintf(addr, sizeof addr, "%s", check_env("KV_ADDR"));
    snprintf(pfx, sizeof pfx, "%sany:", check_prefix());
    anykv_t *h = connect_default();
    if (h != NULL) {
        test_basic(h);
        test_binary(h);
        test_conditions_ttl(h);
        test_mget_incr(h);
        test_scan(h);
        test_args_and_options(h);
        anykv_close(h);
    }
    test_bad_replies();
    test_line_cap_pieces();
    test_timeout_reconnect_auth();
    test_handshake_replies();
    test_unanswering_servers();
    test_refused();
    test_slow_resolver();
    anykv_close(NULL);
    return check_done("test_anykv");
}
