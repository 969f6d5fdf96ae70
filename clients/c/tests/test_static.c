/*
 * test_static.c - libanykv.a linked into a program that has functions of its
 * own named as the library's internals are (kv_call, kv_connect, ...; plain
 * names a key-value program may well use). The archive must export only
 * anykv_*, as libanykv.so does: then this links (it failed with "multiple
 * definition of `kv_connect'"), the program's functions are its own, and the
 * library still uses its own against the real server at $KV_ADDR.
 */
#include <stdio.h>
#include <string.h>

#include "anykv.h"
#include "check.h"

/* The program's own functions, deliberately not the library's signatures. */
int kv_call(void) { return 1; }
int kv_connect(void) { return 2; }
int kv_disconnect(void) { return 3; }
int kv_parse_hostport(void) { return 4; }
int kv_parse_servers(void) { return 5; }
int kv_reply_free(void) { return 6; }
int kv_seterr(void) { return 7; }
int kv_type_name(void) { return 8; }

int main(void)
{
    const char *addr = check_env("KV_ADDR");
    char k[128];
    size_t kl = (size_t)snprintf(k, sizeof k, "%sstatic", check_prefix());
    anykv_t *h = anykv_connect(addr, NULL);
    if (CHECKF(h != NULL, "connect %s", addr)) {
        CHECK_EQ(anykv_ping(h), ANYKV_OK);
        CHECK_EQ(anykv_set(h, k, kl, "v", 1, 0, 0), ANYKV_OK);
        char *v = NULL;
        CHECK_EQ(anykv_get(h, k, kl, &v, NULL), ANYKV_OK);
        CHECK(v != NULL && strcmp(v, "v") == 0);
        anykv_free(v);
        CHECK_EQ(anykv_del(h, k, kl), ANYKV_OK);
        anykv_close(h);
    }
    /* A bad address and a refused connect go through the library's own parser and connect. */
    CHECK(anykv_connect("no-port", NULL) == NULL);
    anykv_options lazy = {.lazy = 1};
    anykv_t *r = anykv_connect("127.0.0.1:1", &lazy);
    if (CHECK(r != NULL)) {
        CHECK_EQ(anykv_ping(r), ANYKV_ERR_IO);
        CHECK(strstr(anykv_errstr(r), "127.0.0.1:1") != NULL);
        anykv_close(r);
    }
    CHECK(kv_call() == 1 && kv_connect() == 2 && kv_disconnect() == 3 &&
          kv_parse_hostport() == 4 && kv_parse_servers() == 5 && kv_reply_free() == 6 &&
          kv_seterr() == 7 && kv_type_name() == 8);
    return check_done("test_static");
}
