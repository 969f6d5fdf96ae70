package redis

import (
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// bitCopyScript: SETBIT and BITFIELD that change nothing (the bit or field holds the value already, a failed
// OVERFLOW FAIL increment), that only grow or create the string, and COPY into another database or over a key
// it replaces (difffuzz --events found them).
const bitCopyScript = `SET d 1
SETBIT d 0 0
SETBIT d 2 1
SETBIT d 100 0
SETBIT d 100 0
SETBIT e 3 0
SETBIT e 3 1
BITFIELD d SET u8 0 49
BITFIELD d INCRBY u8 0 0
BITFIELD d SET u8 0 50
BITFIELD d INCRBY u8 0 1
BITFIELD d OVERFLOW FAIL INCRBY u8 0 1000
BITFIELD d OVERFLOW FAIL INCRBY u8 0 1000 INCRBY u8 200 0
BITFIELD d SET u8 300 0
BITFIELD d GET u8 0
BITFIELD f OVERFLOW FAIL INCRBY u8 0 1000
BITFIELD g OVERFLOW FAIL INCRBY u8 0 1000 SET u4 0 0
COPY d c
COPY d c REPLACE
COPY d c DB 1
COPY d c DB 1 REPLACE
COPY e d REPLACE DB 1`

// runEventsAllDBs runs script's commands (one a line) over RESP protocol proto under "KEAn" and returns the
// keyevent messages of every database in arrival order, as "db event key".
func runEventsAllDBs(t *testing.T, addr string, proto int, script string) []string {
	t.Helper()
	var got []string
	eventsOf(t, addr, proto, "__keyevent@*__:*", script, nil, func(m *goredis.Message) {
		db, event, _ := strings.Cut(strings.TrimPrefix(m.Channel, "__keyevent@"), "__:")
		got = append(got, db+" "+event+" "+m.Payload)
	})
	return got
}

// TestBitAndCopyEventsMatchRedis: SETBIT and BITFIELD send "setbit" only when they changed the string or made or
// grew it (BITFIELD: with a write that did not fail), as redis-server 7.0.15; COPY sends "new" and "copy_to" in
// the destination's database, "new" also over a key REPLACE replaced. anykv sent "setbit" for every SETBIT and
// every BITFIELD with SET or INCRBY, and COPY's events in the source's database.
func TestBitAndCopyEventsMatchRedis(t *testing.T) {
	addr := startRedisServer(t)
	want := runEventsAllDBs(t, addr, 2, bitCopyScript)
	ts := startServer(t, Options{}, 0)
	compareEvents(t, runEventsAllDBs(t, ts.addr, 2, bitCopyScript), want)
}

// TestResp3EmptySetPopSendsNoEvent: SPOP with a count that pops nothing (a count of 0, a missing key) answers an
// empty set, in RESP3 "~0", and sends no event; anykv took only RESP2's "*0" for an empty answer and sent "spop"
// in RESP3 (difffuzz --events --resp3).
func TestResp3EmptySetPopSendsNoEvent(t *testing.T) {
	const script = "SADD s a b\nSPOP s 0\nSPOP nokey 3\nSPOP s 1\nSPOP nokey\nSPOP s 5\nSPOP s 2"
	addr := startRedisServer(t)
	ts := startServer(t, Options{}, 0)
	for _, proto := range []int{2, 3} {
		compareEvents(t, runEventsAllDBs(t, ts.addr, proto, script), runEventsAllDBs(t, addr, proto, script))
	}
}
