/*
 * internal.h - private types shared by conn.c (socket, RESP reader/writer)
 * and anykv.c (the command API). Not installed.
 */
#ifndef ANYKV_INTERNAL_H
#define ANYKV_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "anykv.h"

/* Hard limits of the reply reader: whatever the peer claims, the reader
 * never accepts more than this, so a hostile or broken peer cannot make it
 * allocate or loop without bound. */
#define KV_MAX_LINE 65536          /* simple string / error / integer / header line */
#define KV_MAX_DEPTH 8             /* nesting of arrays (our commands need 2) */
#define KV_DEFAULT_MAX_REPLY (64u << 20) /* per-reply memory budget default */

#define KV_DEFAULT_CONNECT_MS 1000
#define KV_DEFAULT_IO_MS 5000

/* One parsed RESP2 reply. */
enum kv_type {
    KV_NIL,    /* $-1 or *-1 */
    KV_STATUS, /* +text */
    KV_ERROR,  /* -text */
    KV_INT,    /* :n */
    KV_BULK,   /* $n bytes */
    KV_ARRAY   /* *n elements */
};

typedef struct kv_reply {
    enum kv_type type;
    int64_t integer;          /* KV_INT */
    char *str;                /* STATUS/ERROR/BULK: malloc'd, NUL-terminated */
    size_t len;               /* length of str, or number of elems */
    struct kv_reply *elems;   /* KV_ARRAY: len elements, one malloc'd block */
} kv_reply;

/* The handle. Fields are owned by the handle; see anykv.h for the rules. */
struct anykv {
    char **hosts, **ports;    /* the servers of "h1:p1,h2:p2,...", in the order given */
    int nserv, cur;           /* cur: the server connected to, or tried first next time */
    char *host, *port;        /* hosts[cur], ports[cur] (not owned separately) */
    char *username, *password;
    int database;
    int connect_timeout_ms, io_timeout_ms;
    size_t max_reply_bytes;

    int fd;                   /* -1 when not connected */
    pid_t pid;                /* the process that opened fd (a forked child does not use it) */
    int64_t deadline;         /* monotonic ms for the current call; -1 = none */

    char *rbuf;               /* read buffer: bytes [rpos, rlen) not consumed */
    size_t rcap, rpos, rlen;
    char *wbuf;               /* request being built */
    size_t wcap, wlen;

    char err[512];            /* last error text */
};

/* conn.c */
int kv_parse_hostport(const char *s, char **host, char **port);
int kv_parse_servers(struct anykv *h, const char *list);
int kv_seterr(struct anykv *h, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void kv_disconnect(struct anykv *h);
int kv_connect(struct anykv *h);
/* Send one command (argc arguments given as pointer+length) and read its
 * reply. Connects first if needed. On ANYKV_OK *out is the reply, which may
 * be KV_NIL, but never KV_ERROR: a server error reply is turned into
 * ANYKV_ERR_SERVER with its text in h->err. */
int kv_call(struct anykv *h, int argc, const void *const *argv,
            const size_t *argvlen, kv_reply **out);
void kv_reply_free(kv_reply *r);
const char *kv_type_name(enum kv_type t); /* "nil", "status", ... */

#endif
