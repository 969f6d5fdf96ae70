package redis

import (
	"context"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// configScript is CONFIG SET and GET calls whose replies are Redis 7's, errors included: bad values, bounds,
// memory units, all-or-nothing pairs, immutable and unknown parameters, and REWRITE without a config file.
var configScript = [][]string{
	{"CONFIG", "SET", "maxclients", "abc"},
	{"CONFIG", "SET", "maxclients", "0"},
	{"CONFIG", "SET", "maxclients", "50"},
	{"CONFIG", "GET", "maxclients"},
	{"CONFIG", "SET", "maxclients", "60", "proto-max-bulk-len", "xyz"},
	{"CONFIG", "GET", "maxclients"},
	{"CONFIG", "SET", "proto-max-bulk-len", "10"},
	{"CONFIG", "SET", "proto-max-bulk-len", "2mb"},
	{"CONFIG", "GET", "proto-max-bulk-len"},
	{"CONFIG", "SET", "client-query-buffer-limit", "3MB"},
	{"CONFIG", "GET", "client-query-buffer-limit"},
	{"CONFIG", "SET", "busy-reply-threshold", "-1"},
	{"CONFIG", "SET", "lua-time-limit", "4000"},
	{"CONFIG", "GET", "busy-reply-threshold"},
	{"CONFIG", "SET", "busy-reply-threshold", "5000"},
	{"CONFIG", "SET", "maxmemory-clients", "0"},
	{"CONFIG", "GET", "maxmemory-clients"},
	{"CONFIG", "SET", "databases", "3"},
	{"CONFIG", "SET", "nosuch", "1"},
	{"CONFIG", "SET", "maxclients", "10", "maxclients", "20"},
	{"CONFIG", "SET", "requirepass", ""},
	{"CONFIG", "REWRITE"},
}

func configScriptReplies(t *testing.T, addr string) []string {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: addr, Protocol: 2})
	defer c.Close()
	var out []string
	for _, args := range configScript {
		a := make([]any, len(args))
		for i, s := range args {
			a[i] = s
		}
		v, err := c.Do(context.Background(), a...).Result()
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		if l, ok := v.([]any); ok {
			var parts []string
			for _, x := range l {
				parts = append(parts, x.(string))
			}
			v = strings.Join(parts, "=")
		}
		out = append(out, v.(string))
	}
	return out
}

var configScriptWant = []string{
	"ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer",
	"ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive",
	"OK",
	"maxclients=50",
	"ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - argument must be a memory value",
	"maxclients=50",
	"ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - argument must be between 1048576 and 9223372036854775807 inclusive",
	"OK",
	"proto-max-bulk-len=2097152",
	"OK",
	"client-query-buffer-limit=3145728",
	"ERR CONFIG SET failed (possibly related to argument 'busy-reply-threshold') - argument must be between 0 and 9223372036854775807 inclusive",
	"OK",
	"busy-reply-threshold=4000",
	"OK",
	"OK",
	"maxmemory-clients=0",
	"ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config",
	"ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'",
	"ERR CONFIG SET failed (possibly related to argument 'maxclients') - duplicate parameter",
	"OK",
	"ERR The server is running without a config file",
}

// TestConfigSetMatchesRedis runs configScript against anykv and, when installed, redis-server.
func TestConfigSetMatchesRedis(t *testing.T) { matchRedis(t, configScriptReplies, configScriptWant) }

// matchRedis requires run's answers from a fresh anykv, and from redis-server when one is installed, to be want.
func matchRedis(t *testing.T, run func(t *testing.T, addr string) []string, want []string) {
	t.Helper()
	ts := startServer(t, Options{}, 0)
	compareEvents(t, run(t, ts.addr), want)
	if addr := startRedisServerIfAny(t); addr != "" {
		compareEvents(t, run(t, addr), want)
	}
}

// TestConfigSetTakesEffect: the run-time settings act at once: requirepass on new connections (those already in
// keep going, as in Redis), maxclients on the next connection, proto-max-bulk-len on the next request of a
// connection already open, busy-reply-threshold on the next script.
func TestConfigSetTakesEffect(t *testing.T) {
	ts := startServer(t, Options{}, 10)
	admin := ts.raw(t)
	admin.expect("+OK\r\n", "CONFIG", "SET", "requirepass", "s3cret")
	fresh := ts.raw(t)
	fresh.expect("-NOAUTH Authentication required.\r\n", "GET", "k")
	fresh.expect("+OK\r\n", "AUTH", "s3cret")
	admin.expect("$-1\r\n", "GET", "k")
	admin.expect("+OK\r\n", "CONFIG", "SET", "requirepass", "")
	ts.raw(t).expect("$-1\r\n", "GET", "k")

	admin.expect("+OK\r\n", "CONFIG", "SET", "maxclients", "4") // admin, fresh and the one above are open
	third := ts.raw(t)
	third.expect("+PONG\r\n", "PING")
	if got := ts.raw(t).reply(); got != "-ERR max number of clients reached\r\n" {
		t.Fatalf("a fifth connection over maxclients 4: %q", got)
	}
	admin.expect("+OK\r\n", "CONFIG", "SET", "maxclients", "10")

	admin.expect("+OK\r\n", "CONFIG", "SET", "proto-max-bulk-len", "1mb")
	third.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n")
	if got := third.reply(); got != "-ERR Protocol error: invalid bulk length\r\n" {
		t.Fatalf("a bulk over proto-max-bulk-len: %q", got)
	}

	t.Cleanup(func() { luaTimeLimit.Store(int64(5 * time.Second)) })
	admin.expect("+OK\r\n", "CONFIG", "SET", "busy-reply-threshold", "50")
	admin.send(respCmd("EVAL", "while true do end", "0"))
	if got := admin.reply(); !strings.Contains(got, "Script killed") {
		t.Fatalf("a script past busy-reply-threshold: %q", got)
	}
}
