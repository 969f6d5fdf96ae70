/*
 * kvtool.c - small helpers for tests/run.sh, so the script needs no other
 * client program:
 *   kvtool freeport               print a free TCP port on 127.0.0.1
 *   kvtool wait HOST:PORT MS      wait up to MS ms until PING is answered
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "anykv.h"

static int freeport(void)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) != 0) {
        perror("freeport");
        return 1;
    }
    printf("%d\n", ntohs(a.sin_port));
    close(fd);
    return 0;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int wait_ping(const char *addr, long long ms)
{
    anykv_options o = {.connect_timeout_ms = 200, .io_timeout_ms = 1000, .lazy = 1};
    anykv_t *h = anykv_connect(addr, &o);
    if (h == NULL) {
        fprintf(stderr, "kvtool: bad address %s\n", addr);
        return 2;
    }
    long long end = now_ms() + ms;
    int rc;
    while ((rc = anykv_ping(h)) != ANYKV_OK && now_ms() < end) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (rc != ANYKV_OK)
        fprintf(stderr, "kvtool: %s does not answer PING: %s\n", addr, anykv_errstr(h));
    anykv_close(h);
    return rc == ANYKV_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "freeport") == 0)
        return freeport();
    if (argc == 4 && strcmp(argv[1], "wait") == 0)
        return wait_ping(argv[2], atoll(argv[3]));
    fprintf(stderr, "usage: kvtool freeport | kvtool wait HOST:PORT MS\n");
    return 2;
}
