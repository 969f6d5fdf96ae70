/*
 * test_kv739.c - the kv739 contract (lib739kv.so) against the real server at
 * $KV_ADDR: init, return codes, old values, every key/value boundary, and
 * consistency under 4 concurrent threads.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "anykv.h"
#include "check.h"
#include "fakeserver.h"
#include "kv739.h"

#define GUARD 64 /* canary bytes after each 2049-byte buffer */

static char addr[256];
static char pfx[96];

/* A value buffer of the contract's size with a canary tail to catch any
 * write past 2049 bytes. */
typedef struct {
    char b[KV739_BUF_SIZE + GUARD];
} vbuf;

static void vb_init(vbuf *v)
{
    memset(v->b, '#', sizeof v->b);
}

static int vb_intact(const vbuf *v)
{
    for (int i = KV739_BUF_SIZE; i < KV739_BUF_SIZE + GUARD; i++)
        if (v->b[i] != '#')
            return 0;
    return 1;
}

static void mkkey(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s%s", pfx, name);
}

static void test_init(void)
{
    char bad1[] = "127.0.0.1", bad2[] = "nohost", bad3[] = "127.0.0.1:99999",
         bad4[] = ":80", bad5[] = "";
    CHECK_EQ(kv739_init(bad1), -1);
    CHECK_EQ(kv739_init(bad2), -1);
    CHECK_EQ(kv739_init(bad3), -1);
    CHECK_EQ(kv739_init(bad4), -1);
    CHECK_EQ(kv739_init(bad5), -1);
    CHECK_EQ(kv739_init(NULL), -1);
    /* A list written with ", ": its second entry could never be resolved (" 127.0.0.1"),
     * so the list is refused, rather than taken with a failover that cannot work. */
    char spaced[600];
    snprintf(spaced, sizeof spaced, "%s, %s", addr, addr);
    CHECK_EQ(kv739_init(spaced), -1);
    /* Unreachable: a port that was just closed. */
    const char *const *none[] = {NULL};
    fake_server *f = fake_start(none, 0);
    char closed[64];
    snprintf(closed, sizeof closed, "127.0.0.1:%d", fake_port(f));
    fake_stop(f);
    int64_t t0 = check_now_ms();
    CHECK_EQ(kv739_init(closed), -1);
    CHECK(check_now_ms() - t0 < 2000);
    /* A list whose first server accepts but never answers: init takes the
     * second (after the I/O timeout of the first's PING). */
    {
        const char *s0[] = {FAKE_HANG, NULL};
        const char *const *scripts[] = {s0};
        fake_server *silent = fake_start(scripts, 1);
        char list[300];
        snprintf(list, sizeof list, "127.0.0.1:%d,%s", fake_port(silent), addr);
        CHECKF(kv739_init(list) == 0, "kv739_init(%s) with the first server silent", list);
        CHECK_EQ(kv739_shutdown(), 0);
        fake_stop(silent);
    }
    /* Not initialised: calls fail. */
    char k[] = "somekey", v[] = "v";
    vbuf out;
    CHECK_EQ(kv739_get(k, out.b), -1);
    CHECK_EQ(kv739_put(k, v, out.b), -1);
    CHECK_EQ(kv739_init(addr), 0);
    /* Initialising again replaces the connection. */
    CHECK_EQ(kv739_init(addr), 0);
}

static void test_put_get(void)
{
    char k[200], v1[] = "first value", v2[] = "second", v3[] = "x";
    vbuf out, old;
    mkkey(k, sizeof k, "pg");
    vb_init(&out);
    CHECK_EQ(kv739_get(k, out.b), 1);
    CHECK_EQ(kv739_put(k, v1, old.b), 1);            /* new key */
    CHECK_EQ(kv739_get(k, out.b), 0);
    CHECK(strcmp(out.b, v1) == 0);
    CHECK_EQ(kv739_put(k, v2, old.b), 0);            /* existing key */
    CHECK(strcmp(old.b, v1) == 0);
    vb_init(&out);
    CHECK_EQ(kv739_get(k, out.b), 0);                /* shorter: no residue */
    CHECKF(strcmp(out.b, v2) == 0, "got '%s'", out.b);
    CHECK_EQ(kv739_put(k, v3, old.b), 0);
    CHECK(strcmp(old.b, v2) == 0);
    for (int i = 0; i < 20; i++) {                   /* repeated reads agree */
        vb_init(&out);
        if (kv739_get(k, out.b) != 0 || strcmp(out.b, v3) != 0) {
            CHECKF(0, "read %d disagrees: '%s'", i, out.b);
            break;
        }
    }
    CHECK(1);
    char absent[200];
    mkkey(absent, sizeof absent, "never-written");
    CHECK_EQ(kv739_get(absent, out.b), 1);
    CHECK_EQ(kv739_get(absent, out.b), 1);
}

/* put+get of a key/value pair of given sizes; want is the expected put rc. */
static void boundary(size_t klen, size_t vlen, int want, const char *what)
{
    char *k = malloc(klen + 1), *v = malloc(vlen + 1);
    size_t pl = strlen(pfx) < klen ? strlen(pfx) : klen;
    memset(k, 'k', klen);
    memcpy(k, pfx, pl);           /* unique prefix where it fits */
    k[klen] = '\0';
    for (size_t i = 0; i < vlen; i++)
        v[i] = (char)(0x20 + (i % 59)); /* printable, skips '[' (0x5b) */
    v[vlen] = '\0';
    vbuf out, old;
    vb_init(&out);
    vb_init(&old);
    int rc = kv739_put(k, v, old.b);
    CHECKF(want == -1 ? rc == -1 : rc >= 0, "%s: put rc %d", what, rc);
    rc = kv739_get(k, out.b);
    if (want == -1) {
        CHECKF(rc == -1 || rc == 1, "%s: get rc %d", what, rc);
    } else {
        CHECKF(rc == 0 && strcmp(out.b, v) == 0, "%s: get rc %d", what, rc);
    }
    CHECK(vb_intact(&out) && vb_intact(&old));
    free(k);
    free(v);
}

static void test_boundaries(void)
{
    boundary(1, 1, 0, "key 1 / value 1");
    boundary(128, 10, 0, "key 128");
    boundary(129, 10, -1, "key 129");
    boundary(20, 2048, 0, "value 2048");
    boundary(21, 2049, -1, "value 2049");
    boundary(30, 5000, -1, "value 5000");

    /* A 2048-byte old value comes back whole in a 2049 buffer. */
    char k[200];
    mkkey(k, sizeof k, "old2048");
    char *v = malloc(2049);
    memset(v, 'z', 2048);
    v[2048] = '\0';
    vbuf old;
    vb_init(&old);
    char small[] = "s";
    kv739_put(k, v, old.b);
    CHECK_EQ(kv739_put(k, small, old.b), 0);
    CHECK(strlen(old.b) == 2048 && vb_intact(&old));
    free(v);

    /* Forbidden bytes in keys and values, and empty strings. */
    char good[200];
    mkkey(good, sizeof good, "goodkey");
    char gv[] = "goodvalue";
    const char *badk[] = {"", "a[b", "a]b", "[", "tab\there", "nl\n", "del\x7f",
                          "high\xc3\xa9", "\x01"};
    for (size_t i = 0; i < sizeof badk / sizeof badk[0]; i++) {
        char kb[64];
        snprintf(kb, sizeof kb, "%s", badk[i]);
        CHECKF(kv739_put(kb, gv, old.b) == -1, "bad key #%zu put", i);
        CHECKF(kv739_get(kb, old.b) == -1, "bad key #%zu get", i);
    }
    for (size_t i = 0; i < sizeof badk / sizeof badk[0]; i++) {
        char vb[64];
        snprintf(vb, sizeof vb, "%s", badk[i]);
        CHECKF(kv739_put(good, vb, old.b) == -1, "bad value #%zu", i);
    }
    CHECK_EQ(kv739_get(good, old.b), 1); /* none of them reached the server */
    CHECK_EQ(kv739_put(NULL, gv, old.b), -1);
    CHECK_EQ(kv739_put(good, NULL, old.b), -1);
    CHECK_EQ(kv739_put(good, gv, NULL), -1);
    CHECK_EQ(kv739_get(NULL, old.b), -1);
    CHECK_EQ(kv739_get(good, NULL), -1);
    /* Every allowed byte: all of 0x20..0x7e except '[' ']' in key and value. */
    char all[100];
    size_t n = 0;
    for (int c = 0x20; c <= 0x7e; c++)
        if (c != '[' && c != ']')
            all[n++] = (char)c;
    all[n] = '\0';
    CHECK_EQ(kv739_put(all, all, old.b) >= 0, 1);
    vbuf out;
    CHECK_EQ(kv739_get(all, out.b), 0);
    CHECK(strcmp(out.b, all) == 0);

    /* A value longer than 2048 written by another client: get and put give
     * -1 and never write past the 2049-byte buffer. */
    anykv_t *h = anykv_connect(addr, NULL);
    char lk[200];
    mkkey(lk, sizeof lk, "toolong");
    char big[3000];
    memset(big, 'L', sizeof big);
    CHECK(h != NULL && anykv_set(h, lk, strlen(lk), big, sizeof big, 0, 0) == ANYKV_OK);
    vb_init(&out);
    CHECK_EQ(kv739_get(lk, out.b), -1);
    CHECK(vb_intact(&out));
    vb_init(&old);
    CHECK_EQ(kv739_put(lk, small, old.b), -1);
    CHECK(vb_intact(&old));
    CHECK_EQ(kv739_get(lk, out.b), 0); /* the put itself did happen */
    CHECK(strcmp(out.b, small) == 0);

    /* A value with a NUL byte, written by a binary-safe client, is no C string:
     * -1, not the value cut at the NUL (the audit: "ab\0cd" came back as "ab"). */
    mkkey(lk, sizeof lk, "nul");
    CHECK(anykv_set(h, lk, strlen(lk), "ab\0cd", 5, 0, 0) == ANYKV_OK);
    vb_init(&out);
    CHECK_EQ(kv739_get(lk, out.b), -1);
    CHECK(vb_intact(&out));
    vb_init(&old);
    CHECK_EQ(kv739_put(lk, small, old.b), -1);
    CHECK(vb_intact(&old));
    CHECK_EQ(kv739_get(lk, out.b), 0);
    anykv_close(h);
}

/* ---- concurrency ------------------------------------------------------ */

enum { THREADS = 4, OWN_KEYS = 10, OWN_ROUNDS = 10, SHARED_KEYS = 3, SHARED_PUTS = 60 };

typedef struct {
    int rc;
    char old[40];
} shared_result;

typedef struct {
    int id;
    int own_errors;
    shared_result res[SHARED_PUTS];
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    char k[200], v[40], prev[40];
    vbuf old;
    /* Distinct keys: each put must return exactly this thread's last value. */
    for (int r = 0; r < OWN_ROUNDS; r++) {
        for (int i = 0; i < OWN_KEYS; i++) {
            snprintf(k, sizeof k, "%sown-%d-%d", pfx, w->id, i);
            snprintf(v, sizeof v, "v-%d-%d-%d", w->id, i, r);
            snprintf(prev, sizeof prev, "v-%d-%d-%d", w->id, i, r - 1);
            int rc = kv739_put(k, v, old.b);
            if (r == 0 ? rc != 1 : (rc != 0 || strcmp(old.b, prev) != 0))
                w->own_errors++;
        }
    }
    /* Shared keys: remember every result for the chain check in main. */
    for (int j = 0; j < SHARED_PUTS; j++) {
        snprintf(k, sizeof k, "%sshared-%d", pfx, j % SHARED_KEYS);
        snprintf(v, sizeof v, "T%d-%d", w->id, j);
        w->res[j].rc = kv739_put(k, v, old.b);
        size_t ol = w->res[j].rc == 0 ? strlen(old.b) : 0;
        if (ol >= sizeof w->res[j].old)
            ol = 0; /* never one of ours: shows up as a mismatch */
        memcpy(w->res[j].old, old.b, ol);
        w->res[j].old[ol] = '\0';
        if (kv739_get(k, old.b) != 0 || old.b[0] != 'T') /* some thread's value */
            w->own_errors++;
    }
    return NULL;
}

static void test_concurrency(void)
{
    static worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i].id = i;
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++)
        CHECKF(w[i].own_errors == 0, "thread %d: %d inconsistent results", i, w[i].own_errors);
    /* Each shared key is a register updated by atomic swaps: exactly one put
     * saw it absent, and every written value was seen as "old" exactly once,
     * except the final value, which a get returns. */
    for (int s = 0; s < SHARED_KEYS; s++) {
        int absent = 0, failed = 0, mismatched = 0;
        char k[200];
        snprintf(k, sizeof k, "%sshared-%d", pfx, s);
        vbuf fin;
        CHECK_EQ(kv739_get(k, fin.b), 0);
        for (int i = 0; i < THREADS; i++) {
            for (int j = s; j < SHARED_PUTS; j += SHARED_KEYS) {
                char v[40];
                snprintf(v, sizeof v, "T%d-%d", i, j);
                int seen = strcmp(fin.b, v) == 0;
                for (int i2 = 0; i2 < THREADS; i2++)
                    for (int j2 = s; j2 < SHARED_PUTS; j2 += SHARED_KEYS)
                        seen += w[i2].res[j2].rc == 0 && strcmp(w[i2].res[j2].old, v) == 0;
                mismatched += seen != 1;
                absent += w[i].res[j].rc == 1;
                failed += w[i].res[j].rc == -1;
            }
        }
        CHECKF(absent == 1, "shared key %d: %d puts saw it absent", s, absent);
        CHECKF(failed == 0, "shared key %d: %d puts failed", s, failed);
        CHECKF(mismatched == 0, "shared key %d: %d values not seen exactly once", s,
               mismatched);
    }
}

/* ---- fork -------------------------------------------------------------- */

/* kv739_init, then fork: the child's calls must go over a connection of its
 * own. They went over the inherited one, the parent's socket, so two processes
 * read each other's replies: a get answered with another key's value, rc 0 (a
 * parent and 8 children released together: 178 such gets in 100 rounds). A
 * fake server makes it exact: connection 0 (the parent's) answers the init's
 * PING and then "parent", connection 1 answers "child". */
static void test_fork(void)
{
    const char *s0[] = {"+PONG\r\n", "$6\r\nparent\r\n", NULL};
    const char *s1[] = {"$5\r\nchild\r\n", NULL};
    const char *const *scripts[] = {s0, s1};
    static fake_server *f; /* static: still reachable in the child at its exit (valgrind) */
    f = fake_start(scripts, 2);
    char a[64], k[] = "k";
    snprintf(a, sizeof a, "127.0.0.1:%d", fake_port(f));
    if (!CHECKF(kv739_init(a) == 0, "kv739_init(%s) of the fake server", a)) {
        fake_stop(f);
        return;
    }
    int p[2];
    if (!CHECK(pipe(p) == 0))
        return;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) { /* the child: one get, its result to the parent */
        vbuf out;
        vb_init(&out);
        int rc = kv739_get(k, out.b);
        char res[64];
        snprintf(res, sizeof res, "%d %.20s", rc, rc == 0 ? out.b : "");
        ssize_t w = write(p[1], res, strlen(res));
        _exit(w > 0 ? 0 : 1);
    }
    close(p[1]);
    vbuf out;
    vb_init(&out);
    int rc = kv739_get(k, out.b);
    CHECKF(rc == 0 && strcmp(out.b, "parent") == 0, "parent's get after fork: rc %d, '%.20s'", rc,
           rc == 0 ? out.b : "");
    CHECK_EQ(kv739_shutdown(), 0); /* ends connection 0: the fake server goes on to 1 */
    char res[64] = "";
    ssize_t n = read(p[0], res, sizeof res - 1);
    res[n > 0 ? n : 0] = '\0';
    close(p[0]);
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECKF(strcmp(res, "0 child") == 0, "child's get after fork: '%s' (rc, value)", res);
    CHECK_EQ(fake_accepted(f), 2);
    fake_stop(f);
}

int main(void)
{
    snprintf(addr, sizeof addr, "%s", check_env("KV_ADDR"));
    snprintf(pfx, sizeof pfx, "%s739:", check_prefix());
    test_init();
    test_put_get();
    test_boundaries();
    test_concurrency();
    test_fork();
    CHECK_EQ(kv739_shutdown(), 0);
    CHECK_EQ(kv739_shutdown(), 0);
    vbuf out;
    char k[] = "after-shutdown";
    CHECK_EQ(kv739_get(k, out.b), -1);
    return check_done("test_kv739");
}
