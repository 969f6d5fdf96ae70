/*
 * conn.c - the connection layer of libanykv: address parsing, connect with
 * a timeout, request encoding, a bounded RESP2 reply reader, and the
 * call/reconnect logic. Sockets are non-blocking; every wait goes through
 * poll() against the deadline of the current call.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Deadline for a phase lasting ms milliseconds (< 0: none). */
static int64_t deadline_after(int ms)
{
    return ms < 0 ? -1 : now_ms() + ms;
}

int kv_seterr(struct anykv *h, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->err, sizeof h->err, fmt, ap);
    va_end(ap);
    return code;
}

/* Split "host:port" or "[v6]:port". Rejects an empty host, a bare IPv6
 * address (ambiguous colons), a host with a space or control byte (which no
 * name or address holds: " h" of "a:1, h:2" was taken, then never resolved)
 * and any port that is not 1..65535 in digits. */
int kv_parse_hostport(const char *s, char **host, char **port)
{
    const char *h, *he, *p;
    if (s == NULL)
        return -1;
    if (s[0] == '[') {
        h = s + 1;
        he = strchr(h, ']');
        if (he == NULL || he[1] != ':')
            return -1;
        p = he + 2;
    } else {
        h = s;
        he = strrchr(s, ':');
        if (he == NULL || memchr(s, ':', (size_t)(he - s)) != NULL)
            return -1;
        p = he + 1;
    }
    size_t hlen = (size_t)(he - h), plen = strlen(p);
    if (hlen == 0 || hlen > 255 || plen == 0 || plen > 5)
        return -1;
    for (size_t i = 0; i < hlen; i++)
        if ((unsigned char)h[i] <= ' ' || h[i] == 0x7f)
            return -1;
    long v = 0;
    for (size_t i = 0; i < plen; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    if (v < 1 || v > 65535)
        return -1;
    *host = strndup(h, hlen);
    *port = strndup(p, plen);
    if (*host == NULL || *port == NULL) {
        free(*host);
        free(*port);
        *host = *port = NULL;
        return -1;
    }
    return 0;
}

void kv_disconnect(struct anykv *h)
{
    if (h->fd >= 0)
        close(h->fd);
    h->fd = -1;
    h->rpos = h->rlen = 0;
}

/* Wait until fd is ready for events or the deadline passes. */
static int wait_fd(struct anykv *h, int fd, short events, int64_t deadline,
                   const char *what)
{
    for (;;) {
        int timeout = -1;
        if (deadline >= 0) {
            int64_t left = deadline - now_ms();
            if (left <= 0)
                return kv_seterr(h, ANYKV_ERR_TIMEOUT, "timeout while %s", what);
            timeout = left > 1000000 ? 1000000 : (int)left;
        }
        struct pollfd pfd = {.fd = fd, .events = events};
        int r = poll(&pfd, 1, timeout);
        if (r > 0)
            return 0; /* ready, or an error the next syscall will report */
        if (r < 0 && errno != EINTR)
            return kv_seterr(h, ANYKV_ERR_IO, "poll: %s", strerror(errno));
    }
}

/* Connect one resolved address; returns the fd or a negative status. */
static int connect_one(struct anykv *h, const struct addrinfo *ai, int64_t deadline)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    ai->ai_protocol);
    if (fd < 0)
        return kv_seterr(h, ANYKV_ERR_IO, "socket: %s", strerror(errno));
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        if (errno != EINPROGRESS) {
            int e = errno;
            close(fd);
            return kv_seterr(h, ANYKV_ERR_IO, "connect %s:%s: %s", h->host, h->port,
                             strerror(e));
        }
        int rc = wait_fd(h, fd, POLLOUT, deadline, "connecting");
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
            soerr = errno;
        if (rc != 0 || soerr != 0) {
            close(fd);
            if (rc != 0)
                return kv_seterr(h, rc, "connect %s:%s: timed out", h->host, h->port);
            return kv_seterr(h, ANYKV_ERR_IO, "connect %s:%s: %s", h->host, h->port,
                             strerror(soerr));
        }
    }
    int one = 1; /* requests are small and latency-bound */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int roundtrip(struct anykv *h, int argc, const void *const *argv,
                     const size_t *argvlen, kv_reply **out);

/* Split "h1:p1,h2:p2,..." into h->hosts/h->ports (at least one; each as
 * kv_parse_hostport). Returns -1 on a malformed entry or out of memory. */
int kv_parse_servers(struct anykv *h, const char *list)
{
    if (list == NULL || *list == '\0')
        return -1;
    int n = 1;
    for (const char *c = list; *c; c++)
        n += *c == ',';
    h->hosts = calloc((size_t)n, sizeof *h->hosts);
    h->ports = calloc((size_t)n, sizeof *h->ports);
    char *copy = strdup(list);
    if (h->hosts == NULL || h->ports == NULL || copy == NULL) {
        free(copy);
        return -1;
    }
    int rc = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        rc = kv_parse_hostport(tok, &h->hosts[h->nserv], &h->ports[h->nserv]);
        if (rc == 0)
            h->nserv++;
    }
    free(copy);
    if (rc != 0 || h->nserv != n) /* a malformed entry, or an empty one (",,") */
        return -1;
    h->cur = 0;
    h->host = h->hosts[0];
    h->port = h->ports[0];
    return 0;
}

/* Connect to server i (resolve, then each address in turn). The connect
 * timeout starts once resolved: resolution is not bounded by it, and must not
 * spend it either (a resolver slower than the timeout failed every connect). */
static int connect_server(struct anykv *h, int i)
{
    h->host = h->hosts[i];
    h->port = h->ports[i];
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    int g = getaddrinfo(h->host, h->port, &hints, &res);
    if (g != 0)
        return kv_seterr(h, ANYKV_ERR_IO, "resolve %s: %s", h->host, gai_strerror(g));
    int64_t deadline = deadline_after(h->connect_timeout_ms);
    int rc = ANYKV_ERR_IO;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        rc = connect_one(h, ai, deadline);
        if (rc >= 0) {
            h->fd = rc;
            h->pid = getpid();
            rc = ANYKV_OK;
            break;
        }
        if (rc == ANYKV_ERR_TIMEOUT)
            break; /* the budget is spent; do not try the next address */
    }
    freeaddrinfo(res);
    return rc;
}

static int roundtrip(struct anykv *h, int argc, const void *const *argv,
                     const size_t *argvlen, kv_reply **out);

/* 0 if r is the status reply "+OK" that AUTH and SELECT answer with; anything
 * else is a server not speaking our protocol, or a stream out of step. */
static int not_ok(struct anykv *h, const kv_reply *r)
{
    if (r->type == KV_STATUS && r->len == 2 && memcmp(r->str, "OK", 2) == 0)
        return 0;
    return kv_seterr(h, ANYKV_ERR_PROTOCOL, "unexpected %s reply, not +OK", kv_type_name(r->type));
}

/* AUTH and SELECT as configured on the connection just made; with several
 * servers and neither, a PING, so that a server that accepts connections but
 * does not answer (stopped, overloaded) is passed over like a dead one. */
static int handshake(struct anykv *h)
{
    kv_reply *r = NULL;
    int rc;
    if (h->password != NULL) {
        const void *av[3];
        size_t al[3];
        int n = 0;
        av[n] = "AUTH", al[n++] = 4;
        if (h->username != NULL)
            av[n] = h->username, al[n++] = strlen(h->username);
        av[n] = h->password, al[n++] = strlen(h->password);
        rc = roundtrip(h, n, av, al, &r);
        if (rc == ANYKV_OK)
            rc = not_ok(h, r);
        kv_reply_free(r);
        if (h->wbuf != NULL) /* the request held the password: leave no copy */
            explicit_bzero(h->wbuf, h->wlen);
        if (rc != ANYKV_OK) {
            char why[sizeof h->err];
            snprintf(why, sizeof why, "%s", h->err);
            return kv_seterr(h, rc, "AUTH failed: %s", why);
        }
    }
    if (h->database > 0) {
        char db[24];
        int dl = snprintf(db, sizeof db, "%d", h->database);
        const void *av[2] = {"SELECT", db};
        size_t al[2] = {6, (size_t)dl};
        rc = roundtrip(h, 2, av, al, &r);
        if (rc == ANYKV_OK)
            rc = not_ok(h, r);
        kv_reply_free(r);
        if (rc != ANYKV_OK) {
            char why[sizeof h->err];
            snprintf(why, sizeof why, "%s", h->err);
            return kv_seterr(h, rc, "SELECT %d failed: %s", h->database, why);
        }
    }
    if (h->password == NULL && h->database <= 0 && h->nserv > 1) {
        const void *av[1] = {"PING"};
        size_t al[1] = {4};
        rc = roundtrip(h, 1, av, al, &r);
        int pong = rc == ANYKV_OK && r->type == KV_STATUS && r->len == 4 && memcmp(r->str, "PONG", 4) == 0;
        kv_reply_free(r);
        if (rc != ANYKV_OK) {
            char why[sizeof h->err];
            snprintf(why, sizeof why, "%s", h->err);
            return kv_seterr(h, rc, "PING failed: %s", why);
        }
        if (!pong)
            return kv_seterr(h, ANYKV_ERR_PROTOCOL, "PING: unexpected reply");
    }
    return ANYKV_OK;
}

/* (Re)connect, then AUTH and SELECT as configured. With several servers it
 * tries them in turn, starting with the current one, and keeps the first that
 * accepts and answers the handshake: a front end that died or stopped
 * answering is passed over. Nothing is resent: a call whose connection broke
 * after its request was sent has already failed. */
int kv_connect(struct anykv *h)
{
    kv_disconnect(h);
    int rc = ANYKV_ERR_IO, first = h->cur; /* a failed handshake moves h->cur */
    for (int k = 0; k < h->nserv; k++) {
        int i = (first + k) % h->nserv;
        rc = connect_server(h, i);
        if (rc == ANYKV_OK)
            rc = handshake(h);
        if (rc == ANYKV_OK) {
            h->cur = i;
            h->err[0] = '\0'; /* a server passed over is not this call's error */
            return ANYKV_OK;
        }
        kv_disconnect(h);
    }
    return rc;
}

/* ---- request encoding ------------------------------------------------- */

static int wbuf_reserve(struct anykv *h, size_t need)
{
    if (need <= h->wcap)
        return 0;
    size_t cap = h->wcap ? h->wcap : 4096;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *nb = realloc(h->wbuf, cap);
    if (nb == NULL)
        return -1;
    h->wbuf = nb;
    h->wcap = cap;
    return 0;
}

/* Encode a command as a RESP array of bulk strings into h->wbuf. */
static int encode(struct anykv *h, int argc, const void *const *argv,
                  const size_t *argvlen)
{
    size_t need = 16;
    for (int i = 0; i < argc; i++) {
        if (argvlen[i] > SIZE_MAX - need - 32)
            return kv_seterr(h, ANYKV_ERR_ARG, "argument too large");
        need += argvlen[i] + 32;
    }
    if (wbuf_reserve(h, need) != 0)
        return kv_seterr(h, ANYKV_ERR_NOMEM, "out of memory encoding request");
    char *p = h->wbuf;
    p += sprintf(p, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++) {
        p += sprintf(p, "$%zu\r\n", argvlen[i]);
        if (argvlen[i] > 0)
            memcpy(p, argv[i], argvlen[i]);
        p += argvlen[i];
        *p++ = '\r';
        *p++ = '\n';
    }
    h->wlen = (size_t)(p - h->wbuf);
    return ANYKV_OK;
}

static int send_all(struct anykv *h)
{
    size_t off = 0;
    while (off < h->wlen) {
        ssize_t n = send(h->fd, h->wbuf + off, h->wlen - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = wait_fd(h, h->fd, POLLOUT, h->deadline, "sending");
            if (rc != 0)
                return rc;
        } else if (n < 0 && errno != EINTR) {
            return kv_seterr(h, ANYKV_ERR_IO, "send: %s", strerror(errno));
        }
    }
    return ANYKV_OK;
}

/* ---- bounded reply reader -------------------------------------------- */

/* Receive at most cap bytes into dst; 0 on progress, else a status. */
static int recv_some(struct anykv *h, char *dst, size_t cap, size_t *got)
{
    for (;;) {
        ssize_t n = recv(h->fd, dst, cap, 0);
        if (n > 0) {
            *got = (size_t)n;
            return 0;
        }
        if (n == 0)
            return kv_seterr(h, ANYKV_ERR_IO, "connection closed by server");
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int rc = wait_fd(h, h->fd, POLLIN, h->deadline, "waiting for reply");
            if (rc != 0)
                return rc;
        } else if (errno != EINTR) {
            return kv_seterr(h, ANYKV_ERR_IO, "recv: %s", strerror(errno));
        }
    }
}

/* Read more bytes into rbuf, compacting or growing it (never beyond what one
 * maximal line needs). */
static int fill(struct anykv *h)
{
    if (h->rpos == h->rlen) {
        h->rpos = h->rlen = 0;
    } else if (h->rlen == h->rcap && h->rpos > 0) {
        memmove(h->rbuf, h->rbuf + h->rpos, h->rlen - h->rpos);
        h->rlen -= h->rpos;
        h->rpos = 0;
    }
    if (h->rlen == h->rcap) {
        size_t cap = h->rcap ? h->rcap * 2 : 16384;
        if (cap > 2 * KV_MAX_LINE)
            return kv_seterr(h, ANYKV_ERR_PROTOCOL, "reply line too long");
        char *nb = realloc(h->rbuf, cap);
        if (nb == NULL)
            return kv_seterr(h, ANYKV_ERR_NOMEM, "out of memory reading reply");
        h->rbuf = nb;
        h->rcap = cap;
    }
    size_t got = 0;
    int rc = recv_some(h, h->rbuf + h->rlen, h->rcap - h->rlen, &got);
    h->rlen += got;
    return rc;
}

/* Consume one CRLF-terminated line; *line points into rbuf (valid until the
 * next read) and *len excludes the CRLF. */
static int read_line(struct anykv *h, const char **line, size_t *len)
{
    size_t scanned = 0;
    for (;;) {
        const char *start = h->rbuf + h->rpos;
        size_t avail = h->rlen - h->rpos;
        const char *nl = avail > scanned ? memchr(start + scanned, '\n', avail - scanned)
                                         : NULL;
        if (nl != NULL) {
            /* The read that brought the '\n' may have run past the cap: check the line itself too. */
            if ((size_t)(nl - start) > KV_MAX_LINE + 1)
                return kv_seterr(h, ANYKV_ERR_PROTOCOL, "reply line longer than %d bytes",
                                 KV_MAX_LINE);
            if (nl == start || nl[-1] != '\r')
                return kv_seterr(h, ANYKV_ERR_PROTOCOL, "reply line not ended by CRLF");
            *line = start;
            *len = (size_t)(nl - 1 - start);
            h->rpos += (size_t)(nl + 1 - start);
            return 0;
        }
        scanned = avail;
        /* A line at the cap may be here up to its CR, its LF still to come. */
        if (avail > KV_MAX_LINE + 1)
            return kv_seterr(h, ANYKV_ERR_PROTOCOL, "reply line longer than %d bytes",
                             KV_MAX_LINE);
        int rc = fill(h);
        if (rc != 0)
            return rc;
    }
}

/* Strict signed decimal: optional '-', 1..19 digits, no overflow. */
static int parse_int(const char *s, size_t n, int64_t *out)
{
    int neg = 0;
    size_t i = 0;
    if (n > 0 && s[0] == '-')
        neg = 1, i = 1;
    if (i == n || n - i > 19)
        return -1;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > (uint64_t)INT64_MAX + (uint64_t)neg)
        return -1;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

/* Read exactly n bytes (buffered ones first, then straight into dst). */
static int read_exact(struct anykv *h, char *dst, size_t n)
{
    size_t have = h->rlen - h->rpos;
    size_t take = have < n ? have : n;
    memcpy(dst, h->rbuf + h->rpos, take);
    h->rpos += take;
    while (take < n) {
        size_t got = 0;
        int rc = recv_some(h, dst + take, n - take, &got);
        if (rc != 0)
            return rc;
        take += got;
    }
    return 0;
}

static void reply_clear(kv_reply *r)
{
    if (r->type == KV_ARRAY && r->elems != NULL) {
        for (size_t i = 0; i < r->len; i++)
            reply_clear(&r->elems[i]);
    }
    free(r->elems);
    free(r->str);
    r->elems = NULL;
    r->str = NULL;
}

const char *kv_type_name(enum kv_type t)
{
    static const char *names[] = {"nil", "status", "error", "integer", "bulk", "array"};
    return names[t];
}

void kv_reply_free(kv_reply *r)
{
    if (r != NULL) {
        reply_clear(r);
        free(r);
    }
}

/* Parse one reply into *r (zeroed by the caller). *budget is the memory the
 * rest of this reply may still use; every claimed length is checked against
 * it before anything is allocated. On error *r may hold a partial tree, which
 * the caller frees. */
static int read_reply(struct anykv *h, int depth, size_t *budget, kv_reply *r)
{
    const char *line = NULL;
    size_t len = 0;
    int rc = read_line(h, &line, &len);
    if (rc != 0)
        return rc;
    if (len == 0)
        return kv_seterr(h, ANYKV_ERR_PROTOCOL, "empty reply line");
    char type = line[0];
    const char *body = line + 1;
    size_t blen = len - 1;
    int64_t n = 0;
    switch (type) {
    case '+':
    case '-':
        if (blen + 1 > *budget)
            return kv_seterr(h, ANYKV_ERR_PROTOCOL, "reply exceeds max_reply_bytes");
        *budget -= blen + 1;
        r->type = type == '+' ? KV_STATUS : KV_ERROR;
        r->str = malloc(blen + 1);
        if (r->str == NULL)
            return kv_seterr(h, ANYKV_ERR_NOMEM, "out of memory reading reply");
        memcpy(r->str, body, blen);
        r->str[blen] = '\0';
        r->len = blen;
        return 0;
    case ':':
        if (parse_int(body, blen, &r->integer) != 0)
            return kv_seterr(h, ANYKV_ERR_PROTOCOL, "bad integer reply");
        r->type = KV_INT;
        return 0;
    case '$':
        if (parse_int(body, blen, &n) != 0 || n < -1)
            return kv_seterr(h, ANYKV_ERR_PROTOCOL, "bad bulk length");
        if (n == -1) {
            r->type = KV_NIL;
            return 0;
        }
        if ((uint64_t)n >= *budget)
            return kv_seterr(h, ANYKV_ERR_PROTOCOL,
                             "bulk reply of %lld bytes exceeds max_reply_bytes",
                             (long long)n);
        *budget -= (size_t)n + 1;
        r->type = KV_BULK;
        r->str = malloc((size_t)n + 1);
        if (r->str == NULL)
            return kv_seterr(h, ANYKV_ERR_NOMEM, "out of memory reading reply");
        r->len = (size_t)n;
        if ((rc = read_exact(h, r->str, (size_t)n)) != 0)
            return rc;
        r->str[n] = '\0';
        char crlf[2];
        if ((rc = read_exact(h, crlf, 2)) != 0)
            return rc;
        if (crlf[0] != '\r' || crlf[1] != '\n')
            return kv_seterr(h, ANYKV_ERR_PROTOCOL, "bulk reply not ended by CRLF");
        return 0;
    case '*':
        if (parse_int(body, blen, &n) != 0 || n < -1)
            return kv_seterr(h, ANYKV_ERR_PROTOCOL, "bad array length");
        if (n == -1) {
            r->type = KV_NIL;
            return 0;
        }
        if (depth >= KV_MAX_DEPTH)
            return kv_seterr(h, ANYKV_ERR_PROTOCOL, "reply nested too deeply");
        if ((uint64_t)(n > 0 ? n : 1) > *budget / sizeof(kv_reply))
            return kv_seterr(h, ANYKV_ERR_PROTOCOL,
                             "array reply of %lld elements exceeds max_reply_bytes",
                             (long long)n);
        *budget -= (size_t)(n > 0 ? n : 1) * sizeof(kv_reply); /* "*0" allocates one too */
        r->type = KV_ARRAY;
        r->elems = calloc(n > 0 ? (size_t)n : 1, sizeof(kv_reply)); /* zero = KV_NIL */
        if (r->elems == NULL)
            return kv_seterr(h, ANYKV_ERR_NOMEM, "out of memory reading reply");
        r->len = (size_t)n;
        for (int64_t i = 0; i < n; i++) {
            if ((rc = read_reply(h, depth + 1, budget, &r->elems[i])) != 0)
                return rc;
        }
        return 0;
    default: {
        /* Quote the line's start, escaped: an HTTP or memcached port is then plain to see. */
        char shown[48];
        size_t o = 0, i = 0;
        for (; i < len && o + 5 < sizeof shown; i++) {
            unsigned char c = (unsigned char)line[i];
            if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
                shown[o++] = (char)c;
            else
                o += (size_t)snprintf(shown + o, sizeof shown - o, "\\x%02x", c);
        }
        shown[o] = '\0';
        return kv_seterr(h, ANYKV_ERR_PROTOCOL,
                         "not a RESP reply: \"%s\"%s (a server of another protocol?)", shown,
                         i < len ? "..." : "");
    }
    }
}

/* One command on the current connection. Any failure other than a server
 * error reply leaves the stream in an unknown state, so it disconnects. */
static int roundtrip(struct anykv *h, int argc, const void *const *argv,
                     const size_t *argvlen, kv_reply **out)
{
    *out = NULL;
    int rc = encode(h, argc, argv, argvlen);
    if (rc != ANYKV_OK)
        return rc;
    h->deadline = deadline_after(h->io_timeout_ms);
    rc = send_all(h);
    if (h->wcap > (1u << 20)) { /* do not keep a huge request buffer around */
        free(h->wbuf);
        h->wbuf = NULL;
        h->wcap = 0;
    }
    kv_reply *r = NULL;
    if (rc == ANYKV_OK) {
        r = calloc(1, sizeof *r);
        if (r == NULL)
            rc = kv_seterr(h, ANYKV_ERR_NOMEM, "out of memory");
    }
    if (rc == ANYKV_OK) {
        size_t budget = h->max_reply_bytes;
        rc = read_reply(h, 0, &budget, r);
    }
    if (rc != ANYKV_OK) {
        kv_reply_free(r);
        kv_disconnect(h);
        if ((rc == ANYKV_ERR_TIMEOUT || rc == ANYKV_ERR_IO) && h->nserv > 1)
            h->cur = (h->cur + 1) % h->nserv; /* it died or stopped answering: start with the next */
        return rc;
    }
    if (r->type == KV_ERROR) {
        /* An empty text ("-\r\n", or one starting with a NUL) would read as "no error". */
        kv_seterr(h, ANYKV_ERR_SERVER, "%s", r->str[0] != '\0' ? r->str : "server error reply with no text");
        kv_reply_free(r);
        return ANYKV_ERR_SERVER;
    }
    *out = r;
    return ANYKV_OK;
}

/* True if the idle connection has something to read: in RESP2 without
 * pub/sub that can only be EOF/RST (server went away) or stray bytes. */
static int stale(struct anykv *h)
{
    if (h->rpos != h->rlen)
        return 1;
    struct pollfd pfd = {.fd = h->fd, .events = POLLIN};
    return poll(&pfd, 1, 0) != 0;
}

int kv_call(struct anykv *h, int argc, const void *const *argv,
            const size_t *argvlen, kv_reply **out)
{
    *out = NULL;
    h->err[0] = '\0';
    /* A connection opened before a fork() is the parent's: a child that used
     * it too would read the parent's replies (and the parent the child's).
     * The child drops its copy of the descriptor, which leaves the parent's
     * connection open, and connects anew. */
    if (h->fd >= 0 && (h->pid != getpid() || stale(h)))
        kv_disconnect(h);
    if (h->fd < 0) {
        int rc = kv_connect(h);
        if (rc != ANYKV_OK)
            return rc;
    }
    return roundtrip(h, argc, argv, argvlen, out);
}
