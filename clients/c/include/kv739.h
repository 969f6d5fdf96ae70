/*
 * kv739.h - the fixed "739" key-value client contract, implemented by
 * lib739kv.so on top of the anykv client (RESP2, C library only).
 *
 * Keys:   printable ASCII (0x20..0x7e) without '[' or ']', 1..128 bytes.
 * Values: printable ASCII (0x20..0x7e) without '[' or ']', 1..2048 bytes.
 * Anything else makes the call return -1 without contacting the server.
 * Output buffers (value, old_value) must hold KV739_BUF_SIZE (2049) bytes;
 * a value read back that is longer than 2048 bytes gives -1, never an
 * overflow.
 *
 * Threading: every function may be called from several threads at once.
 * There is ONE process-wide connection, protected by ONE mutex: calls are
 * serialised (each holds the mutex for one network round trip). After
 * fork(), the child's calls go over a connection of its own.
 *
 * Failure and recovery: if the server goes away, calls return -1 (fast: the
 * connect timeout is 1 s, the I/O timeout 3 s) and the next call tries to
 * reconnect, so calls succeed again once the server is back, without calling
 * kv739_init again.
 */
#ifndef KV739_H
#define KV739_H

#ifdef __cplusplus
extern "C" {
#endif

#define KV739_MAX_KEY 128
#define KV739_MAX_VALUE 2048
#define KV739_BUF_SIZE (KV739_MAX_VALUE + 1)

#ifndef KV739_API
#define KV739_API __attribute__((visibility("default")))
#endif

/* Connect to "host:port", or to the first answering server of a list
 * "h1:p1,h2:p2,..."; when the server in use dies, later calls move to the
 * next one (a call cut off after sending fails with -1 and is not resent).
 * 0 on success, -1 on failure (a bad address, a list with spaces among them
 * included; no server reachable). Calling it again replaces the previous
 * connection (if the new connect fails, the previous one is kept). */
KV739_API int kv739_init(char *server);

/* 0 and the value copied (NUL-terminated) into value if the key is present,
 * 1 if it is absent, -1 on failure. */
KV739_API int kv739_get(char *key, char *value);

/* Store value and atomically fetch the previous one (SET key value GET)
 * into old_value. 0 if there was an old value, 1 if there was none, -1 on
 * failure. (If the old value is longer than 2048 bytes the new value is
 * stored but the call returns -1.) */
KV739_API int kv739_put(char *key, char *value, char *old_value);

/* Close the connection and free everything. 0 on success (also when not
 * initialised). After it, kv739_init may be called again. */
KV739_API int kv739_shutdown(void);

#ifdef __cplusplus
}
#endif
#endif /* KV739_H */
