/*
 * anykv.c - the public libanykv API: handle lifecycle and one function per
 * command. Each function validates its arguments, sends one command through
 * kv_call (conn.c) and maps the reply to a status plus owned results
 * (see the ownership rule in anykv.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ARGS(...) ((const void *const[]){__VA_ARGS__})
#define LENS(...) ((const size_t[]){__VA_ARGS__})

anykv_t *anykv_connect(const char *hostport, const anykv_options *opts)
{
    anykv_options def;
    memset(&def, 0, sizeof def);
    if (opts == NULL)
        opts = &def;
    /* A username without a password would connect as the default user with no AUTH at all: refused, as a
     * database below 0 is. */
    if (opts->database < 0 || (opts->username != NULL && opts->password == NULL))
        return NULL;
    anykv_t *h = calloc(1, sizeof *h);
    if (h == NULL)
        return NULL;
    h->fd = -1;
    h->deadline = -1;
    if (kv_parse_servers(h, hostport) != 0)
        goto fail;
    if (opts->username != NULL && (h->username = strdup(opts->username)) == NULL)
        goto fail;
    if (opts->password != NULL && (h->password = strdup(opts->password)) == NULL)
        goto fail;
    h->database = opts->database;
    h->connect_timeout_ms = opts->connect_timeout_ms == 0 ? KV_DEFAULT_CONNECT_MS
                                                          : opts->connect_timeout_ms;
    h->io_timeout_ms = opts->io_timeout_ms == 0 ? KV_DEFAULT_IO_MS : opts->io_timeout_ms;
    h->max_reply_bytes = opts->max_reply_bytes == 0 ? KV_DEFAULT_MAX_REPLY
                                                    : opts->max_reply_bytes;
    if (!opts->lazy && kv_connect(h) != ANYKV_OK)
        goto fail;
    return h;
fail:
    anykv_close(h);
    return NULL;
}

void anykv_close(anykv_t *h)
{
    if (h == NULL)
        return;
    kv_disconnect(h);
    for (int i = 0; i < h->nserv; i++) {
        free(h->hosts[i]);
        free(h->ports[i]);
    }
    free(h->hosts);
    free(h->ports);
    free(h->username);
    if (h->password != NULL) { /* do not leave the secret in freed memory */
        explicit_bzero(h->password, strlen(h->password));
        free(h->password);
    }
    free(h->rbuf);
    if (h->wbuf != NULL) /* nor a request that held it */
        explicit_bzero(h->wbuf, h->wcap);
    free(h->wbuf);
    free(h);
}

const char *anykv_errstr(const anykv_t *h)
{
    return h == NULL ? "no handle" : h->err;
}

const char *anykv_strerror(int status)
{
    switch (status) {
    case ANYKV_OK: return "ANYKV_OK";
    case ANYKV_NOTFOUND: return "ANYKV_NOTFOUND";
    case ANYKV_NOTSET: return "ANYKV_NOTSET";
    case ANYKV_ERR_IO: return "ANYKV_ERR_IO";
    case ANYKV_ERR_TIMEOUT: return "ANYKV_ERR_TIMEOUT";
    case ANYKV_ERR_PROTOCOL: return "ANYKV_ERR_PROTOCOL";
    case ANYKV_ERR_SERVER: return "ANYKV_ERR_SERVER";
    case ANYKV_ERR_ARG: return "ANYKV_ERR_ARG";
    case ANYKV_ERR_NOMEM: return "ANYKV_ERR_NOMEM";
    default: return "unknown status";
    }
}

void anykv_free(void *p)
{
    free(p);
}

/* Reply of an unexpected shape: the server is not speaking our dialect (or
 * is not the server we think), so the connection is closed, as after any
 * protocol error, and the next call reconnects. */
static int unexpected(anykv_t *h, kv_reply *r, const char *cmd)
{
    kv_seterr(h, ANYKV_ERR_PROTOCOL, "unexpected %s reply to %s", kv_type_name(r->type), cmd);
    kv_reply_free(r);
    kv_disconnect(h);
    return ANYKV_ERR_PROTOCOL;
}

/* Common argument check: a handle, and a key pointer unless it is empty. */
static int bad_key(anykv_t *h, const void *key, size_t klen)
{
    if (h == NULL)
        return 1;
    if (key == NULL && klen > 0) {
        kv_seterr(h, ANYKV_ERR_ARG, "NULL key");
        return 1;
    }
    return 0;
}

/* Hand a bulk reply's string to the caller (it is already malloc'd and
 * NUL-terminated), then free the reply shell. */
static void take_bulk(kv_reply *r, char **val, size_t *vlen)
{
    if (val != NULL) {
        *val = r->str;
        r->str = NULL;
    }
    if (vlen != NULL)
        *vlen = r->len;
    kv_reply_free(r);
}

int anykv_ping(anykv_t *h)
{
    if (h == NULL)
        return ANYKV_ERR_ARG;
    kv_reply *r;
    int rc = kv_call(h, 1, ARGS("PING"), LENS(4), &r);
    if (rc != ANYKV_OK)
        return rc;
    if (r->type != KV_STATUS || r->len != 4 || memcmp(r->str, "PONG", 4) != 0)
        return unexpected(h, r, "PING");
    kv_reply_free(r);
    return ANYKV_OK;
}

/* bulk_or_notfound turns a GET-style reply (a bulk, or nil for a missing key) into the caller's value and
 * consumes the reply; what names the command in the error for any other reply. */
static int bulk_or_notfound(anykv_t *h, kv_reply *r, const char *what, char **out, size_t *outlen)
{
    if (r->type == KV_NIL) {
        kv_reply_free(r);
        return ANYKV_NOTFOUND;
    }
    if (r->type != KV_BULK)
        return unexpected(h, r, what);
    take_bulk(r, out, outlen);
    return ANYKV_OK;
}

int anykv_get(anykv_t *h, const void *key, size_t klen, char **val, size_t *vlen)
{
    if (val != NULL)
        *val = NULL;
    if (vlen != NULL)
        *vlen = 0;
    if (bad_key(h, key, klen))
        return ANYKV_ERR_ARG;
    kv_reply *r;
    int rc = kv_call(h, 2, ARGS("GET", key), LENS(3, klen), &r);
    if (rc != ANYKV_OK)
        return rc;
    return bulk_or_notfound(h, r, "GET", val, vlen);
}

int anykv_set(anykv_t *h, const void *key, size_t klen, const void *val, size_t vlen,
              int64_t ttl_ms, int flags)
{
    if (bad_key(h, key, klen))
        return ANYKV_ERR_ARG;
    if ((val == NULL && vlen > 0) || ttl_ms < 0 ||
        (flags & ~(ANYKV_SET_NX | ANYKV_SET_XX)) != 0 ||
        flags == (ANYKV_SET_NX | ANYKV_SET_XX))
        return kv_seterr(h, ANYKV_ERR_ARG, "bad value, ttl or flags");
    const void *av[6] = {"SET", key, val};
    size_t al[6] = {3, klen, vlen};
    int n = 3;
    char ttl[24];
    if (ttl_ms > 0) {
        av[n] = "PX", al[n++] = 2;
        av[n] = ttl, al[n++] = (size_t)snprintf(ttl, sizeof ttl, "%" PRId64, ttl_ms);
    }
    if (flags == ANYKV_SET_NX)
        av[n] = "NX", al[n++] = 2;
    else if (flags == ANYKV_SET_XX)
        av[n] = "XX", al[n++] = 2;
    kv_reply *r;
    int rc = kv_call(h, n, av, al, &r);
    if (rc != ANYKV_OK)
        return rc;
    if (r->type == KV_NIL && flags != 0) {
        kv_reply_free(r);
        return ANYKV_NOTSET;
    }
    if (r->type != KV_STATUS || r->len != 2 || memcmp(r->str, "OK", 2) != 0)
        return unexpected(h, r, "SET");
    kv_reply_free(r);
    return ANYKV_OK;
}

int anykv_getset(anykv_t *h, const void *key, size_t klen, const void *val,
                 size_t vlen, char **old, size_t *oldlen)
{
    if (old != NULL)
        *old = NULL;
    if (oldlen != NULL)
        *oldlen = 0;
    if (bad_key(h, key, klen))
        return ANYKV_ERR_ARG;
    if (val == NULL && vlen > 0)
        return kv_seterr(h, ANYKV_ERR_ARG, "NULL value");
    kv_reply *r;
    int rc = kv_call(h, 4, ARGS("SET", key, val, "GET"), LENS(3, klen, vlen, 3), &r);
    if (rc != ANYKV_OK)
        return rc;
    return bulk_or_notfound(h, r, "SET GET", old, oldlen);
}

int anykv_del(anykv_t *h, const void *key, size_t klen)
{
    if (bad_key(h, key, klen))
        return ANYKV_ERR_ARG;
    kv_reply *r;
    int rc = kv_call(h, 2, ARGS("DEL", key), LENS(3, klen), &r);
    if (rc != ANYKV_OK)
        return rc;
    if (r->type != KV_INT)
        return unexpected(h, r, "DEL");
    rc = r->integer > 0 ? ANYKV_OK : ANYKV_NOTFOUND;
    kv_reply_free(r);
    return rc;
}

/* Copy an array of bulk/nil replies into ONE malloc'd block: n anykv_value
 * headers followed by the NUL-terminated bytes they point at. */
static int pack_values(anykv_t *h, const kv_reply *elems, size_t n, anykv_value **out)
{
    size_t total = n * sizeof(anykv_value);
    for (size_t i = 0; i < n; i++)
        if (elems[i].type == KV_BULK)
            total += elems[i].len + 1;
    anykv_value *v = malloc(total > 0 ? total : 1);
    if (v == NULL)
        return kv_seterr(h, ANYKV_ERR_NOMEM, "out of memory");
    char *p = (char *)(v + n);
    for (size_t i = 0; i < n; i++) {
        if (elems[i].type == KV_BULK) {
            v[i].data = p;
            v[i].len = elems[i].len;
            memcpy(p, elems[i].str, elems[i].len + 1);
            p += elems[i].len + 1;
        } else {
            v[i].data = NULL;
            v[i].len = 0;
        }
    }
    *out = v;
    return ANYKV_OK;
}

int anykv_mget(anykv_t *h, size_t n, const void *const keys[], const size_t klens[],
               anykv_value **vals)
{
    if (vals != NULL)
        *vals = NULL;
    if (h == NULL)
        return ANYKV_ERR_ARG;
    if (n == 0 || n >= INT32_MAX || keys == NULL || klens == NULL || vals == NULL)
        return kv_seterr(h, ANYKV_ERR_ARG, "bad mget arguments");
    const void **av = malloc((n + 1) * sizeof *av);
    size_t *al = malloc((n + 1) * sizeof *al);
    if (av == NULL || al == NULL) {
        free(av);
        free(al);
        return kv_seterr(h, ANYKV_ERR_NOMEM, "out of memory");
    }
    av[0] = "MGET", al[0] = 4;
    for (size_t i = 0; i < n; i++) {
        if (keys[i] == NULL && klens[i] > 0) {
            free(av);
            free(al);
            return kv_seterr(h, ANYKV_ERR_ARG, "NULL key");
        }
        av[i + 1] = keys[i];
        al[i + 1] = klens[i];
    }
    kv_reply *r;
    int rc = kv_call(h, (int)(n + 1), av, al, &r);
    free(av);
    free(al);
    if (rc != ANYKV_OK)
        return rc;
    if (r->type != KV_ARRAY || r->len != n)
        return unexpected(h, r, "MGET");
    for (size_t i = 0; i < n; i++)
        if (r->elems[i].type != KV_BULK && r->elems[i].type != KV_NIL)
            return unexpected(h, r, "MGET");
    rc = pack_values(h, r->elems, n, vals);
    kv_reply_free(r);
    return rc;
}

int anykv_incr(anykv_t *h, const void *key, size_t klen, int64_t delta, int64_t *result)
{
    if (bad_key(h, key, klen))
        return ANYKV_ERR_ARG;
    char d[24];
    size_t dl = (size_t)snprintf(d, sizeof d, "%" PRId64, delta);
    kv_reply *r;
    int rc = kv_call(h, 3, ARGS("INCRBY", key, d), LENS(6, klen, dl), &r);
    if (rc != ANYKV_OK)
        return rc;
    if (r->type != KV_INT)
        return unexpected(h, r, "INCRBY");
    if (result != NULL)
        *result = r->integer;
    kv_reply_free(r);
    return ANYKV_OK;
}

int anykv_expire(anykv_t *h, const void *key, size_t klen, int64_t seconds)
{
    if (bad_key(h, key, klen))
        return ANYKV_ERR_ARG;
    char s[24];
    size_t sl = (size_t)snprintf(s, sizeof s, "%" PRId64, seconds);
    kv_reply *r;
    int rc = kv_call(h, 3, ARGS("EXPIRE", key, s), LENS(6, klen, sl), &r);
    if (rc != ANYKV_OK)
        return rc;
    if (r->type != KV_INT)
        return unexpected(h, r, "EXPIRE");
    rc = r->integer == 1 ? ANYKV_OK : ANYKV_NOTFOUND;
    kv_reply_free(r);
    return rc;
}

/* Parse an unsigned decimal cursor (SCAN cursors are 64-bit unsigned). */
static int parse_cursor(const char *s, size_t n, uint64_t *out)
{
    if (n == 0 || n > 20)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int anykv_scan(anykv_t *h, uint64_t cursor, const void *match, size_t matchlen,
               size_t count, uint64_t *next, anykv_value **keys, size_t *nkeys)
{
    if (keys != NULL)
        *keys = NULL;
    if (nkeys != NULL)
        *nkeys = 0;
    if (h == NULL)
        return ANYKV_ERR_ARG;
    if (next == NULL || keys == NULL || nkeys == NULL)
        return kv_seterr(h, ANYKV_ERR_ARG, "NULL output argument");
    char cur[24], cnt[24];
    const void *av[6] = {"SCAN", cur};
    size_t al[6] = {4, (size_t)snprintf(cur, sizeof cur, "%" PRIu64, cursor)};
    int n = 2;
    if (match != NULL)
        av[n] = "MATCH", al[n++] = 5, av[n] = match, al[n++] = matchlen;
    if (count > 0)
        av[n] = "COUNT", al[n++] = 5, av[n] = cnt,
        al[n++] = (size_t)snprintf(cnt, sizeof cnt, "%zu", count);
    kv_reply *r;
    int rc = kv_call(h, n, av, al, &r);
    if (rc != ANYKV_OK)
        return rc;
    /* Expect [cursor-bulk, [key-bulk...]]; *next changes only with a whole reply. */
    uint64_t nxt;
    if (r->type != KV_ARRAY || r->len != 2 || r->elems[0].type != KV_BULK ||
        r->elems[1].type != KV_ARRAY ||
        parse_cursor(r->elems[0].str, r->elems[0].len, &nxt) != 0)
        return unexpected(h, r, "SCAN");
    const kv_reply *list = &r->elems[1];
    for (size_t i = 0; i < list->len; i++)
        if (list->elems[i].type != KV_BULK)
            return unexpected(h, r, "SCAN");
    if (list->len > 0 && (rc = pack_values(h, list->elems, list->len, keys)) != ANYKV_OK) {
        kv_reply_free(r);
        return rc;
    }
    *next = nxt;
    *nkeys = list->len;
    kv_reply_free(r);
    return ANYKV_OK;
}
