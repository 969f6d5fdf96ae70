package redis

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/engine"
)

// notifyScript is one command per line; the events it causes under "KEAn" are notifyWant, as redis-server 7
// sends them (TestKeyspaceEventsMatchRedis compares with a real one when redis-server is installed).
const notifyScript = `SET k1 v
SET k1 v2 EX 100
SETNX k1 x
APPEND k1 x
SETRANGE k1 0 ab
SETRANGE k1 0 ""
INCR n
INCRBY n 5
INCRBYFLOAT n 1.5
MSET a 1 b 2
GETDEL a
GETDEL a
EXPIRE b 100
PERSIST b
EXPIRE b -1
RENAME k1 k2
SET n 1
RENAME n k2
COPY k2 k3
DEL k2 k3 nosuch
LPUSH l a b c
RPUSH l d
LPUSHX nolist a
LPOP l
RPOP l
LINSERT l BEFORE a x
LSET l 0 y
LREM l 0 y
LTRIM l 0 0
RPOP l
RPUSH src 1 2
LMOVE src dst LEFT RIGHT
RPOPLPUSH src dst
HSET h f 1 g 2
HSETNX h f 3
HINCRBY h f 2
HINCRBYFLOAT h f 0.5
HDEL h f
HDEL h g
SADD s a b
SADD s a
SREM s a
SMOVE s s2 b
SADD mv1 a b
SADD mv2 a
SMOVE mv1 mv2 a
SMOVE mv2 mv2 a
SADD s3 x
SPOP s3
SINTERSTORE s4 s2 nosuch
SUNIONSTORE s5 s2
SINTERSTORE s5 s2 nosuch
ZADD z 1 a 2 b
ZADD z 1 a
ZADD z 3 a
ZADD z INCR 1 a
ZINCRBY z 1 a
ZINCRBY z 0 a
ZADD z INCR 0 a
ZREM z a
ZADD z 5 c
ZREMRANGEBYSCORE z 5 5
ZPOPMIN z
XADD x 1-1 f v
XADD x MAXLEN 1 2-1 f v
XDEL x 2-1
SETEX se 100 v
GETEX se PERSIST
GETEX se EX 50
SETBIT bits 3 1
ZADD zz 1 a 2 b 3 c 4 d 5 e
ZREMRANGEBYRANK zz 0 0
ZREMRANGEBYLEX zz [b [b
ZPOPMAX zz
ZUNIONSTORE zu 1 zz
ZINTERSTORE zu 2 zz nosuch
ZRANGESTORE zr zz 0 -1
ZDIFFSTORE zd 1 zz
XTRIM x MAXLEN 0
HMSET hm a 1
UNLINK hm
RENAMENX zr zd
RENAMENX zr zn
BITOP OR bo bits
BITOP AND bo nosuch
BITFIELD bf SET u8 0 1
MSETNX m1 1 m2 2
MSETNX m1 1 m3 3
EXPIRE nosuch 10
SET px v PX 100000000
SET px w KEEPTTL
SET px w NX GET
SET px y XX GET
GETSET gs 1
PSETEX ps 100000 v
MULTI
SET t1 a
LPUSH t2 b
INCR t3
EXEC
RPUSH bl a b
BLPOP bl 0
BRPOP bl 0
RPUSH bm a
BLMOVE bm bm2 LEFT RIGHT 0
BRPOPLPUSH bm2 bm 0
ZADD bz 1 a
BZPOPMIN bz 0
GEOADD g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania
GEOADD g 13.361389 38.115556 Palermo
GEORADIUS g 15 37 200 km STORE gr
GEORADIUS g 15 37 200 km
GEORADIUSBYMEMBER g Palermo 1 m STOREDIST gr
GEOSEARCHSTORE gs g FROMLONLAT 15 37 BYRADIUS 200 km
GEOSEARCHSTORE gs g FROMLONLAT 0 0 BYRADIUS 1 m
GEORADIUS nosuch 0 0 1 m STORE gr
RPUSH so 3 1 2
SORT so STORE sd
SORT so LIMIT 5 5 STORE sd
SORT nosuch STORE sd
SORT so
SORT so DESC STORE so
FLUSHDB`

var notifyWant = strings.Split(`new k1|set k1|set k1|expire k1|append k1|setrange k1|new n|incrby n|incrby n|incrbyfloat n|`+
	`new a|set a|new b|set b|del a|expire b|persist b|del b|new k2|rename_from k1|rename_to k2|set n|`+
	`new k2|rename_from n|rename_to k2|new k3|copy_to k3|del k2|del k3|new l|lpush l|rpush l|lpop l|rpop l|`+
	`linsert l|lset l|lrem l|ltrim l|rpop l|del l|new src|rpush src|new dst|rpush dst|lpop src|lpush dst|rpop src|`+
	`del src|new h|hset h|hincrby h|hincrbyfloat h|hdel h|hdel h|del h|new s|sadd s|srem s|srem s|del s|new s2|`+
	`sadd s2|new mv1|sadd mv1|new mv2|sadd mv2|srem mv1|new s3|sadd s3|spop s3|del s3|new s5|sunionstore s5|del s5|new z|zadd z|zadd z|zincr z|zincr z|zrem z|`+
	`zadd z|zremrangebyscore z|zpopmin z|del z|new x|xadd x|xadd x|xtrim x|xdel x|new se|set se|expire se|persist se|`+
	`expire se|new bits|setbit bits|new zz|zadd zz|zremrangebyrank zz|zremrangebylex zz|zpopmax zz|new zu|`+
	`zunionstore zu|del zu|new zr|zrangestore zr|new zd|zdiffstore zd|new hm|hset hm|del hm|new zn|`+
	`rename_from zr|rename_to zn|new bo|set bo|del bo|new bf|setbit bf|new m1|set m1|new m2|set m2|new px|set px|`+
	`expire px|set px|set px|new gs|set gs|new ps|set ps|expire ps|new t1|set t1|new t2|lpush t2|new t3|incrby t3|new bl|rpush bl|lpop bl|rpop bl|del bl|new bm|rpush bm|`+
	`new bm2|rpush bm2|lpop bm|del bm|new bm|lpush bm|rpop bm2|del bm2|new bz|zadd bz|zpopmin bz|del bz|`+
	`new g|zadd g|new gr|georadiusstore gr|georadiusstore gr|geosearchstore gs|del gs|del gr|new so|rpush so|new sd|`+
	`sortstore sd|del sd|sortstore so`, "|")

// runNotifyScript subscribes to every keyspace and keyevent channel of addr, runs the script and returns the
// events in arrival order as "event key", checking that each keyspace message has its keyevent twin.
func runNotifyScript(t *testing.T, addr string) []string {
	t.Helper()
	return runNotifyScriptAs(t, addr, func(args []any) []any { return args })
}

// inScript runs a command of notifyScript as the one command of a Lua script; those a script may not run
// (MULTI, EXEC, FLUSHDB here, blocking commands in Redis too) are sent as they are.
func inScript(args []any) []any {
	switch name := strings.ToUpper(args[0].(string)); {
	case name == "MULTI", name == "EXEC", name == "FLUSHDB", name[0] == 'B' && name != "BITOP" && name != "BITFIELD":
		return args
	}
	return append([]any{"EVAL", "return redis.call(unpack(ARGV))", 0}, args...)
}

// runNotifyScriptAs is runNotifyScript sending each command as wrap makes it.
func runNotifyScriptAs(t *testing.T, addr string, wrap func([]any) []any) []string {
	t.Helper()
	return runNotifyLines(t, addr, notifyScript, wrap)
}

// runNotifyLines is runNotifyScriptAs for the commands of script: the keyevent messages of database 0, as
// "event key", checking that each came with its keyspace message.
func runNotifyLines(t *testing.T, addr, script string, wrap func([]any) []any) []string {
	t.Helper()
	var got []string
	space := 0
	eventsOf(t, addr, 2, "__key*@0__:*", script, wrap, func(m *goredis.Message) {
		switch {
		case strings.HasPrefix(m.Channel, "__keyspace@0__:"):
			space++
		case strings.HasPrefix(m.Channel, "__keyevent@0__:"):
			got = append(got, strings.TrimPrefix(m.Channel, "__keyevent@0__:")+" "+m.Payload)
		}
	})
	if space != len(got) {
		t.Errorf("%d keyspace messages for %d keyevent messages", space, len(got))
	}
	return got
}

// eventsOf runs script's commands (one a line, `""` an empty argument, each through wrap unless it is nil) on one
// connection speaking RESP proto, under "KEAn", and hands each message of pattern they caused to each, in
// arrival order.
func eventsOf(t *testing.T, addr string, proto int, pattern, script string, wrap func([]any) []any, each func(*goredis.Message)) {
	t.Helper()
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: addr, Protocol: proto, PoolSize: 1}) // one connection: MULTI
	defer c.Close()
	if err := c.Do(ctx, "CONFIG", "SET", "notify-keyspace-events", "KEAn").Err(); err != nil {
		t.Fatal(err)
	}
	defer c.Do(ctx, "CONFIG", "SET", "notify-keyspace-events", "")
	ps := c.PSubscribe(ctx, pattern)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ps.Subscribe(ctx, "script-end"); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(script, "\n") {
		var args []any
		for _, a := range strings.Fields(line) {
			if a == `""` {
				a = ""
			}
			args = append(args, a)
		}
		if wrap != nil {
			args = wrap(args)
		}
		if err := c.Do(ctx, args...).Err(); err != nil && err != goredis.Nil {
			t.Fatalf("%s: %v", line, err)
		}
	}
	c.Publish(ctx, "script-end", "") // after every event of the script: one connection's messages keep their order
	for {
		m, err := ps.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Channel == "script-end" {
			return
		}
		each(m)
	}
}

func compareEvents(t *testing.T, got, want []string) {
	t.Helper()
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Fatalf("event %d: got %q, want %q\ngot  %q\nwant %q", i, g, w, got, want)
		}
	}
}

// TestKeyspaceEvents: the script's events, names, keys and order, are Redis 7's.
func TestKeyspaceEvents(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	compareEvents(t, runNotifyScript(t, ts.addr), notifyWant)
}

// TestScriptKeyspaceEvents: each command of the script run by a Lua script sends the events it sends on its own,
// as in Redis (TestScriptKeyspaceEventsMatchRedis); scripts sent none.
func TestScriptKeyspaceEvents(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	compareEvents(t, runNotifyScriptAs(t, ts.addr, inScript), notifyWant)
}

func TestScriptKeyspaceEventsMatchRedis(t *testing.T) {
	addr := startRedisServer(t)
	compareEvents(t, runNotifyScriptAs(t, addr, inScript), notifyWant)
}

// TestKeyspaceEventsMatchRedis runs the script against a real redis-server, when one is installed, so the
// expectations above stay Redis's own.
func TestKeyspaceEventsMatchRedis(t *testing.T) {
	addr := startRedisServer(t)
	compareEvents(t, runNotifyScript(t, addr), notifyWant)
}

// startRedisServer runs redis-server on a free port without persistence and returns its address once it
// accepts connections; the test is skipped when redis-server is not installed.
func startRedisServer(t *testing.T) string {
	t.Helper()
	addr := startRedisServerIfAny(t)
	if addr == "" {
		t.Skip("redis-server not installed")
	}
	return addr
}

// startRedisServerIfAny is startRedisServer, answering "" when redis-server is not installed.
func startRedisServerIfAny(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return ""
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir())
	cmd.Env = append(os.Environ(), "LC_ALL=C") // SORT ALPHA collates with strcoll: in the C locale, bytes, as anykv
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Ready to accept connections") {
				ready <- true
				break
			}
		}
		for sc.Scan() { // keep draining so the server never blocks on its log
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("redis-server exited before it was ready")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("redis-server not ready after 10s")
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}

// notifyConfigScript sets notify-keyspace-events to each value and reads it back; the replies are Redis 7's.
var notifyConfigValues = []string{"KEA", "Elg", "gKE$", "AKEn", "xKEm", "E", "lshzxetdn", "", "Q", "KEAQ"}

func configReplies(t *testing.T, addr string) []string {
	t.Helper()
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: addr, Protocol: 2})
	defer c.Close()
	var out []string
	for _, v := range notifyConfigValues {
		err := c.Do(ctx, "CONFIG", "SET", "notify-keyspace-events", v).Err()
		got, gerr := c.Do(ctx, "CONFIG", "GET", "notify-keyspace-events").StringSlice()
		if gerr != nil {
			t.Fatal(gerr)
		}
		out = append(out, v+" -> "+strings.Join(got, "=")+" "+errString(err))
	}
	return out
}

func errString(err error) string {
	if err == nil {
		return "OK"
	}
	return err.Error()
}

var notifyConfigWant = []string{
	"KEA -> notify-keyspace-events=AKE OK",
	"Elg -> notify-keyspace-events=glE OK",
	"gKE$ -> notify-keyspace-events=g$KE OK",
	"AKEn -> notify-keyspace-events=AKE OK", // Redis 7 drops n after A in what it prints,
	"xKEm -> notify-keyspace-events=xKEm OK",
	"E -> notify-keyspace-events=E OK",
	"lshzxetdn -> notify-keyspace-events=lshzxetdn OK",
	" -> notify-keyspace-events= OK",
	"Q -> notify-keyspace-events= ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'.",
	"KEAQ -> notify-keyspace-events= ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'.",
}

// TestNotifyConfig: CONFIG SET notify-keyspace-events takes Redis's letters and CONFIG GET prints them as Redis
// does; a bad letter is refused with Redis's text and changes nothing.
func TestNotifyConfig(t *testing.T) { matchRedis(t, configReplies, notifyConfigWant) }

// TestExpiredEvent: the sweeper's removal of an expired key sends "expired" on the key's database, and the
// keyspace channel carries the event name.
func TestExpiredEvent(t *testing.T) {
	ts := startServer(t, Options{NotifyKeyspaceEvents: "KEx"}, 0)
	c := ts.client(t, &goredis.Options{Protocol: 2, PoolSize: 1, DB: 1})
	ps := c.PSubscribe(ctx, "__key*@1__:*")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "short", "v", 10*time.Millisecond).Err(); err != nil { // "set" and "expire": not in KEx
		t.Fatal(err)
	}
	ts.advance(20 * time.Millisecond)
	if err := ts.store.SweepOnce(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 2 {
		m, err := ps.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Channel+" "+m.Payload)
	}
	if want := "[__keyspace@1__:short expired __keyevent@1__:expired short]"; strings.Join(got, " ") != want[1:len(want)-1] {
		t.Fatalf("got %q, want %s", got, want)
	}
}

// TestScriptEventsInTransactionAndFailure: a script queued in MULTI sends its commands' events, in order among
// the transaction's; one that fails after a write sends the write's events (the write stays, as in Redis).
func TestScriptEventsInTransactionAndFailure(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	if err := c.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err(); err != nil {
		t.Fatal(err)
	}
	ps := ts.client(t, nil).PSubscribe(ctx, "__keyevent@0__:*")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Set(ctx, "a", "1", 0)
		p.Eval(ctx, "redis.call('rpush', KEYS[1], 'x'); return redis.call('hset', 'h', 'f', 'v')", []string{"l"})
		p.Incr(ctx, "a")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Eval(ctx, "redis.call('sadd', 's', 'm'); return redis.call('incr', 's')", nil).Err(); err == nil {
		t.Fatal("INCR of a set in a script did not fail")
	}
	want := []string{"set a", "rpush l", "hset h", "incrby a", "sadd s"}
	var got []string
	for len(got) < len(want) {
		m, err := ps.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.TrimPrefix(m.Channel, "__keyevent@0__:")+" "+m.Payload)
	}
	compareEvents(t, got, want)
}

// TestEventsDoNotReadValues: the key reads that tell a command's events ("new", an emptied key's "del") read no
// value. They did, so a script over a few big keys, one batch, passed engine.MaxBatchRead and failed whole only
// while events were on (a review).
func TestEventsDoNotReadValues(t *testing.T) {
	defer func(old int) { engine.MaxBatchRead = old }(engine.MaxBatchRead)
	engine.MaxBatchRead = 1 << 20
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	v := strings.Repeat("x", 300<<10)
	keys := []string{"k1", "k2", "k3", "k4"}
	for _, k := range keys {
		c.Set(ctx, k, v, 0)
	}
	script := "for i = 1, 4 do redis.call('SET', KEYS[i], ARGV[1]) end return 1"
	if err := c.Eval(ctx, script, keys, v).Err(); err != nil {
		t.Fatalf("events off: %v", err)
	}
	if err := c.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Eval(ctx, script, keys, v).Err(); err != nil {
		t.Fatalf("events on: %v", err)
	}
}
