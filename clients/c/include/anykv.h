/*
 * anykv.h - C client for anykv (and any server speaking Redis RESP2).
 *
 * The library implements the protocol itself and depends only on the C
 * library. It talks to exactly these commands: GET, SET (NX, XX, GET, PX),
 * DEL, MGET, INCRBY, EXPIRE, SCAN (MATCH, COUNT), PING, AUTH, SELECT.
 *
 * OWNERSHIP RULE (one rule for every call):
 *   Every pointer the library returns through an out-parameter
 *   (a value, an array of values, a list of keys) is ONE block allocated
 *   with malloc(). The caller owns it and releases it with anykv_free()
 *   exactly once. Arrays of anykv_value are a single block too: the
 *   anykv_value entries and the bytes they point at are freed together by
 *   one anykv_free() of the array. Returned byte strings always carry an
 *   extra NUL after `len` bytes (not counted in len), so text values can be
 *   used as C strings; binary values may contain NULs, so use len.
 *   On any status other than ANYKV_OK the out-pointers are set to NULL.
 *   Inputs (keys, values, patterns) are (pointer, length) pairs, never
 *   retained after the call returns.
 *
 * THREADING RULE:
 *   A handle (anykv_t) must be used by one thread at a time. Different
 *   handles are fully independent: the library has no global state, so
 *   give each thread its own handle, or serialise access with your own
 *   mutex. A connection belongs to the process that opened it: after fork(),
 *   a handle used in the child connects anew (the parent's stays open).
 *
 * CONNECTION RULE:
 *   After an I/O error, a timeout or a protocol error the connection is
 *   closed; the call that saw it fails, and the NEXT call reconnects
 *   (re-running AUTH and SELECT). A connection that the server closed while
 *   the handle was idle is noticed before sending and replaced silently.
 *   Calls are never retried automatically (a retried INCRBY could apply
 *   twice).
 */
#ifndef ANYKV_H
#define ANYKV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ANYKV_API
#define ANYKV_API __attribute__((visibility("default")))
#endif

/* Status codes. >= 0: the call reached the server and got a valid answer. */
typedef enum anykv_status {
    ANYKV_OK = 0,            /* done */
    ANYKV_NOTFOUND = 1,      /* key absent (get, getset's old value, del, expire) */
    ANYKV_NOTSET = 2,        /* set with NX/XX: condition not met, nothing written */
    ANYKV_ERR_IO = -1,       /* connect/read/write failed, or peer closed */
    ANYKV_ERR_TIMEOUT = -2,  /* connect or I/O timeout expired */
    ANYKV_ERR_PROTOCOL = -3, /* malformed, unexpected or over-sized reply */
    ANYKV_ERR_SERVER = -4,   /* server answered with an error (text in errstr) */
    ANYKV_ERR_ARG = -5,      /* bad argument; nothing was sent */
    ANYKV_ERR_NOMEM = -6     /* allocation failed */
} anykv_status;

/* Flags for anykv_set(). */
#define ANYKV_SET_NX 1 /* only if the key is absent  */
#define ANYKV_SET_XX 2 /* only if the key is present */

/* Connection options. A zero-initialised struct ({0}) means all defaults. */
typedef struct anykv_options {
    int connect_timeout_ms; /* 0: 1000 ms; < 0: no limit */
    int io_timeout_ms;      /* per call, send+receive; 0: 5000 ms; < 0: no limit */
    const char *username;   /* NULL: AUTH with password only; set without a password: connect fails */
    const char *password;   /* NULL: no AUTH */
    int database;           /* 0: no SELECT; > 0: SELECT database after connecting */
    size_t max_reply_bytes; /* cap on memory one reply may use; 0: 64 MiB */
    int lazy;               /* nonzero: anykv_connect does not connect; first call does */
} anykv_options;

/* A value in an array (mget, scan). data == NULL means "absent". */
typedef struct anykv_value {
    char *data; /* NUL-terminated after len bytes; NULL if absent */
    size_t len;
} anykv_value;

typedef struct anykv anykv_t;

/* Open a handle to "host:port" ("[v6addr]:port" for IPv6), or to a list of
 * servers "h1:p1,h2:p2,..." (anykv front ends over one shared datastore): the
 * handle connects to the first that answers and, when the one in use dies,
 * moves on to the next at the following call. A call whose connection broke
 * after its request was sent fails (ANYKV_ERR_IO) and is not sent again: its
 * outcome is unknown. opts may be NULL.
 * Unless opts->lazy, connects (and runs AUTH/SELECT) now and returns NULL if
 * that fails. Returns NULL on a malformed address (a host holding a space,
 * as " h2" of "h1:p1, h2:p2", included) or out of memory.
 * (To see why a connect fails, use lazy=1, then anykv_ping + anykv_errstr.) */
ANYKV_API anykv_t *anykv_connect(const char *hostport, const anykv_options *opts);

/* Close the connection and free the handle. NULL is allowed. */
ANYKV_API void anykv_close(anykv_t *h);

/* Text of the last error on this handle ("" after a successful call).
 * Server error replies are included verbatim (one with no text as "server
 * error reply with no text"). Valid until the next call. */
ANYKV_API const char *anykv_errstr(const anykv_t *h);

/* Static name of a status code, e.g. "ANYKV_ERR_TIMEOUT". */
ANYKV_API const char *anykv_strerror(int status);

/* Release any block returned by the library (same as free()). */
ANYKV_API void anykv_free(void *p);

/* PING: ANYKV_OK if the server answered PONG. */
ANYKV_API int anykv_ping(anykv_t *h);

/* GET: ANYKV_OK with *val (owned, free with anykv_free) and *vlen, or
 * ANYKV_NOTFOUND. vlen may be NULL. */
ANYKV_API int anykv_get(anykv_t *h, const void *key, size_t klen,
                        char **val, size_t *vlen);

/* SET with optional TTL (ttl_ms > 0: PX ttl_ms; 0: no expiry; < 0: ARG) and
 * flags (0, ANYKV_SET_NX or ANYKV_SET_XX). ANYKV_OK if written,
 * ANYKV_NOTSET if the NX/XX condition prevented it. */
ANYKV_API int anykv_set(anykv_t *h, const void *key, size_t klen,
                        const void *val, size_t vlen, int64_t ttl_ms, int flags);

/* SET key val GET: stores val and atomically returns the previous value.
 * ANYKV_OK with *old and *oldlen set if there was one, ANYKV_NOTFOUND if the key was
 * absent (val is stored in both cases). old may be NULL to discard it. */
ANYKV_API int anykv_getset(anykv_t *h, const void *key, size_t klen,
                           const void *val, size_t vlen,
                           char **old, size_t *oldlen);

/* DEL one key: ANYKV_OK if it existed, ANYKV_NOTFOUND if not. */
ANYKV_API int anykv_del(anykv_t *h, const void *key, size_t klen);

/* MGET n keys (n >= 1): *vals is an array of n anykv_value in one block
 * (free with one anykv_free); vals[i].data == NULL for an absent key. */
ANYKV_API int anykv_mget(anykv_t *h, size_t n, const void *const keys[],
                         const size_t klens[], anykv_value **vals);

/* INCRBY key delta: ANYKV_OK with the new value in *result (may be NULL).
 * A non-integer value gives ANYKV_ERR_SERVER. */
ANYKV_API int anykv_incr(anykv_t *h, const void *key, size_t klen,
                         int64_t delta, int64_t *result);

/* EXPIRE key seconds: ANYKV_OK if set, ANYKV_NOTFOUND if the key is absent. */
ANYKV_API int anykv_expire(anykv_t *h, const void *key, size_t klen,
                           int64_t seconds);

/* SCAN cursor [MATCH pattern] [COUNT count]: one step of an iteration.
 * Start with cursor 0; continue with *next until it is 0. A key may be
 * returned more than once across steps (server semantics). match may be NULL
 * (no MATCH); count 0 means no COUNT. *keys is an array of *nkeys values in
 * one block (free with one anykv_free; NULL when *nkeys is 0). */
ANYKV_API int anykv_scan(anykv_t *h, uint64_t cursor,
                         const void *match, size_t matchlen, size_t count,
                         uint64_t *next, anykv_value **keys, size_t *nkeys);

#ifdef __cplusplus
}
#endif
#endif /* ANYKV_H */
