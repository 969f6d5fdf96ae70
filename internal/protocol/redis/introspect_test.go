package redis

import (
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// infoField returns one field of an INFO section ("" when absent).
func infoField(t *testing.T, c *goredis.Client, section, field string) string {
	t.Helper()
	out, err := c.Info(ctx, section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(out, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	return ""
}

// TestInfoKeyspaceExpires: INFO keyspace counts the keys with a time to live and their mean time left, per
// database, collections included.
func TestInfoKeyspaceExpires(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	c.Set(ctx, "a", "1", 100*time.Second)
	c.Set(ctx, "b", "1", 0)
	c.HSet(ctx, "h", "f", "v")
	c.Expire(ctx, "h", 300*time.Second)
	c.Do(ctx, "SELECT", "2")
	c.Set(ctx, "c", "1", 0)
	if got := infoField(t, c, "keyspace", "db0"); got != "keys=3,expires=2,avg_ttl=200000" {
		t.Errorf("db0: %q", got)
	}
	if got := infoField(t, c, "keyspace", "db2"); got != "keys=1,expires=0,avg_ttl=0" {
		t.Errorf("db2: %q", got)
	}
}

// clientListFields are the fields of a Redis 7.2 CLIENT LIST line, in order.
var clientListFields = []string{"id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub",
	"ssub", "multi", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp", "obl", "oll", "omem", "tot-mem",
	"events", "cmd", "user", "redir", "resp", "lib-name", "lib-ver"}

// parseClientLine maps a CLIENT LIST line's fields to values, and lists its field names in order.
func parseClientLine(line string) (map[string]string, []string) {
	m := map[string]string{}
	var names []string
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
		names = append(names, k)
	}
	return m, names
}

// TestClientList: every connection's line has Redis 7's fields in Redis's order (compared with a real
// redis-server when installed, whose 7.0 lacks only lib-name and lib-ver), with the other connection's real idle
// time, database, subscriptions, transaction and last command.
func TestClientList(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	me := ts.client(t, &goredis.Options{PoolSize: 1, Protocol: 2})
	other := ts.client(t, &goredis.Options{PoolSize: 1, Protocol: 2, DB: 3})
	if err := other.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	ts.advance(7 * time.Second)
	out, err := me.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("CLIENT LIST has %d lines:\n%s", len(lines), out)
	}
	mine, names := parseClientLine(lines[0])
	theirs, names2 := parseClientLine(lines[1])
	if myID := me.ClientID(ctx).Val(); mine["id"] != itoa(myID) {
		mine, theirs = theirs, mine
	}
	if strings.Join(names, " ") != strings.Join(clientListFields, " ") || strings.Join(names2, " ") != strings.Join(names, " ") {
		t.Fatalf("fields\n%v\n%v\nwant %v", names, names2, clientListFields)
	}
	for k, want := range map[string]string{"idle": "0", "cmd": "client|list", "db": "0", "multi": "-1", "argv-mem": "10", "flags": "N"} {
		if mine[k] != want {
			t.Errorf("own line %s=%q, want %q", k, mine[k], want)
		}
	}
	for k, want := range map[string]string{"idle": "7", "age": "7", "cmd": "set", "db": "3", "flags": "N"} {
		if theirs[k] != want {
			t.Errorf("other line %s=%q, want %q", k, theirs[k], want)
		}
	}
	if theirs["fd"] == "-1" || theirs["fd"] == mine["fd"] {
		t.Errorf("fds %s and %s", mine["fd"], theirs["fd"])
	}

	// A subscriber and a transaction show in flags, sub/psub and multi.
	ps := other.PSubscribe(ctx, "p*")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	tx := ts.raw(t)
	tx.send("*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\nb\r\n")
	tx.reply()
	tx.reply()
	out = me.ClientList(ctx).Val()
	var sawSub, sawMulti bool
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f, _ := parseClientLine(l)
		sawSub = sawSub || (f["flags"] == "P" && f["psub"] == "1" && f["sub"] == "0" && f["cmd"] == "psubscribe")
		sawMulti = sawMulti || (f["flags"] == "x" && f["multi"] == "1" && f["multi-mem"] == "5")
	}
	if !sawSub || !sawMulti {
		t.Errorf("subscriber seen %v, transaction seen %v:\n%s", sawSub, sawMulti, out)
	}

	if addr := startRedisServerIfAny(t); addr != "" {
		rc := goredis.NewClient(&goredis.Options{Addr: addr, Protocol: 2})
		defer rc.Close()
		_, real := parseClientLine(strings.TrimSpace(rc.ClientList(ctx).Val()))
		if strings.Join(real, " ") != strings.Join(clientListFields[:len(real)], " ") {
			t.Errorf("redis-server's fields %v, anykv's %v", real, clientListFields)
		}
	}
}
