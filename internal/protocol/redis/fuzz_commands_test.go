package redis

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/rdb"
)

// fuzzCommands are the commands FuzzCommands sends: those whose arguments take the most parsing (ranges,
// options, units, bit types, IDs, cursors), none of which blocks, subscribes, changes the server's settings or
// answers other than with one reply.
var fuzzCommands = []string{
	"SET", "GET", "GETEX", "GETRANGE", "SETRANGE", "INCRBYFLOAT", "APPEND", "EXPIRE", "PEXPIREAT", "TTL",
	"LPUSH", "RPUSH", "LRANGE", "LPOS", "LINSERT", "LSET", "LTRIM", "LMPOP", "LREM",
	"HSET", "HGETALL", "HRANDFIELD", "HINCRBYFLOAT", "HSCAN",
	"SADD", "SRANDMEMBER", "SPOP", "SINTERCARD", "SSCAN", "SMISMEMBER",
	"ZADD", "ZRANGE", "ZRANGESTORE", "ZRANGEBYSCORE", "ZREVRANGEBYLEX", "ZRANGEBYLEX", "ZUNIONSTORE", "ZINTER",
	"ZINTERCARD", "ZMPOP", "ZRANDMEMBER", "ZSCAN", "ZCOUNT", "ZLEXCOUNT", "ZINCRBY", "ZREMRANGEBYSCORE",
	"GEOADD", "GEOSEARCH", "GEOSEARCHSTORE", "GEORADIUS", "GEORADIUS_RO", "GEORADIUSBYMEMBER", "GEODIST", "GEOPOS",
	"BITFIELD", "BITFIELD_RO", "BITCOUNT", "BITPOS", "SETBIT", "BITOP",
	"XADD", "XRANGE", "XREVRANGE", "XLEN", "XTRIM", "XDEL", "XGROUP", "XREADGROUP", "XREAD", "XACK", "XCLAIM",
	"XAUTOCLAIM", "XPENDING", "XSETID", "XINFO",
	"SORT", "SORT_RO", "SCAN", "OBJECT", "PFADD", "PFCOUNT", "PFMERGE", "LCS", "COPY", "RENAME", "DUMP", "RESTORE",
	"TYPE", "MSET", "MGET", "DEL", "EXISTS", "ZSCORE", "HGET",
}

// FuzzCommands sends a run of commands, one per line of the input: the line's first byte picks the command,
// the rest are its arguments split at spaces (sent as a multibulk, so any bytes). Every command must get
// exactly one reply, in order, the connection must then answer an ECHO, and nothing may panic.
func FuzzCommands(f *testing.F) {
	pick := func(name string) byte {
		for i, c := range fuzzCommands {
			if c == name {
				return byte(i)
			}
		}
		panic(name)
	}
	script := func(lines ...string) []byte {
		var b []byte
		for _, l := range lines {
			name, args, _ := strings.Cut(l, " ")
			b = append(b, pick(name))
			b = append(b, args...)
			b = append(b, '\n')
		}
		return b
	}
	for _, s := range [][]byte{
		script("ZADD z 1 a 2 b 3 c", "ZRANGE z (1 +inf BYSCORE LIMIT 0 -1 WITHSCORES", "ZRANGESTORE d z [a (c BYLEX REV"),
		script("GEOADD g 13.361389 38.115556 p 15.087269 37.502669 c", "GEOSEARCH g FROMLONLAT 15 37 BYBOX 400 400 km ASC COUNT 1 ANY WITHCOORD WITHDIST WITHHASH",
			"GEORADIUS g 15 37 200 mi STORE x", "GEORADIUSBYMEMBER g p 100 ft STOREDIST y"),
		script("BITFIELD b SET i8 #0 -100 GET u4 0 INCRBY u2 100 1 OVERFLOW SAT INCRBY i64 0 -1", "BITFIELD_RO b GET i63 9223372036854775800",
			"BITCOUNT b 0 -1 BIT", "BITPOS b 1 2 -1 BYTE"),
		script("XADD s MAXLEN ~ 10 * f v", "XADD s 5-* a b", "XGROUP CREATE s g $ MKSTREAM ENTRIESREAD 3", "XREADGROUP GROUP g c COUNT 2 STREAMS s >",
			"XAUTOCLAIM s g c 0 0-0 COUNT 100 JUSTID", "XPENDING s g IDLE 0 - + 10 c", "XINFO STREAM s FULL COUNT 0", "XSETID s 99-0 ENTRIESADDED 5 MAXDELETEDID 3-0"),
		script("RPUSH l 3 1 2", "SORT l BY nosort GET # GET h*->f LIMIT 0 -1 DESC ALPHA STORE o", "LPOS l 1 RANK -1 COUNT 0 MAXLEN 2", "LMPOP 2 l o RIGHT COUNT 3"),
		script("SET a hello", "SETRANGE a 3 xyz", "GETEX a PXAT 99999999999999", "LCS a a IDX MINMATCHLEN 1 WITHMATCHLEN", "SCAN 0 MATCH * COUNT 10 TYPE string"),
		script("PFADD h a b c", "PFCOUNT h", "DUMP h", "OBJECT ENCODING h", "RESTORE h2 0 junk REPLACE ABSTTL IDLETIME 5 FREQ 3"),
		script("HSET h f 1.5", "HINCRBYFLOAT h f 1e308", "HRANDFIELD h -5 WITHVALUES", "SADD s1 a b", "SINTERCARD 2 s1 s1 LIMIT 1", "SRANDMEMBER s1 -3"),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req []byte
		n := 0
		for _, line := range bytes.Split(data, []byte("\n")) {
			if len(line) == 0 || n == 32 {
				continue
			}
			args := [][]byte{[]byte(fuzzCommands[int(line[0])%len(fuzzCommands)])}
			if len(line) > 1 {
				args = append(args, bytes.Split(line[1:], []byte(" "))...)
			}
			for i, a := range args {
				if strings.EqualFold(string(a), "BLOCK") { // XREAD and XREADGROUP would wait
					args[i] = []byte("COUNT")
				}
			}
			req = fmt.Appendf(req, "*%d\r\n", len(args))
			for _, a := range args {
				req = fmt.Appendf(req, "$%d\r\n%s\r\n", len(a), a)
			}
			n++
		}
		const end = "$10\r\nfuzz\x00end\x7f\x01\r\n"
		req = append(req, "*2\r\n$4\r\nECHO\r\n"+end...)

		store := kv.New(memstore.New(), kv.Options{SweepInterval: -1, Limits: kv.Limits{MaxKey: 512, MaxValue: 1 << 16, MaxBatch: 256}})
		defer store.Close()
		h := New(store, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		client, srv := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.ServeConn(ctx, srv)
			srv.Close()
		}()
		client.SetDeadline(time.Now().Add(10 * time.Second))
		go client.Write(req)
		r := bufio.NewReader(client)
		var replies []string
		for {
			var b strings.Builder
			if err := readValue(r, &b); err != nil {
				t.Fatalf("%d commands: reading reply %d: %v; replies %q", n, len(replies)+1, err, replies)
			}
			replies = append(replies, b.String())
			if b.String() == end {
				break
			}
		}
		if len(replies) != n+1 {
			t.Fatalf("%d commands got %d replies before the ECHO: %q", n, len(replies)-1, replies)
		}
		client.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("session did not end after the client hung up")
		}
	})
}

// FuzzFunctionsPayload reads FUNCTION RESTORE payloads whose checksum is right (the fuzzed body with the trailer
// added): no panic, codes no larger than the limit, and the codes read re-encode to a payload that reads back
// the same.
func FuzzFunctionsPayload(f *testing.F) {
	f.Add(encodeFunctions([]*funcLib{{code: []byte("#!lua name=a\nredis.register_function('f', function() return 1 end)")}})[:0])
	f.Add([]byte{rdbOpcodeFunction2, 3, 'a', 'b', 'c', rdbOpcodeFunction2, 0xc3, 4, 6, 0, 'a', 0xe0, 0, 'a'})
	f.Add([]byte{rdbOpcodeFunction2, 0x80, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, body []byte) {
		codes, err := readFunctionsPayload(rdb.Finish(append([]byte(nil), body...)))
		if err != nil {
			return
		}
		total := 0
		for _, c := range codes {
			total += len(c)
		}
		if total > funcMaxCodeBytes || len(codes) > funcMaxLibraries {
			t.Fatalf("%x: %d codes of %d bytes", body, len(codes), total)
		}
		libs := make([]*funcLib, len(codes))
		for i, c := range codes {
			libs[i] = &funcLib{code: c}
		}
		again, err := readFunctionsPayload(encodeFunctions(libs))
		if err != nil || len(again) != len(codes) {
			t.Fatalf("%x: %d codes re-read as %d (%v)", body, len(codes), len(again), err)
		}
		for i := range codes {
			if !bytes.Equal(again[i], codes[i]) {
				t.Fatalf("%x: code %d re-read as %q, was %q", body, i, again[i], codes[i])
			}
		}
	})
}

// FuzzACLRules applies arbitrary ACL SETUSER rules (one per line of the input, so a rule may hold spaces) and,
// when they are accepted, checks the round trip that ACL SAVE and ACL LOAD make: the user's line as the file
// holds it splits back into words that apply without error to the same rules.
func FuzzACLRules(f *testing.F) {
	for _, s := range []string{
		"on\n>pw\n~app:*\n%R~ro:*\n&chan\n+@read\n-get\n+config|get",
		"reset\nnopass\nallkeys\nallchannels\nallcommands\n(~a* +get)\n(%W~b +set)",
		"on\n(~x) +get)\n#" + strings.Repeat("a", 64),
		"resetkeys\n~a\"b\n~'c\n~d\\e\n(+@all ~\")\")\nclearselectors\nsanitize-payload",
		"-@all\n+select|0\n+@hash\n-hset\n<pw\nresetpass\noff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		ops := strings.Split(in, "\n")
		if len(ops) > 64 {
			return
		}
		r, err := applyRules(newRules(), ops)
		if err != nil {
			return
		}
		line := strings.TrimSpace("user u " + r.describeFile())
		words, err := splitArgs(line)
		if err != nil || len(words) < 2 || words[0] != "user" || words[1] != "u" {
			t.Fatalf("rules %q: the file line %q splits to %q (%v)", ops, line, words, err)
		}
		again, err := applyRules(newRules(), words[2:])
		if err != nil {
			t.Fatalf("rules %q: the file line %q does not load: %v", ops, line, err)
		}
		if again.describe() != r.describe() {
			t.Fatalf("rules %q: saved as %q, loaded back as %q", ops, r.describe(), again.describe())
		}
	})
}
