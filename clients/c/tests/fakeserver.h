/*
 * fakeserver.h - a scripted TCP peer on 127.0.0.1 for testing how libanykv
 * handles misbehaving servers (garbage, huge claimed lengths, silence,
 * dropped connections, AUTH errors).
 *
 * Connection i (0-based, in accept order) follows scripts[i], a
 * NULL-terminated list of entries; for each entry the server first reads one
 * request (one recv), then:
 *   - a normal string: sends it as the reply;
 *   - FAKE_HANG:  sends nothing and keeps the connection open until stop;
 *   - FAKE_CLOSE: closes the connection without replying.
 *   - FAKE_PAUSE: sends nothing for 100 ms, then the next entry follows
 *     without reading a request first (one reply in two pieces).
 * When the list runs out, the next request closes the connection too.
 * Connections beyond nscripts are closed at once. Every byte received is
 * kept and can be read back with fake_received().
 */
#ifndef FAKESERVER_H
#define FAKESERVER_H

#include <stddef.h>

#define FAKE_HANG "\001hang"
#define FAKE_CLOSE "\001close"
#define FAKE_PAUSE "\001pause"

typedef struct fake_server fake_server;

fake_server *fake_start(const char *const *const *scripts, int nscripts);
int fake_port(const fake_server *f);
/* Number of connections accepted so far. */
int fake_accepted(fake_server *f);
/* Copy of all bytes received so far (NUL-terminated; caller frees). */
char *fake_received(fake_server *f, size_t *len);
void fake_stop(fake_server *f);

#endif
