package redis

import (
	"fmt"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/metrics"
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

// TestCommandAndErrorStats: INFO commandstats counts calls, failed calls (an error while running, also inside
// EXEC) and rejected calls (wrong arity) per command; INFO errorstats and total_error_replies count error replies
// by kind, unknown commands included; CONFIG RESETSTAT zeroes them; commandstats is not a default section.
func TestCommandAndErrorStats(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	c.Ping(ctx) // go-redis's handshake may meet errors (a CLIENT subcommand anykv lacks): count from here
	errs0, _ := strconv.Atoi(strings.TrimPrefix(infoField(t, c, "errorstats", "errorstat_ERR"), "count="))
	total0, _ := strconv.Atoi(infoField(t, c, "stats", "total_error_replies"))
	rc := ts.raw(t)
	for _, cmd := range []string{"SET a 1", "SET a 2", "GET a", "LPUSH a x", "GET", "NOSUCH x", "MULTI", "SET b x",
		"INCR b", "EXEC"} {
		args := strings.Fields(cmd)
		var req strings.Builder
		req.WriteString("*" + itoa(int64(len(args))) + "\r\n")
		for _, a := range args {
			req.WriteString("$" + itoa(int64(len(a))) + "\r\n" + a + "\r\n")
		}
		rc.send(req.String())
		rc.reply()
	}
	stats := map[string]string{}
	for _, f := range []string{"cmdstat_set", "cmdstat_get", "cmdstat_lpush", "cmdstat_incr", "cmdstat_exec"} {
		v := infoField(t, c, "commandstats", f)
		if i := strings.Index(v, ",usec="); i >= 0 { // times vary: keep the counts
			j := strings.Index(v, ",rejected_calls=")
			v = v[:i] + v[j:]
		}
		stats[f] = v
	}
	want := map[string]string{
		"cmdstat_set":   "calls=3,rejected_calls=0,failed_calls=0",
		"cmdstat_get":   "calls=1,rejected_calls=1,failed_calls=0",
		"cmdstat_lpush": "calls=1,rejected_calls=0,failed_calls=1",
		"cmdstat_incr":  "calls=1,rejected_calls=0,failed_calls=1",
		"cmdstat_exec":  "calls=1,rejected_calls=0,failed_calls=0",
	}
	for k, v := range want {
		if stats[k] != v {
			t.Errorf("%s:%s, want %s", k, stats[k], v)
		}
	}
	if v := infoField(t, c, "commandstats", "cmdstat_set"); !strings.Contains(v, ",usec_per_call=") {
		t.Errorf("cmdstat_set:%s", v)
	}
	if got := infoField(t, c, "errorstats", "errorstat_ERR"); got != "count="+strconv.Itoa(errs0+3) { // arity, unknown, not an integer
		t.Errorf("errorstat_ERR:%s, %d before", got, errs0)
	}
	if got := infoField(t, c, "errorstats", "errorstat_WRONGTYPE"); got != "count=1" {
		t.Errorf("errorstat_WRONGTYPE:%s", got)
	}
	if got := infoField(t, c, "stats", "total_error_replies"); got != strconv.Itoa(total0+4) {
		t.Errorf("total_error_replies:%s", got)
	}
	if all := c.Info(ctx).Val(); strings.Contains(all, "cmdstat_") || !strings.Contains(all, "errorstat_ERR") {
		t.Errorf("default INFO:\n%s", all)
	}
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if got := infoField(t, c, "errorstats", "errorstat_ERR") + infoField(t, c, "commandstats", "cmdstat_set"); got != "" {
		t.Errorf("after CONFIG RESETSTAT: %q", got)
	}
}

// TestSlowlog: with slowlog-log-slower-than 0 every command is logged, newest first, with Redis's entry layout
// and argument clipping; slowlog-max-len bounds the log; a negative threshold logs nothing; RESET empties it.
func TestSlowlog(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1, Protocol: 2})
	c.Do(ctx, "CLIENT", "SETNAME", "slowpoke")
	if n := c.Do(ctx, "SLOWLOG", "LEN").Val(); n != int64(0) {
		t.Fatalf("SLOWLOG LEN = %v at the default threshold", n)
	}
	c.ConfigSet(ctx, "slowlog-log-slower-than", "0")
	long := strings.Repeat("x", 130)
	many := []any{"DEL"}
	for i := 0; i < 40; i++ {
		many = append(many, "k")
	}
	c.Set(ctx, "key", long, 0)
	c.Do(ctx, many...)
	got, err := c.Do(ctx, "SLOWLOG", "GET", "2").Slice()
	if err != nil || len(got) != 2 {
		t.Fatalf("SLOWLOG GET 2 = %v, %v", got, err)
	}
	newest, older := got[0].([]any), got[1].([]any)
	args := newest[3].([]any)
	if len(args) != 32 || args[31] != "... (10 more arguments)" || newest[5] != "slowpoke" ||
		!strings.HasPrefix(newest[4].(string), "127.0.0.1:") || newest[0].(int64) != older[0].(int64)+1 {
		t.Errorf("newest entry %v", newest)
	}
	if a := older[3].([]any); len(a) != 3 || a[2] != strings.Repeat("x", 128)+"... (2 more bytes)" {
		t.Errorf("older entry %v", older)
	}
	c.ConfigSet(ctx, "slowlog-max-len", "3")
	if n := c.Do(ctx, "SLOWLOG", "LEN").Val(); n != int64(3) {
		t.Errorf("SLOWLOG LEN = %v with slowlog-max-len 3", n)
	}
	for i := 0; i < 50; i++ { // well past the bound: the log drops its oldest entries in bulk
		c.Set(ctx, "n", i, 0)
	}
	all, _ := c.Do(ctx, "SLOWLOG", "GET", "-1").Slice()
	if len(all) != 3 {
		t.Fatalf("SLOWLOG GET -1 has %d entries with slowlog-max-len 3", len(all))
	}
	for i, e := range all {
		if a := e.([]any)[3].([]any); a[0] != "set" || a[2] != strconv.Itoa(49-i) {
			t.Errorf("entry %d of the newest three is %v", i, a)
		}
	}
	c.ConfigSet(ctx, "slowlog-log-slower-than", "-1")
	c.Do(ctx, "SLOWLOG", "RESET")
	c.Set(ctx, "k", "v", 0)
	if n := c.Do(ctx, "SLOWLOG", "LEN").Val(); n != int64(0) {
		t.Errorf("SLOWLOG LEN = %v after RESET with logging off", n)
	}
}

// TestBlockedWaitIsNotSlow: the time a blocking command waits for data is neither in the slow log nor in INFO
// commandstats' usec, as in Redis, which times only its execution: a worker's BLPOP that waited 300 ms for a job
// (or timed out) is not a slow command (redis-server 7.0.15 logs none of these and counts a few µs for each).
func TestBlockedWaitIsNotSlow(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1, Protocol: 2})
	other := ts.client(t, &goredis.Options{PoolSize: 1})
	if err := c.Do(ctx, "BLPOP", "empty", "0.3").Err(); err != goredis.Nil {
		t.Fatalf("BLPOP of an empty list: %v", err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		other.RPush(ctx, "jobs", "j1")
	}()
	if v, err := c.BLPop(ctx, 5*time.Second, "jobs").Result(); err != nil || v[1] != "j1" {
		t.Fatalf("BLPOP served after a wait: %v, %v", v, err)
	}
	if err := c.XRead(ctx, &goredis.XReadArgs{Streams: []string{"s", "$"}, Block: 300 * time.Millisecond}).Err(); err != goredis.Nil {
		t.Fatalf("XREAD BLOCK of nothing: %v", err)
	}
	if got, _ := c.Do(ctx, "SLOWLOG", "GET", "-1").Slice(); len(got) != 0 {
		t.Errorf("SLOWLOG holds the blocked commands' waits: %v", got)
	}
	for _, f := range []string{"cmdstat_blpop", "cmdstat_xread"} {
		v := infoField(t, c, "commandstats", f)
		_, rest, _ := strings.Cut(v, "usec=")
		usec, _ := strconv.Atoi(strings.Split(rest, ",")[0])
		if usec >= 100_000 {
			t.Errorf("%s:%s counts the wait", f, v)
		}
	}
}

// TestSlowlogRedactsSecrets: a password given by CONFIG SET is logged as "(redacted)", as Redis does; a client
// still logged in with the old password could read the new one from the log (the audit's case).
func TestSlowlogRedactsSecrets(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1, Protocol: 2})
	c.ConfigSet(ctx, "slowlog-log-slower-than", "0")
	if err := c.Do(ctx, "CONFIG", "SET", "maxclients", "100", "requirepass", "topsecret").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigSet(ctx, "requirepass", "").Err(); err != nil { // this connection stays logged in
		t.Fatal(err)
	}
	got, err := c.Do(ctx, "SLOWLOG", "GET", "-1").Slice()
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(got); strings.Contains(s, "topsecret") || !strings.Contains(s, "[CONFIG SET maxclients 100 requirepass (redacted)]") {
		t.Errorf("SLOWLOG GET: %s", s)
	}
}

// TestSlowlogRedactionForms: the redaction covers the other spellings and paths of CONFIG SET.
func TestSlowlogRedactionForms(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1, Protocol: 2})
	c.ConfigSet(ctx, "slowlog-log-slower-than", "0")
	raw := ts.raw(t)
	raw.expect("+PONG\r\n", "PING")
	secrets := []string{}
	for i, form := range [][]any{
		{"config", "set", "requirepass", "SECRET%d"},
		{"CONFIG", "Set", "REQUIREPASS", "SECRET%d"},
		{"CONFIG", "SET", "RequirePass", "SECRET%d", "maxclients", "100"},
		{"CONFIG", "SET", "maxclients", "100", "masterauth", "SECRET%d"},
		{"CONFIG", "SET", "requirepass", strings.Repeat("x", 200) + "SECRET%d"},
	} {
		args := append([]any(nil), form...)
		for j, a := range args {
			if s, ok := a.(string); ok && strings.Contains(s, "%d") {
				args[j] = fmt.Sprintf(s, i)
				secrets = append(secrets, fmt.Sprintf("SECRET%d", i))
			}
		}
		c.Do(ctx, args...) // this connection stays logged in whatever the password becomes
	}
	// Inside MULTI/EXEC, on a connection logged in before.
	raw.expect("+OK\r\n", "MULTI")
	raw.expect("+QUEUED\r\n", "CONFIG", "SET", "requirepass", "SECRETtx")
	raw.send(respCmd("EXEC"))
	t.Logf("EXEC: %q", raw.reply())
	secrets = append(secrets, "SECRETtx")
	got, err := c.Do(ctx, "SLOWLOG", "GET", "-1").Slice()
	if err != nil {
		t.Fatal(err)
	}
	s := fmt.Sprint(got)
	t.Logf("SLOWLOG: %s", s)
	for _, sec := range secrets {
		if strings.Contains(s, sec) {
			t.Errorf("SLOWLOG shows %s: %s", sec, s)
		}
	}
	if n := strings.Count(s, "(redacted)"); n < len(secrets) { // the entries are there, their secrets hidden
		t.Errorf("SLOWLOG has %d redacted values for %d secrets set: %s", n, len(secrets), s)
	}
	c.Do(ctx, "CONFIG", "SET", "requirepass", "")
}

// TestErrorMetrics: /metrics counts error replies by kind and unknown commands as the command "unknown".
func TestErrorMetrics(t *testing.T) {
	m := metrics.New(nil)
	ts := startServer(t, Options{Metrics: m}, 0)
	rc := ts.raw(t)
	rc.send("*1\r\n$6\r\nNOSUCH\r\n*2\r\n$4\r\nINCR\r\n$0\r\n\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*3\r\n$5\r\nLPUSH\r\n$1\r\nk\r\n$1\r\nv\r\n")
	for i := 0; i < 4; i++ {
		rc.reply()
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`anykv_error_replies_total{kind="ERR",protocol="resp"} 1`,
		`anykv_error_replies_total{kind="WRONGTYPE",protocol="resp"} 1`,
		`anykv_requests_total{command="unknown",protocol="resp"} 1`,
		`anykv_request_errors_total{command="unknown",protocol="resp"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestPipelinedRepliesAreCountedEach: replies answered together are recorded at once (metrics.ObserveN), each
// still one request: a pipeline of GETs around a failing one and a write counts every GET, its one error, and as
// many latencies.
func TestPipelinedRepliesAreCountedEach(t *testing.T) {
	m := metrics.New(nil)
	ts := startServer(t, Options{Metrics: m}, 0)
	rc := ts.raw(t)
	get := func(k string) string { return "*2\r\n$3\r\nGET\r\n$1\r\n" + k + "\r\n" }
	p := "*3\r\n$5\r\nLPUSH\r\n$1\r\nl\r\n$1\r\nv\r\n" + strings.Repeat(get("k"), 5) + get("l") + strings.Repeat(get("k"), 3) +
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n" + strings.Repeat(get("k"), 2)
	rc.send(p)
	for i := 0; i < 13; i++ {
		rc.reply()
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`anykv_requests_total{command="get",protocol="resp"} 11`,
		`anykv_request_errors_total{command="get",protocol="resp"} 1`,
		`anykv_request_duration_seconds_count{command="get",protocol="resp"} 11`,
		`anykv_requests_total{command="set",protocol="resp"} 1`,
		`anykv_request_duration_seconds_count{command="lpush",protocol="resp"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestClientSuitesFindings: what redis-py's own test suite found different from Redis 7 (a compatibility check):
// COMMAND GETKEYS of commands whose keys follow a count or STREAMS, COMMAND INFO's step, PUBSUB NUMSUB's array
// in RESP3, CONFIG RESETSTAT resetting INFO stats, and INFO's Cluster section.
func TestClientSuitesFindings(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	rc := dialRaw(t, ts.addr)
	for cmd, want := range map[string]string{
		`COMMAND GETKEYS EVAL "x" 3 key1 key2 key3 a b c`: "*3\r\n$4\r\nkey1\r\n$4\r\nkey2\r\n$4\r\nkey3\r\n",
		`COMMAND GETKEYS ZUNIONSTORE dst 2 k1 k2`:         "*3\r\n$3\r\ndst\r\n$2\r\nk1\r\n$2\r\nk2\r\n",
		`COMMAND GETKEYS SINTERCARD 2 a b LIMIT 1`:        "*2\r\n$1\r\na\r\n$1\r\nb\r\n",
		`COMMAND GETKEYS BLMPOP 0 2 a b LEFT`:             "*2\r\n$1\r\na\r\n$1\r\nb\r\n",
		`COMMAND GETKEYS XREAD COUNT 1 STREAMS s1 s2 0 0`: "*2\r\n$2\r\ns1\r\n$2\r\ns2\r\n",
		`COMMAND GETKEYS OBJECT ENCODING foo`:             "*1\r\n$3\r\nfoo\r\n",
		`COMMAND GETKEYS EVAL "x" 0 a b`:                  "*0\r\n", // no mandatory keys: none is an answer
		`COMMAND GETKEYS ZINTER 0 a`:                      "-ERR Invalid arguments specified for command\r\n",
		`COMMAND GETKEYS PUBLISH foo bar`:                 "-ERR The command has no key arguments\r\n",
		`COMMAND GETKEYS GET`:                             "-ERR Invalid number of arguments specified for command\r\n",
		// A count that is no positive number or runs past the arguments names no key, the fixed ones included.
		`COMMAND GETKEYS LMPOP 3 a LEFT`:                      "-ERR Invalid arguments specified for command\r\n",
		`COMMAND GETKEYS ZUNIONSTORE d 0 a`:                   "-ERR Invalid arguments specified for command\r\n",
		`COMMAND GETKEYS ZUNIONSTORE d x a`:                   "-ERR Invalid arguments specified for command\r\n",
		`COMMAND GETKEYS EVAL s 3 a`:                          "*0\r\n",
		`COMMAND GETKEYS ZUNIONSTORE d 9223372036854775807 a`: "-ERR Invalid arguments specified for command\r\n",
	} {
		rc.send(cmd + "\r\n")
		if got := rc.reply(); got != want {
			t.Errorf("%s: %q, want %q", cmd, got, want)
		}
	}
	for name, flag := range map[string]string{"publish": "+pubsub\r\n", "eval": "+no_mandatory_keys\r\n", "zinter": "+movablekeys\r\n",
		"auth": "+fast\r\n+no_auth\r\n", "pubsub": "pubsub\r\n:-2\r\n*0\r\n"} {
		rc.send("COMMAND INFO " + name + "\r\n")
		if got := rc.reply(); !strings.Contains(got, flag) {
			t.Errorf("COMMAND INFO %s: %q, want the flag %q", name, got, flag)
		}
	}
	// The key positions end with a step of 1, or 0 0 0 for a container (its subcommands' entries name the keys), as
	// Redis's; Redis's categories follow (commandinfo.json).
	for name, keys := range map[string]string{"zunionstore": ":1\r\n:1\r\n:1\r\n*3\r\n+@write", "bitop": ":2\r\n:-1\r\n:1\r\n*3\r\n+@write",
		"object": ":0\r\n:0\r\n:0\r\n*1\r\n+@slow", "memory": ":0\r\n:0\r\n:0\r\n*1\r\n+@slow"} {
		rc.send("COMMAND INFO " + name + "\r\n")
		if got := rc.reply(); !strings.Contains(got, keys) {
			t.Errorf("COMMAND INFO %s: %q, want the key positions and categories %q", name, got, keys)
		}
	}
	c := ts.client(t, &goredis.Options{Protocol: 3})
	if v, err := c.Do(ctx, "PUBSUB", "NUMSUB", "a", "b").Result(); err != nil || fmt.Sprint(v) != "[a 0 b 0]" {
		t.Errorf("PUBSUB NUMSUB in RESP3: %#v, %v; want an array", v, err)
	}
	c.Get(ctx, "missing")
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx, "stats", "cluster").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"total_commands_processed:1\r\n", "keyspace_misses:0\r\n", "total_connections_received:0\r\n",
		"# Cluster\r\ncluster_enabled:0\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO after CONFIG RESETSTAT lacks %q:\n%s", want, info)
		}
	}
	if info, _ := c.Info(ctx).Result(); !strings.Contains(info, "# CPU\r\n") {
		t.Errorf("INFO's CPU section is not titled as Redis's")
	}
}

// TestMovableKeyTooBigFailsAlone: a key over the limit among a count-led command's keys (ZINTER, ZUNIONSTORE's
// sources) fails that command alone, before it joins the batch, as every other command's does; it failed every
// command batched with it, and a MULTI around it whole (a compatibility check).
func TestMovableKeyTooBigFailsAlone(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	big := strings.Repeat("k", 2000) // over the test server's 1024
	for _, cmd := range [][]any{{"ZINTER", "1", big}, {"ZUNIONSTORE", "dst", "2", "a", big}, {"SINTERCARD", "1", big}} {
		pipe := c.Pipeline()
		bad := pipe.Do(ctx, cmd...)
		sets := make([]*goredis.StatusCmd, 3)
		for i := range sets {
			sets[i] = pipe.Set(ctx, fmt.Sprint("k", i), i, 0)
		}
		pipe.Exec(ctx)
		if err := bad.Err(); err == nil || !strings.Contains(err.Error(), "key exceeds maximum allowed size") {
			t.Errorf("%s with a key over the limit: %v", cmd[0], err)
		}
		for i, s := range sets {
			if s.Err() != nil {
				t.Errorf("%s: the SET %d batched with it failed: %v", cmd[0], i, s.Err())
			}
		}
	}
}

// TestGetKeysAndFlagsMatchesRedis: COMMAND GETKEYSANDFLAGS names the keys of calls of every kind (fixed
// positions, key counts, STREAMS, keywords, subcommands, the commands whose flags depend on their arguments) with
// the flags redis-server 7.0 gives each, in RESP2 and RESP3.
func TestGetKeysAndFlagsMatchesRedis(t *testing.T) {
	calls := [][]string{{"set", "k", "v", "get"}, {"set", "k", "v"}, {"bitfield", "k", "get", "u8", "0"},
		{"bitfield", "k", "set", "u8", "0", "1"}, {"sort", "k", "by", "x", "store", "d"}, {"sort", "k"}, {"sort_ro", "k"},
		{"migrate", "h", "1", "k", "0", "10"}, {"migrate", "h", "1", "", "0", "10", "keys", "a", "b"},
		{"eval", "x", "2", "a", "b", "c"}, {"eval", "x", "0"}, {"fcall", "f", "1", "k"},
		{"xread", "count", "1", "streams", "a", "b", "0", "0"}, {"xreadgroup", "group", "g", "c", "streams", "s", ">"},
		{"zunionstore", "d", "2", "a", "b"}, {"lmove", "a", "b", "left", "left"}, {"lmove", "a", "a", "left", "left"},
		{"georadius", "k", "1", "1", "1", "m", "store", "d"}, {"georadiusbymember", "k", "m", "1", "m", "storedist", "d"},
		{"rename", "a", "b"}, {"mset", "a", "1", "b", "2"}, {"del", "a", "b"}, {"object", "encoding", "k"},
		{"xgroup", "create", "s", "g", "$"}, {"memory", "usage", "k"}, {"pfmerge", "d", "a", "b"}, {"pfcount", "a", "b"},
		{"lpos", "k", "x"}, {"spublish", "ch", "m"}, {"lmpop", "2", "a", "b", "left"}, {"zadd", "k", "1", "m"},
		{"blpop", "a", "b", "0"}, {"getex", "k"}, {"copy", "a", "b"}, {"smove", "a", "b", "m"}, {"xadd", "s", "*", "f", "v"},
		{"ping", "x"}, {"nosuch", "x"}, {"get", "a", "b"}}
	run := func(addr string) string {
		c := dialRaw(t, addr)
		var b strings.Builder
		for _, proto := range []string{"2", "3"} {
			c.send(respCmd("HELLO", proto))
			c.reply()
			for _, call := range calls {
				c.send(respCmd(append([]string{"COMMAND", "GETKEYSANDFLAGS"}, call...)...))
				b.WriteString(proto + " " + strings.Join(call, " ") + " -> " + c.reply())
			}
		}
		return b.String()
	}
	got, want := run(startServer(t, Options{}, 0).addr), run(startRedisServer(t))
	if got != want {
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Errorf("anykv %q\nredis-server %q", gl[i], wl[i])
			}
		}
	}
	if !strings.Contains(got, "RW") {
		t.Fatalf("no flags at all: %q", got)
	}
}

// infoFields parses an INFO reply into its field names, in order, and their values.
func infoFields(out string) ([]string, map[string]string) {
	var names []string
	vals := map[string]string{}
	for _, l := range strings.Split(out, "\r\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, "#") {
			names = append(names, k)
			vals[k] = v
		}
	}
	return names, vals
}

// TestInfoMemoryMatchesRedis: INFO memory has the fields dashboards read (asynq's Inspector.RedisInfo, and so
// asynqmon, wants used_memory_peak_perc), each also in redis-server 7.0's section, in its order and written as it
// writes them (a size with B/K/M/G, a percentage with two decimals and %, a ratio with two decimals).
func TestInfoMemoryMatchesRedis(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	out, err := c.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	names, vals := infoFields(out)
	for _, f := range []string{"used_memory", "used_memory_human", "used_memory_rss", "used_memory_rss_human",
		"used_memory_peak", "used_memory_peak_human", "used_memory_peak_perc", "maxmemory", "maxmemory_human",
		"maxmemory_policy", "mem_fragmentation_ratio"} {
		if _, ok := vals[f]; !ok {
			t.Errorf("INFO memory lacks %s:\n%s", f, out)
		}
	}
	shape := map[string]*regexp.Regexp{
		"_human": regexp.MustCompile(`^\d+(\.\d\d[KMG]|B)$`), "_perc": regexp.MustCompile(`^\d+\.\d\d%$`),
		"_ratio": regexp.MustCompile(`^\d+\.\d\d$`)}
	for _, n := range names {
		for suffix, re := range shape {
			if strings.HasSuffix(n, suffix) && !re.MatchString(vals[n]) {
				t.Errorf("%s:%s is not written as Redis writes it", n, vals[n])
			}
		}
	}
	if p := vals["used_memory_peak_perc"]; p == "0.00%" {
		t.Errorf("used_memory_peak_perc %s", p)
	}
	addr := startRedisServerIfAny(t)
	if addr == "" {
		return
	}
	r := goredis.NewClient(&goredis.Options{Addr: addr})
	defer r.Close()
	var rout string
	// redis-server fills its memory figures in its cron (every 100 ms): until then the ratio is -nan.
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if rout, err = r.Info(ctx, "memory").Result(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(rout, "nan") || time.Now().After(deadline) {
			break
		}
	}
	rnames, rvals := infoFields(rout)
	pos := map[string]int{}
	for i, n := range rnames {
		pos[n] = i
	}
	last := -1
	for _, n := range names {
		i, ok := pos[n]
		if !ok {
			t.Errorf("%s is not a field of redis-server's INFO memory", n)
			continue
		}
		if i < last {
			t.Errorf("%s comes out of redis-server's order", n)
		}
		last = i
		for suffix, re := range shape {
			if strings.HasSuffix(n, suffix) && !re.MatchString(rvals[n]) {
				t.Errorf("redis-server's %s:%s does not have the shape checked here", n, rvals[n])
			}
		}
	}
}
