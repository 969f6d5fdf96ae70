/*
 * example.c - a tour of both client APIs (built as build/example; the same
 * program is shown in docs/c-client.md).
 *   build/example [host:port]     (default 127.0.0.1:6379)
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "anykv.h"
#include "kv739.h"

#define K(s) s, strlen(s) /* a C-string key as (pointer, length) */

int main(int argc, char **argv)
{
    const char *addr = argc > 1 ? argv[1] : "127.0.0.1:6379";

    /* ---- libanykv: one handle, used by this thread only ---- */
    anykv_options opts = {.connect_timeout_ms = 1000, .io_timeout_ms = 2000};
    anykv_t *h = anykv_connect(addr, &opts);
    if (h == NULL) {
        fprintf(stderr, "cannot connect to %s\n", addr);
        return 1;
    }
    anykv_del(h, K("example:bin"));
    anykv_del(h, K("example:once"));
    anykv_del(h, K("example:counter"));

    /* Binary-safe SET with a 60 s TTL, then GET: the value is ours to free. */
    const char bin[] = {'a', '\0', 'b'};
    int rc = anykv_set(h, K("example:bin"), bin, sizeof bin, 60000, 0);
    char *v;
    size_t vlen;
    rc = anykv_get(h, K("example:bin"), &v, &vlen);
    if (rc == ANYKV_OK) {
        printf("GET example:bin -> %zu bytes, second byte %d\n", vlen, v[1]);
        anykv_free(v);
    }

    /* Only-if-absent: the second attempt reports ANYKV_NOTSET. */
    rc = anykv_set(h, K("example:once"), "1", 1, 0, ANYKV_SET_NX);
    printf("SET NX first  -> %s\n", anykv_strerror(rc));
    rc = anykv_set(h, K("example:once"), "2", 1, 0, ANYKV_SET_NX);
    printf("SET NX second -> %s\n", anykv_strerror(rc));

    /* Get-and-set: atomically store and fetch the previous value. */
    char *old;
    rc = anykv_getset(h, K("example:once"), "3", 1, &old, NULL);
    if (rc == ANYKV_OK) {
        printf("SET GET -> previous value \"%s\"\n", old);
        anykv_free(old);
    }

    /* Counters, and a server error reply with its text. */
    int64_t n = 0;
    anykv_incr(h, K("example:counter"), 41, &n);
    anykv_incr(h, K("example:counter"), 1, &n);
    printf("INCRBY -> %" PRId64 "\n", n);
    rc = anykv_incr(h, K("example:bin"), 1, &n);
    printf("INCRBY on binary -> %s: %s\n", anykv_strerror(rc), anykv_errstr(h));

    /* MGET: one block holds the array and the bytes; one anykv_free. */
    const void *keys[] = {"example:once", "example:missing"};
    const size_t klens[] = {12, 15};
    anykv_value *vals;
    if (anykv_mget(h, 2, keys, klens, &vals) == ANYKV_OK) {
        for (int i = 0; i < 2; i++)
            printf("MGET[%d] -> %s\n", i, vals[i].data ? vals[i].data : "(absent)");
        anykv_free(vals);
    }

    /* SCAN until the cursor comes back to 0. */
    uint64_t cursor = 0;
    size_t total = 0;
    do {
        anykv_value *found;
        size_t nfound;
        if (anykv_scan(h, cursor, K("example:*"), 100, &cursor, &found, &nfound) != ANYKV_OK)
            break;
        total += nfound;
        anykv_free(found);
    } while (cursor != 0);
    printf("SCAN example:* -> %zu keys\n", total);
    anykv_close(h);

    /* ---- kv739: process-wide connection, safe from any thread ---- */
    char server[256], key[] = "example:greeting", v1[] = "hello", v2[] = "hi";
    char old_value[KV739_BUF_SIZE], value[KV739_BUF_SIZE];
    snprintf(server, sizeof server, "%s", addr);
    if (kv739_init(server) != 0) {
        fprintf(stderr, "kv739_init failed\n");
        return 1;
    }
    int r = kv739_put(key, v1, old_value); /* 1: there was no old value */
    printf("kv739_put hello -> %d\n", r);
    r = kv739_put(key, v2, old_value);     /* 0: old value returned */
    printf("kv739_put hi -> %d, old \"%s\"\n", r, old_value);
    r = kv739_get(key, value);
    printf("kv739_get -> %d, \"%s\"\n", r, value);
    char bad[] = "no[brackets]";
    printf("kv739_get bad key -> %d\n", kv739_get(bad, value));
    kv739_put(key, v1, old_value);
    {   /* leave no trace: remove the demo key through libanykv */
        anykv_t *c = anykv_connect(addr, NULL);
        anykv_del(c, K("example:greeting"));
        anykv_close(c);
    }
    return kv739_shutdown();
}
