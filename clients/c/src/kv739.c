/*
 * kv739.c - lib739kv.so: the kv739 contract (kv739.h) on top of libanykv.
 *
 * One process-wide anykv handle guarded by one mutex. libanykv reconnects on
 * the next call after a broken connection, so after a server restart calls
 * fail with -1 while it is down and work again once it is back. A short
 * connect timeout makes calls fail fast while the server is unreachable.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "anykv.h"
#include "kv739.h"

#define KV739_CONNECT_TIMEOUT_MS 1000
#define KV739_IO_TIMEOUT_MS 3000

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static anykv_t *g_conn; /* NULL until kv739_init succeeds */

/* Printable ASCII 0x20..0x7e without '[' or ']', length 1..max. Measures the
 * string without reading past max+1 bytes. */
static int valid(const char *s, size_t max, size_t *len)
{
    if (s == NULL)
        return 0;
    size_t n = 0;
    for (; s[n] != '\0'; n++) {
        unsigned char c = (unsigned char)s[n];
        if (n >= max || c < 0x20 || c > 0x7e || c == '[' || c == ']')
            return 0;
    }
    *len = n;
    return n >= 1;
}

/* Copy a value read back into a caller buffer of KV739_BUF_SIZE bytes. A value
 * with a NUL byte (stored by a binary-safe client) cannot be a C string: -1, as
 * for an over-long one, rather than a value silently cut at the NUL. */
static int copy_out(char *dst, const char *src, size_t len)
{
    if (len > KV739_MAX_VALUE || memchr(src, '\0', len) != NULL)
        return -1;
    memcpy(dst, src, len);
    dst[len] = '\0';
    return 0;
}

int kv739_init(char *server)
{
    anykv_options o;
    memset(&o, 0, sizeof o);
    o.connect_timeout_ms = KV739_CONNECT_TIMEOUT_MS;
    o.io_timeout_ms = KV739_IO_TIMEOUT_MS;
    o.max_reply_bytes = 1u << 20; /* generous for 2048-byte values, still bounded */
    /* Connect outside the lock so other threads are not blocked meanwhile. */
    anykv_t *h = anykv_connect(server, &o);
    if (h != NULL && anykv_ping(h) != ANYKV_OK) {
        anykv_close(h);
        h = NULL;
    }
    if (h == NULL)
        return -1;
    pthread_mutex_lock(&g_lock);
    anykv_t *old = g_conn;
    g_conn = h;
    pthread_mutex_unlock(&g_lock);
    anykv_close(old);
    return 0;
}

int kv739_get(char *key, char *value)
{
    size_t klen;
    if (!valid(key, KV739_MAX_KEY, &klen) || value == NULL)
        return -1;
    char *v = NULL;
    size_t vlen = 0;
    int rc = -1;
    pthread_mutex_lock(&g_lock);
    if (g_conn != NULL) {
        int st = anykv_get(g_conn, key, klen, &v, &vlen);
        if (st == ANYKV_OK)
            rc = copy_out(value, v, vlen);
        else if (st == ANYKV_NOTFOUND)
            rc = 1;
    }
    pthread_mutex_unlock(&g_lock);
    anykv_free(v);
    return rc;
}

int kv739_put(char *key, char *value, char *old_value)
{
    size_t klen, vlen;
    if (!valid(key, KV739_MAX_KEY, &klen) || !valid(value, KV739_MAX_VALUE, &vlen) ||
        old_value == NULL)
        return -1;
    char *old = NULL;
    size_t oldlen = 0;
    int rc = -1;
    pthread_mutex_lock(&g_lock);
    if (g_conn != NULL) {
        int st = anykv_getset(g_conn, key, klen, value, vlen, &old, &oldlen);
        if (st == ANYKV_OK)
            rc = copy_out(old_value, old, oldlen);
        else if (st == ANYKV_NOTFOUND) {
            old_value[0] = '\0';
            rc = 1;
        }
    }
    pthread_mutex_unlock(&g_lock);
    anykv_free(old);
    return rc;
}

int kv739_shutdown(void)
{
    pthread_mutex_lock(&g_lock);
    anykv_t *h = g_conn;
    g_conn = NULL;
    pthread_mutex_unlock(&g_lock);
    anykv_close(h);
    return 0;
}
