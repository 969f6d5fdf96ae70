/*
 * test_failover.c - several servers in one address, "h1:p1,h2:p2": libanykv
 * and lib739kv.so connect to the first that answers, and when the one in use
 * dies, the next call moves to the next server without kv739_init. A dead
 * first server is passed over at connect; malformed lists are refused.
 *
 * run.sh provides KV_ADDR and KV_PIDFILE (server a, killed here and restarted
 * with KV_START_CMD at the end) and KV_ADDR2 (server b). The two servers hold
 * separate data, as two front ends of one shared datastore would not: this
 * tests the client's moving, not the data's sharing.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anykv.h"
#include "check.h"
#include "kv739.h"

int main(void)
{
    const char *a = check_env("KV_ADDR"), *b = check_env("KV_ADDR2");
    const char *pidfile = check_env("KV_PIDFILE"), *start = check_env("KV_START_CMD");
    char pfx[96], k[200], list[600], out[KV739_BUF_SIZE], old[KV739_BUF_SIZE];
    snprintf(pfx, sizeof pfx, "%s", check_prefix());

    /* Malformed lists are refused; a dead first server is passed over. */
    CHECK(anykv_connect("127.0.0.1:1,", NULL) == NULL);
    CHECK(anykv_connect(",127.0.0.1:1", NULL) == NULL);
    CHECK(anykv_connect("127.0.0.1:1,,127.0.0.1:2", NULL) == NULL);
    CHECK(anykv_connect("127.0.0.1:1,nonsense", NULL) == NULL);
    snprintf(list, sizeof list, "127.0.0.1:1,%s", b); /* nothing listens on port 1 */
    anykv_t *h = anykv_connect(list, NULL);
    if (CHECKF(h != NULL, "connect to %s", list)) {
        CHECK_EQ(anykv_ping(h), ANYKV_OK);
        anykv_close(h);
    }

    /* kv739 over "a,b": puts go to a until it dies, then to b. */
    snprintf(list, sizeof list, "%s,%s", a, b);
    if (!CHECKF(kv739_init(list) == 0, "kv739_init(%s)", list))
        return check_done("test_failover");
    snprintf(k, sizeof k, "%sfailover-1", pfx);
    CHECK_EQ(kv739_put(k, "on a", old), 1);
    long pid = check_read_pid(pidfile);
    if (!CHECKF(pid > 1, "no pid in %s", pidfile))
        return check_done("test_failover");
    CHECK_EQ(kill((pid_t)pid, SIGKILL), 0);
    check_sleep_ms(200);
    /* The next calls find the connection to a gone and move to b; nothing is
     * resent, and the key written on a is not on b (separate data). */
    snprintf(k, sizeof k, "%sfailover-2", pfx);
    CHECK_EQ(kv739_put(k, "on b", old), 1);
    CHECK_EQ(kv739_get(k, out), 0);
    CHECK(strcmp(out, "on b") == 0);
    snprintf(k, sizeof k, "%sfailover-1", pfx);
    CHECK_EQ(kv739_get(k, out), 1);
    CHECK_EQ(kv739_shutdown(), 0);

    /* a comes back for the tests after this one. */
    int rc = system(start);
    CHECKF(rc == 0, "restart command failed: %d", rc);
    return check_done("test_failover");
}
