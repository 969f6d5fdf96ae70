package redis

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/rdb"
)

// respCmd encodes a command as a RESP array of bulk strings.
func respCmd(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// do sends one command and returns its raw reply.
func (rc *rawConn) do(args ...string) string {
	rc.t.Helper()
	rc.send(respCmd(args...))
	return rc.reply()
}

// dumpFixture is what both servers are given before the round trips: every type, with big, binary and empty
// values, integers of every width and infinite scores. Each line is one command.
func dumpFixture() [][]string {
	bin := make([]byte, 200000)
	for i := range bin {
		bin[i] = byte(i * 7)
	}
	big := strings.Repeat("x", 70000)
	cmds := [][]string{
		{"SET", "s", "hello"}, {"SET", "e", ""}, {"SET", "i8", "-12"}, {"SET", "i32", "2147483647"},
		{"SET", "i64", "-9223372036854775808"}, {"SET", "z07", "007"}, {"SET", "bin", string(bin)},
		{"SET", "lzf", strings.Repeat("abc", 1000)},
		{"HSET", "h", "a", "1", "b", "-70000", "c", "", "", "empty field", "big", big, "n", "9223372036854775807"},
		{"RPUSH", "l", "a", "1", "-1", "127", "-4096", "4095", "32767", "8388607", "2147483647", "", big, "12", "0"},
		{"SADD", "si", "1", "2", "-3", "100000", "-9223372036854775808"},
		{"SADD", "ss", "a", "", "b", string(bin[1:301])},
		{"ZADD", "z", "1", "a", "-1.5", "b", "inf", "c", "-inf", "d", "0", "e", "1e20", "f", "2.5", ""},
		{"PFADD", "hll", "a", "b", "c"},
		{"GEOADD", "geo", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"},
	}
	lbig, hbig, sbig, zbig := []string{"RPUSH", "lbig"}, []string{"HSET", "hbig"}, []string{"SADD", "sbig"}, []string{"ZADD", "zbig"}
	for i := range 2000 {
		n := strconv.Itoa(i)
		lbig = append(lbig, strings.Repeat(n, 9))
		hbig = append(hbig, "f"+n, strings.Repeat("v", i%200))
		sbig = append(sbig, "m"+n)
		zbig = append(zbig, strconv.Itoa(i-1000), "m"+n)
	}
	return append(cmds, lbig, hbig, sbig, zbig)
}

// readBack is what a key's value reads as, in replies that do not depend on the encoding's order (hashes and
// sets sorted by field), raw.
func readBack(rc *rawConn, key, kind string) string {
	switch kind {
	case "string":
		return rc.do("GET", key)
	case "list":
		return rc.do("LRANGE", key, "0", "-1")
	case "zset":
		return rc.do("ZRANGE", key, "0", "-1", "WITHSCORES")
	case "set":
		return rc.do("SORT", key, "ALPHA")
	case "hash":
		fields := strings.Split(rc.do("HKEYS", key), "\r\n")
		var names []string
		for i := 2; i < len(fields); i += 2 {
			names = append(names, fields[i])
		}
		slices.Sort(names)
		return rc.do(append([]string{"HMGET", key}, names...)...) + rc.do("HLEN", key)
	}
	return "?" + kind
}

// TestDumpRestoreRoundTripsRedis: a value DUMPed by redis-server RESTOREs into anykv, and one DUMPed by anykv
// RESTOREs into redis-server, every type, reading back byte for byte what the original reads.
func TestDumpRestoreRoundTripsRedis(t *testing.T) {
	rs := dialRaw(t, startRedisServer(t))
	ak := startServer(t, Options{}, 0).raw(t)
	for _, c := range dumpFixture() {
		if a, b := rs.do(c...), ak.do(c...); a != b {
			t.Fatalf("%s: redis %q, anykv %q", c[0], a, b)
		}
	}
	for _, c := range dumpFixture() {
		key := c[1]
		kind := strings.TrimPrefix(strings.TrimSpace(rs.do("TYPE", key)), "+")
		want := readBack(rs, key, kind)
		fromRedis := rs.do("DUMP", key)
		fromAnykv := ak.do("DUMP", key)
		if !strings.HasPrefix(fromAnykv, "$") || strings.HasPrefix(fromAnykv, "$-1") {
			t.Fatalf("DUMP %s: %.100q", key, fromAnykv)
		}
		pr, pa := bulkValue(fromRedis), bulkValue(fromAnykv)
		for _, step := range []struct {
			name string
			to   *rawConn
			p    string
		}{{"redis → anykv", ak, pr}, {"anykv → redis", rs, pa}, {"anykv → anykv", ak, pa}} {
			if r := step.to.do("RESTORE", key+":copy", "0", step.p, "REPLACE"); r != "+OK\r\n" {
				t.Errorf("%s: RESTORE %s: %q", step.name, key, r)
				continue
			}
			if got := readBack(step.to, key+":copy", kind); got != want {
				t.Errorf("%s: %s reads back %.300q, want %.300q", step.name, key, got, want)
			}
			if tp := step.to.do("TYPE", key+":copy"); tp != "+"+kind+"\r\n" {
				t.Errorf("%s: %s restored as %q", step.name, key, tp)
			}
		}
		if kind == "string" && pa != pr && len(pr) < 40 {
			t.Errorf("DUMP %s: anykv %x, redis %x", key, pa, pr) // short strings are written as Redis writes them
		}
	}
	// Scores that Redis 7.0 and anykv print differently compare as numbers.
	for _, rc := range []*rawConn{rs, ak} {
		rc.do("ZADD", "zf", "0.1", "a", "-1e-300", "b", "5e-324", "c", "1.7976931348623157e308", "d")
	}
	want := bulkValue(rs.do("DUMP", "zf"))
	ak.do("RESTORE", "zf2", "0", want)
	rs.do("RESTORE", "zf3", "0", bulkValue(ak.do("DUMP", "zf2")))
	for _, m := range []string{"a", "b", "c", "d"} {
		a, b := parseBulkFloat(t, rs.do("ZSCORE", "zf", m)), parseBulkFloat(t, ak.do("ZSCORE", "zf2", m))
		c := parseBulkFloat(t, rs.do("ZSCORE", "zf3", m))
		if a != b || a != c {
			t.Errorf("score of %s: redis %v, restored into anykv %v, back into redis %v", m, a, b, c)
		}
	}
}

// bulkValue is the value of a raw bulk string reply.
func bulkValue(r string) string {
	_, v, _ := strings.Cut(r, "\r\n")
	return strings.TrimSuffix(v, "\r\n")
}

func parseBulkFloat(t *testing.T, r string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(bulkValue(r), 64)
	if err != nil {
		t.Fatalf("%q: %v", r, err)
	}
	return f
}

// withFooter makes body a payload with a right checksum (and version v).
func withFooter(body string, v uint16) string {
	b := binary.LittleEndian.AppendUint16([]byte(body), v)
	return string(binary.LittleEndian.AppendUint64(b, rdb.CRC64(0, b)))
}

// TestRestoreMatchesRedis: RESTORE's and DUMP's replies, errors and their order, options, TTLs, transactions and
// scripts, byte for byte as redis-server's.
func TestRestoreMatchesRedis(t *testing.T) {
	rs := dialRaw(t, startRedisServer(t))
	ak := startServer(t, Options{}, 0).raw(t)
	good := withFooter("\x00\x05hello", 10)
	flipped := good[:len(good)-1] + string(good[len(good)-1]^1)
	script := [][]string{
		{"SET", "s", "v"},
		{"DUMP", "nosuch"},
		{"DUMP", "s"},
		{"RESTORE", "s", "0", good},
		{"RESTORE", "s", "-1", good},
		{"RESTORE", "s", "x", "junk"},
		{"RESTORE", "n", "-1", good},
		{"RESTORE", "n", "abc", good},
		{"RESTORE", "n", "0", good, "IDLETIME", "-1"},
		{"RESTORE", "n", "0", good, "IDLETIME", "x"},
		{"RESTORE", "n", "0", good, "FREQ", "256"},
		{"RESTORE", "n", "0", good, "FREQ", "-1"},
		{"RESTORE", "n", "0", good, "IDLETIME", "10", "FREQ", "5"},
		{"RESTORE", "n", "0", good, "FOO"},
		{"RESTORE", "n", "0", good, "IDLETIME"},
		{"RESTORE", "n", "0", "junk"},
		{"RESTORE", "n", "0", ""},
		{"RESTORE", "n", "0", flipped},
		{"RESTORE", "n", "0", withFooter("\x00\x05hello", 11)},
		{"RESTORE", "n", "0", withFooter("\x00\x05hel", 10)},
		{"RESTORE", "n", "0", withFooter("\x00\x81\x7f\xff\xff\xff\xff\xff\xff\xff", 10)},
		{"RESTORE", "n", "0", withFooter("\x02\x00", 10)},
		{"RESTORE", "n", "0", withFooter("\x02\x02\x01a\x01a", 10)},
		{"RESTORE", "n", "0", withFooter("\x07\x00", 10)},
		{"RESTORE", "n", "0", withFooter("\x2a\x00", 10)},
		{"RESTORE", "n", "0", withFooter("\x00\xc3\x02\x05\x20\x00", 10)},
		{"EXISTS", "n"},
		{"RESTORE", "n", "0", withFooter("\x00\x05hello", 9)},
		{"GET", "n"},
		{"RESTORE", "n", "0", good, "REPLACE", "IDLETIME", "100"},
		{"RESTORE", "n", "0", good, "REPLACE", "FREQ", "100"},
		{"RESTORE", "p", "1", good, "ABSTTL"},
		{"EXISTS", "p"},
		{"RESTORE", "s", "1", good, "REPLACE", "ABSTTL"},
		{"EXISTS", "s"},
		{"RESTORE", "a", "4102444800000", good, "ABSTTL"},
		{"EXPIRETIME", "a"},
		{"RESTORE", "r", "100000", good},
		{"TTL", "r"},
		{"RESTORE", "r", "0", good, "replace", "absttl"},
		{"TTL", "r"},
		{"RPUSH", "l", "a", "b"},
		{"RESTORE", "l", "0", good, "REPLACE"},
		{"TYPE", "l"},
		{"MULTI"},
		{"RESTORE", "m", "0", good},
		{"DUMP", "m"},
		{"RESTORE", "m", "0", good},
		{"EXEC"},
		{"EVAL", "return redis.call('restore', KEYS[1], 0, ARGV[1])", "1", "lua", good},
		{"EVAL", "return redis.call('dump', KEYS[1])", "1", "lua"},
		{"EVAL", "return redis.pcall('restore', KEYS[1], 0, ARGV[1])", "1", "lua", good},
		{"RESTORE", "n"},
		{"DUMP"},
	}
	for _, c := range script {
		want, got := rs.do(c...), ak.do(c...)
		if c[0] == "EVAL" { // a script's error ends with where it failed, as in Redis
			want, _, _ = strings.Cut(want, " script:")
			got, _, _ = strings.Cut(got, " script:")
		}
		if want != got {
			t.Errorf("%.80q: anykv %.200q, redis %.200q", c, got, want)
		}
	}
	// WATCH sees a RESTORE of its key, as in Redis.
	for name, rc := range map[string]*rawConn{"redis": rs, "anykv": ak} {
		other := dialRaw(t, rc.c.RemoteAddr().String())
		rc.do("WATCH", "w")
		other.do("RESTORE", "w", "0", good)
		rc.do("MULTI")
		rc.do("SET", "x", "1")
		if r := rc.do("EXEC"); r != "*-1\r\n" {
			t.Errorf("%s: EXEC after a RESTORE of the watched key: %q", name, r)
		}
	}
}

// TestRestoreEventsMatchRedis: the keyspace events of RESTORE as redis-server sends them.
func TestRestoreEventsMatchRedis(t *testing.T) {
	good := withFooter("\x00\x05hello", 10)
	run := func(addr string) []string {
		ctx := context.Background()
		c := goredis.NewClient(&goredis.Options{Addr: addr, Protocol: 2, PoolSize: 1})
		defer c.Close()
		if err := c.Do(ctx, "CONFIG", "SET", "notify-keyspace-events", "KEA").Err(); err != nil {
			t.Fatal(err)
		}
		c.Do(ctx, "CONFIG", "SET", "notify-keyspace-events", "KEAn") // Redis 7's "new" events (7.0 has them as n)
		ps := c.PSubscribe(ctx, "__keyevent@0__:*", "end")
		defer ps.Close()
		for range 2 {
			if _, err := ps.Receive(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for _, cmd := range [][]any{
			{"SET", "a", "1"},
			{"RESTORE", "r", 0, good},
			{"RESTORE", "r", 0, good},
			{"RESTORE", "r", 0, good, "REPLACE"},
			{"RESTORE", "r", 1, good, "REPLACE", "ABSTTL"},
			{"RESTORE", "q", 1, good, "ABSTTL"},
			{"RESTORE", "x", -1, good},
			{"RESTORE", "t", 100000, good},
		} {
			c.Do(ctx, cmd...)
		}
		c.Publish(ctx, "end", "")
		var got []string
		for {
			m, err := ps.ReceiveMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if m.Channel == "end" {
				return got
			}
			got = append(got, strings.TrimPrefix(m.Channel, "__keyevent@0__:")+" "+m.Payload)
		}
	}
	want := run(startRedisServer(t))
	got := run(startServer(t, Options{}, 0).addr)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events\n anykv %q\n redis %q", got, want)
	}
}

// TestRestoreHostilePayloads: payloads that lie about their lengths, or decode past the server's limits, are
// refused with an error, write nothing, and leave the connection usable.
func TestRestoreHostilePayloads(t *testing.T) {
	ts := startServer(t, Options{}, 0) // values up to 1 MiB
	rc := ts.raw(t)
	lzf2MiB := withFooter("\x00\xc3\x80\x00\x00\x80\x00\x80\x00\x20\x00\x00"+strings.Repeat("\x00", 0x8000), 10)
	for name, c := range map[string]struct{ p, want string }{
		"string of 2^63 bytes":   {withFooter("\x00\x81\x7f\xff\xff\xff\xff\xff\xff\xff", 10), "-ERR Bad data format\r\n"},
		"set of 2^32 members":    {withFooter("\x02\x80\xff\xff\xff\xff\x01a", 10), "-ERR Bad data format\r\n"},
		"quicklist of 2^32":      {withFooter("\x12\x80\xff\xff\xff\xff\x02\x01a", 10), "-ERR Bad data format\r\n"},
		"listpack lies":          {withFooter("\x10\x08\xff\xff\x00\x00\x02\x00\x81\xff", 10), "-ERR Bad data format\r\n"},
		"intset lies":            {withFooter("\x0b\x0c\x08\x00\x00\x00\xff\xff\x00\x00\x01\x00\x00\x00", 10), "-ERR Bad data format\r\n"},
		"lzf over the limit":     {lzf2MiB, "-ERR the restored value exceeds the server's limits"},
		"ziplist entry past end": {withFooter("\x0d\x0d\x0d\x00\x00\x00\x0a\x00\x00\x00\x01\x00\x00\x3f\xff", 10), "-ERR Bad data format\r\n"},
	} {
		if r := rc.do("RESTORE", "k", "0", c.p); !strings.HasPrefix(r, c.want) {
			t.Errorf("%s: %q", name, r)
		}
	}
	if r := rc.do("EXISTS", "k"); r != ":0\r\n" {
		t.Errorf("a refused RESTORE wrote: EXISTS %q", r)
	}
	// A big intset of distinct members decodes whole (what bounds it is the 256 MiB a restore may build).
	n := 100000
	is := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 4), uint32(n))
	for i := range n {
		is = binary.LittleEndian.AppendUint32(is, uint32(i*3-n))
	}
	body := "\x0b" + string(append([]byte{0x80}, binary.BigEndian.AppendUint32(nil, uint32(len(is)))...)) + string(is)
	if r := rc.do("RESTORE", "big", "0", withFooter(body, 10)); r != "+OK\r\n" {
		t.Fatalf("RESTORE of %d members: %q", n, r)
	}
	if r := rc.do("SCARD", "big"); r != ":"+strconv.Itoa(n)+"\r\n" {
		t.Errorf("SCARD %q", r)
	}
	if r := rc.do("SISMEMBER", "big", strconv.Itoa(3*(n-1)-n)); r != ":1\r\n" {
		t.Errorf("SISMEMBER %q", r)
	}
}

// FuzzRestorePayload restores arbitrary payloads (their footers made right, so the fuzzer explores the values),
// seeded with redis-server 7.0's own DUMPs: any payload is answered OK or an error, never a panic; and a value
// restored DUMPs to a payload that restores to the same DUMP.
func FuzzRestorePayload(f *testing.F) {
	seeds, err := os.ReadFile("../../rdb/testdata/redis7_dumps.txt")
	if err != nil {
		f.Fatal(err)
	}
	for _, line := range strings.Split(string(seeds), "\n") {
		if _, h, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(line, "#") {
			p, err := hex.DecodeString(h)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(p)
		}
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		if len(p) > 10 {
			p = []byte(withFooter(string(p[:len(p)-10]), rdb.Version))
		}
		store := kv.New(memstore.New(), kv.Options{SweepInterval: -1, Limits: kv.Limits{MaxKey: 512, MaxValue: 1 << 20}})
		defer store.Close()
		h := New(store, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		client, srv := net.Pipe()
		defer client.Close()
		go func() {
			h.ServeConn(ctx, srv)
			srv.Close()
		}()
		rc := &rawConn{t: t, c: client, r: bufio.NewReader(client)}
		switch r := rc.do("RESTORE", "k", "0", string(p)); {
		case strings.HasPrefix(r, "-ERR "):
			return
		case r != "+OK\r\n":
			t.Fatalf("RESTORE: %q", r)
		}
		d := rc.do("DUMP", "k")
		if r := rc.do("RESTORE", "k2", "0", bulkValue(d)); r != "+OK\r\n" {
			t.Fatalf("RESTORE of anykv's own DUMP: %q", r)
		}
		if d2 := rc.do("DUMP", "k2"); d2 != d {
			t.Fatalf("DUMP after a round trip %.100q, before %.100q", d2, d)
		}
	})
}

// TestMigrateMatchesRedis: MIGRATE from anykv and from redis-server to a second redis-server answers alike and
// moves alike (KEYS, COPY, REPLACE, AUTH, NOKEY, the target's errors, a port nobody listens on), and
// redis-server's MIGRATE into anykv lands.
func TestMigrateMatchesRedis(t *testing.T) {
	r1 := dialRaw(t, startRedisServer(t))
	target := startRedisServer(t)
	ts := startServer(t, Options{}, 0)
	ak := ts.raw(t)
	th, tp, _ := net.SplitHostPort(target)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, closed, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	var replies [2][]string
	for i, src := range []*rawConn{r1, ak} {
		db := strconv.Itoa(i + 1)
		for _, c := range [][]string{
			{"SET", "a", "1"}, {"RPUSH", "l", "x", "y"}, {"PEXPIRE", "l", "100000"}, {"SET", "c", "v"},
			{"MIGRATE", th, tp, "", db, "1000", "KEYS", "a", "l", "nosuch"},
			{"EXISTS", "a", "l"},
			{"MIGRATE", th, tp, "nosuch", db, "1000"},
			{"MIGRATE", th, tp, "c", db, "1000", "COPY"},
			{"EXISTS", "c"},
			{"MIGRATE", th, tp, "c", db, "1000"},
			{"MIGRATE", th, tp, "c", db, "1000", "REPLACE"},
			{"EXISTS", "c"},
			{"SET", "c", "w"},
			{"MIGRATE", th, tp, "c", db, "1000", "KEYS", "x"},
			{"MIGRATE", th, tp, "", db, "1000", "FOO"},
			{"MIGRATE", th, tp, "", db, "x"},
			{"MIGRATE", th, tp, "c", db, "1000", "REPLACE", "AUTH", "pw"},
			{"MIGRATE", th, tp, "c", db, "1000", "REPLACE", "AUTH2", "u", "pw"},
			{"MIGRATE", "127.0.0.1", closed, "c", db, "100"},
			{"EXISTS", "c"},
		} {
			replies[i] = append(replies[i], strings.Join(c, " ")+" → "+src.do(c...))
			if c[0] == "MIGRATE" {
				replies[i][len(replies[i])-1] = strings.Replace(replies[i][len(replies[i])-1], " "+db+" ", " db ", 1)
			}
		}
	}
	for i := range replies[0] {
		if replies[0][i] != replies[1][i] {
			t.Errorf("redis-server: %q\n       anykv: %q", replies[0][i], replies[1][i])
		}
	}
	tr := dialRaw(t, target)
	for _, db := range []string{"1", "2"} {
		tr.do("SELECT", db)
		got := tr.do("GET", "a") + tr.do("LRANGE", "l", "0", "-1") + tr.do("GET", "c")
		// c is w: a target without a password refuses the AUTH and runs the RESTORE after it, as it does for Redis.
		if want := "$1\r\n1\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n$1\r\nw\r\n"; got != want {
			t.Errorf("target db %s holds %q", db, got)
		}
		if ttl := tr.do("TTL", "l"); ttl != ":100\r\n" && ttl != ":99\r\n" {
			t.Errorf("target db %s: TTL %q", db, ttl)
		}
	}
	// redis-server migrates into anykv.
	ah, ap, _ := net.SplitHostPort(ts.addr)
	r1.do("HSET", "mh", "f", "1", "g", "")
	r1.do("SET", "ms", "hello")
	if r := r1.do("MIGRATE", ah, ap, "", "0", "1000", "KEYS", "mh", "ms"); r != "+OK\r\n" {
		t.Fatalf("MIGRATE from redis-server to anykv: %q", r)
	}
	if got := ak.do("HMGET", "mh", "f", "g") + ak.do("GET", "ms"); got != "*2\r\n$1\r\n1\r\n$0\r\n\r\n$5\r\nhello\r\n" {
		t.Errorf("anykv holds %q", got)
	}
}

// TestRestoresOfOneBatchAreBounded: the values the RESTOREs of one batch decoded are bounded (256 MiB; 8 MiB here), as a
// batch holds them until it runs and LZF payloads decode to up to 88 times their bytes: a pipeline is applied in
// parts (each RESTORE answered OK), and a transaction's RESTORE past the bound is refused. Before, a pipeline of
// RESTOREs of 750 KB payloads, each a 62 MiB string, held 2 GB from 22 MB of request on one connection.
func TestRestoresOfOneBatchAreBounded(t *testing.T) {
	defer func(n int) { restoreMaxTotal = n }(restoreMaxTotal)
	restoreMaxTotal = 8 << 20
	ts := startServer(t, Options{}, 0) // values up to 1 MiB
	rc := ts.raw(t)
	body := append([]byte{rdb.TypeListQuicklist2}, rdb.AppendLen(nil, 3)...) // 3 plain nodes of 1 MiB
	for range 3 {
		body = append(append(body, 1), lzfBomb(3971)...)
	}
	p := string(rdb.Finish(body)) // 36 KB
	var pipe strings.Builder
	for i := range 8 {
		pipe.WriteString(respCmd("RESTORE", "p"+strconv.Itoa(i), "0", p))
	}
	rc.send(pipe.String())
	for i := range 8 {
		if r := rc.reply(); r != "+OK\r\n" {
			t.Fatalf("pipelined RESTORE %d: %q", i, r)
		}
	}
	if r := rc.do("LLEN", "p7"); r != ":3\r\n" {
		t.Errorf("LLEN p7: %q", r)
	}
	rc.do("MULTI")
	for i := range 3 {
		rc.do("RESTORE", "m"+strconv.Itoa(i), "0", p)
	}
	want := "*3\r\n+OK\r\n+OK\r\n-ERR the transaction's restored values would exceed 8 MiB\r\n"
	if r := rc.do("EXEC"); r != want {
		t.Errorf("EXEC of 3 RESTOREs of 3 MiB: %q", r)
	}
}
