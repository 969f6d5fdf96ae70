/*
 * test_restart.c - durability and reconnection through lib739kv.so:
 * acknowledged puts, kill -9 of the server, calls fail with -1 while it is
 * down, restart on the same port and data directory, and every acknowledged
 * put reads back - all without calling kv739_init again.
 *
 * run.sh provides KV_ADDR, KV_PIDFILE (pid of the running server) and
 * KV_START_CMD (starts the server again and waits until it answers PING).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kv739.h"

enum { NKEYS = 300, NOVERWRITE = 50 };

static char pfx[96];

static void kv(int i, int gen, char *k, size_t kc, char *v, size_t vc)
{
    snprintf(k, kc, "%srestart-%d", pfx, i);
    snprintf(v, vc, "value %d gen %d %0*d", i, gen, 20 + i % 200, i); /* varied sizes */
}

int main(void)
{
    char addr[256];
    snprintf(addr, sizeof addr, "%s", check_env("KV_ADDR"));
    const char *pidfile = check_env("KV_PIDFILE");
    const char *start = check_env("KV_START_CMD");
    snprintf(pfx, sizeof pfx, "%s", check_prefix());

    if (!CHECKF(kv739_init(addr) == 0, "kv739_init(%s)", addr))
        return check_done("test_restart");

    /* Acknowledged puts: NKEYS new keys, then NOVERWRITE of them again. */
    char k[200], v[300], out[KV739_BUF_SIZE], old[KV739_BUF_SIZE];
    int acked = 0;
    for (int i = 0; i < NKEYS; i++) {
        kv(i, 0, k, sizeof k, v, sizeof v);
        acked += kv739_put(k, v, old) == 1;
    }
    for (int i = 0; i < NOVERWRITE; i++) {
        char pv[300];
        kv(i, 0, k, sizeof k, pv, sizeof pv);
        kv(i, 1, k, sizeof k, v, sizeof v);
        acked += kv739_put(k, v, old) == 0 && strcmp(old, pv) == 0;
    }
    CHECK_EQ(acked, NKEYS + NOVERWRITE);

    /* kill -9 the server. */
    long pid = check_read_pid(pidfile);
    if (!CHECKF(pid > 1, "no server pid in %s", pidfile))
        return check_done("test_restart");
    CHECK_EQ(kill((pid_t)pid, SIGKILL), 0);
    printf("  %d puts acknowledged; killed server pid %ld with SIGKILL\n", acked, pid);
    check_sleep_ms(200);

    /* While it is down every call fails with -1, fast. */
    int64_t t0 = check_now_ms();
    int down_ok = 0;
    for (int i = 0; i < 5; i++) {
        kv(i, 0, k, sizeof k, v, sizeof v);
        down_ok += kv739_get(k, out) == -1;
        down_ok += kv739_put(k, v, old) == -1;
    }
    CHECK_EQ(down_ok, 10);
    int64_t took = check_now_ms() - t0;
    CHECKF(took < 10 * 1500, "10 calls while down took %lld ms", (long long)took);
    printf("  %d of 10 calls returned -1 while down (%lld ms in all)\n", down_ok,
           (long long)took);

    /* Restart on the same port and directory (no kv739_init afterwards). */
    int rc = system(start);
    if (!CHECKF(rc == 0, "restart command failed: %d", rc))
        return check_done("test_restart");

    long npid = check_read_pid(pidfile);
    CHECK(npid > 1 && npid != pid);
    printf("  server restarted as pid %ld; reading back without kv739_init\n", npid);

    int mismatches = 0;
    for (int i = 0; i < NKEYS; i++) {
        kv(i, i < NOVERWRITE ? 1 : 0, k, sizeof k, v, sizeof v);
        if (kv739_get(k, out) != 0 || strcmp(out, v) != 0) {
            if (mismatches++ < 5)
                fprintf(stderr, "after restart: %s -> '%s', want '%s'\n", k, out, v);
        }
    }
    CHECKF(mismatches == 0, "%d acknowledged puts lost or wrong after restart", mismatches);

    /* Writes work again too, with the pre-crash value as old value. */
    kv(0, 1, k, sizeof k, v, sizeof v);
    char nv[] = "after restart";
    CHECK_EQ(kv739_put(k, nv, old), 0);
    CHECK(strcmp(old, v) == 0);
    CHECK_EQ(kv739_get(k, out), 0);
    CHECK(strcmp(out, nv) == 0);
    CHECK_EQ(kv739_shutdown(), 0);
    return check_done("test_restart");
}
