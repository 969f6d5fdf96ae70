/*
 * fakeserver.c - see fakeserver.h. One thread accepts and serves the
 * connections one after the other; a pipe wakes it up for fake_stop().
 */
#include "fakeserver.h"

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct fake_server {
    const char *const *const *scripts;
    int nscripts;
    int lfd, port;
    int stop_pipe[2];
    pthread_t thread;
    pthread_mutex_t lock;
    char *rx;          /* all bytes received */
    size_t rxlen;
    int accepted;
};

/* Wait for fd to be readable; 0 if it is, -1 if stop was requested. */
static int wait_readable(fake_server *f, int fd)
{
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = f->stop_pipe[0], .events = POLLIN}};
    for (;;) {
        if (poll(p, 2, -1) < 0)
            continue;
        if (p[1].revents)
            return -1;
        if (p[0].revents)
            return 0;
    }
}

/* Read one request chunk and record it; -1 on EOF, error or stop. */
static int read_request(fake_server *f, int fd)
{
    char buf[65536];
    if (wait_readable(f, fd) != 0)
        return -1;
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0)
        return -1;
    pthread_mutex_lock(&f->lock);
    char *nrx = realloc(f->rx, f->rxlen + (size_t)n + 1);
    if (nrx != NULL) {
        f->rx = nrx;
        memcpy(f->rx + f->rxlen, buf, (size_t)n);
        f->rxlen += (size_t)n;
        f->rx[f->rxlen] = '\0';
    }
    pthread_mutex_unlock(&f->lock);
    return 0;
}

static void serve(fake_server *f, int fd, const char *const *script)
{
    int pieces = 0; /* the entry continues a reply: read no request first */
    for (int i = 0; script != NULL && script[i] != NULL; i++) {
        if (strcmp(script[i], FAKE_CLOSE) == 0)
            return;
        if (strcmp(script[i], FAKE_PAUSE) == 0) {
            struct timespec ts = {0, 100 * 1000000L};
            nanosleep(&ts, NULL);
            pieces = 1;
            continue;
        }
        if (!pieces && read_request(f, fd) != 0)
            return;
        pieces = 0;
        if (strcmp(script[i], FAKE_HANG) == 0) {
            char c;
            while (wait_readable(f, fd) == 0 && recv(fd, &c, 1, 0) > 0)
                ; /* swallow input, never answer, until stop or EOF */
            return;
        }
        size_t len = strlen(script[i]), off = 0;
        while (off < len) {
            ssize_t n = send(fd, script[i] + off, len - off, MSG_NOSIGNAL);
            if (n <= 0)
                return;
            off += (size_t)n;
        }
    }
    (void)read_request(f, fd); /* script over: close on the next request */
}

static void *run(void *arg)
{
    fake_server *f = arg;
    for (;;) {
        if (wait_readable(f, f->lfd) != 0)
            return NULL;
        int fd = accept(f->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        pthread_mutex_lock(&f->lock);
        int i = f->accepted++;
        pthread_mutex_unlock(&f->lock);
        if (i < f->nscripts)
            serve(f, fd, f->scripts[i]);
        close(fd);
    }
}

fake_server *fake_start(const char *const *const *scripts, int nscripts)
{
    fake_server *f = calloc(1, sizeof *f);
    if (f == NULL)
        return NULL;
    f->scripts = scripts;
    f->nscripts = nscripts;
    pthread_mutex_init(&f->lock, NULL);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(f->lfd, 16) != 0 || getsockname(f->lfd, (struct sockaddr *)&a, &al) != 0 ||
        pipe(f->stop_pipe) != 0) {
        if (f->lfd >= 0)
            close(f->lfd);
        free(f);
        return NULL;
    }
    f->port = ntohs(a.sin_port);
    if (pthread_create(&f->thread, NULL, run, f) != 0) {
        close(f->lfd);
        close(f->stop_pipe[0]);
        close(f->stop_pipe[1]);
        free(f);
        return NULL;
    }
    return f;
}

int fake_port(const fake_server *f)
{
    return f->port;
}

int fake_accepted(fake_server *f)
{
    pthread_mutex_lock(&f->lock);
    int n = f->accepted;
    pthread_mutex_unlock(&f->lock);
    return n;
}

char *fake_received(fake_server *f, size_t *len)
{
    pthread_mutex_lock(&f->lock);
    char *c = malloc(f->rxlen + 1);
    if (c != NULL) {
        if (f->rxlen > 0)
            memcpy(c, f->rx, f->rxlen);
        c[f->rxlen] = '\0';
        if (len != NULL)
            *len = f->rxlen;
    }
    pthread_mutex_unlock(&f->lock);
    return c;
}

void fake_stop(fake_server *f)
{
    if (f == NULL)
        return;
    if (write(f->stop_pipe[1], "x", 1) != 1)
        abort();
    pthread_join(f->thread, NULL);
    close(f->lfd);
    close(f->stop_pipe[0]);
    close(f->stop_pipe[1]);
    pthread_mutex_destroy(&f->lock);
    free(f->rx);
    free(f);
}
