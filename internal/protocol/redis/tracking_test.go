package redis

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// trackStep is a transcriptStep whose command may name a connection's client id as {name}; replies show ids so
// too, since the two servers number their clients apart.
type trackStep = transcriptStep

// trackTranscript opens the connections named in steps (a name ending in 3 speaks RESP3), runs the steps and
// returns every reply, with client ids written as {name}. A step with cmd "close" closes its connection and
// waits for the server to see it.
func trackTranscript(t *testing.T, addr string, steps []trackStep) []string {
	conns := map[string]*rawConn{}
	ids := map[string]string{}
	var out []string
	for _, st := range steps {
		rc := conns[st.conn]
		if rc == nil {
			rc = dialRaw(t, addr)
			conns[st.conn] = rc
			if strings.HasSuffix(st.conn, "3") {
				rc.send("HELLO 3\r\n")
				rc.reply()
			}
			rc.send("CLIENT ID\r\n")
			ids[st.conn] = strings.TrimSuffix(strings.TrimPrefix(rc.reply(), ":"), "\r\n")
		}
		if st.cmd == "close" {
			rc.c.Close()
			waitGone(t, conns, ids[st.conn])
			continue
		}
		cmd := st.cmd
		for name, id := range ids {
			cmd = strings.ReplaceAll(cmd, "{"+name+"}", id)
		}
		if cmd != "" {
			rc.send(strings.ReplaceAll(cmd, `\r\n`, "\r\n") + "\r\n")
		}
		for i := 0; i < st.replies; i++ {
			r := rc.reply()
			if strings.Contains(st.cmd, "GETREDIR") || strings.Contains(st.cmd, "TRACKINGINFO") ||
				strings.Contains(r, "tracking-redir-broken") {
				for name, id := range ids {
					r = strings.ReplaceAll(r, ":"+id+"\r\n", ":{"+name+"}\r\n")
				}
			}
			out = append(out, st.conn+" "+st.cmd+" -> "+r)
		}
	}
	return out
}

// waitGone waits until CLIENT LIST, asked on another of conns, no longer shows the client id.
func waitGone(t *testing.T, conns map[string]*rawConn, id string) {
	for name, rc := range conns {
		if strings.HasPrefix(name, "w") {
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				rc.send("CLIENT LIST ID " + id + "\r\n")
				if r := rc.reply(); r == "$0\r\n\r\n" {
					return
				}
			}
			t.Fatalf("client %s still listed", id)
		}
	}
	t.Fatal("no connection named w* to ask CLIENT LIST")
}

// sameTracking runs steps on redis-server and on anykv and requires the same replies byte for byte.
func sameTracking(t *testing.T, steps []trackStep) {
	t.Helper()
	sameAsRedis(t, func(t *testing.T, addr string) []string { return trackTranscript(t, addr, steps) })
}

// TestTrackingCommandsMatchRedis: CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO answer as redis-server 7
// does, errors included, for every bad combination of options (PREFIX without BCAST, OPTIN with BCAST, both OPTIN
// and OPTOUT, a switch of mode while on, overlapping prefixes, a missing redirect client, CACHING in the wrong
// mode).
func TestTrackingCommandsMatchRedis(t *testing.T) {
	cmds := []string{
		"CLIENT TRACKINGINFO", "CLIENT GETREDIR", "CLIENT CACHING YES", "CLIENT TRACKING", "CLIENT TRACKING maybe",
		"CLIENT TRACKING ON PREFIX a", "CLIENT TRACKING ON BCAST OPTIN", "CLIENT TRACKING ON BCAST OPTOUT",
		"CLIENT TRACKING ON OPTIN OPTOUT", "CLIENT TRACKING ON REDIRECT 99999", "CLIENT TRACKING ON REDIRECT x",
		"CLIENT TRACKING ON REDIRECT", "CLIENT TRACKING ON PREFIX", "CLIENT TRACKING ON FOO",
		"CLIENT TRACKING ON REDIRECT {w} REDIRECT {w}", "CLIENT CACHING", "CLIENT CACHING YES NO",
		"CLIENT TRACKING ON OPTIN", "CLIENT TRACKINGINFO", "CLIENT CACHING NO", "CLIENT CACHING maybe",
		"CLIENT TRACKING ON OPTOUT", "CLIENT TRACKING ON BCAST", "CLIENT CACHING YES", "CLIENT TRACKINGINFO",
		"CLIENT TRACKING OFF", "CLIENT TRACKING OFF", "CLIENT TRACKING ON OPTOUT NOLOOP REDIRECT {w}",
		"CLIENT CACHING NO", "CLIENT TRACKINGINFO", "CLIENT GETREDIR", "CLIENT CACHING YES", "CLIENT TRACKING OFF",
		"CLIENT TRACKING ON BCAST PREFIX a PREFIX b", "CLIENT TRACKING ON BCAST PREFIX c PREFIX abc",
		"CLIENT TRACKING ON BCAST PREFIX b", "CLIENT TRACKING ON BCAST PREFIX d PREFIX dd",
		"CLIENT TRACKING ON BCAST PREFIX e", "CLIENT TRACKINGINFO", "CLIENT TRACKING ON",
		"CLIENT TRACKING ON BCAST NOLOOP", "CLIENT TRACKINGINFO", "CLIENT TRACKING OFF", "CLIENT TRACKING ON BCAST",
		"CLIENT TRACKING ON BCAST PREFIX x", "CLIENT TRACKINGINFO", "CLIENT TRACKING OFF", "CLIENT TRACKINGINFO",
	}
	var steps []trackStep
	for _, conn := range []string{"t", "t3"} {
		steps = append(steps, trackStep{"w", "PING", 1})
		for _, c := range cmds {
			steps = append(steps, trackStep{conn, c, 1})
		}
	}
	sameTracking(t, steps)
}

// TestTrackingInvalidationsMatchRedis: what a RESP3 tracking connection gets, byte for byte as from redis-server:
// a push for a key it read when another client writes it (once: the key is forgotten), its own writes' pushes
// right after their replies (in a pipeline and after EXEC too), none with NOLOOP, a null for FLUSHDB and
// FLUSHALL, OPTIN's CACHING YES for one command or one transaction (a CLIENT command in between keeps it), OPTOUT's
// CACHING NO, and BCAST's one push per prefix with the keys in order. (Scripts: TestTrackingScriptReads.)
func TestTrackingInvalidationsMatchRedis(t *testing.T) {
	sameTracking(t, []trackStep{
		{"w", "FLUSHALL", 1}, {"t3", "CLIENT TRACKING ON", 1}, {"t3", "GET a", 1}, {"w", "SET a 1", 1},
		{"t3", "PING", 2}, {"w", "SET a 2", 1}, {"t3", "PING", 1},
		{"t3", "MGET a b c", 1}, {"w", "DEL a b", 1}, {"t3", "SET c 1", 3}, {"t3", "PING", 1},
		{"t3", `GET d\r\nSET d 1\r\nPING`, 4}, {"t3", `GET e\r\nMULTI\r\nSET e 1\r\nGET e\r\nEXEC\r\nPING`, 7},
		{"t3", "GET f", 1}, {"w", "FLUSHALL", 1}, {"t3", "PING", 2}, {"t3", "FLUSHDB", 2},
		{"t3", "EXISTS g", 1}, {"t3", "TYPE h", 1}, {"w", "MSET g 1 h 2 i 3", 1}, {"t3", "PING", 3},
		{"t3", "HGETALL k", 1}, {"w", "HSET k f v", 1}, {"t3", "PING", 2},
		{"t3", "GET l", 1}, {"w", "RENAME k l", 1}, {"t3", "PING", 2},
		{"t3", "GET b", 1}, {"t3", `SET b 1\r\nGET b`, 3}, {"w", "SET b 2", 1}, {"t3", "PING", 2},
		{"t3", `MULTI\r\nSET e 1\r\nGET e\r\nEXEC`, 4}, {"w", "SET e 2", 1}, {"t3", "PING", 2},
		{"t3", `MULTI\r\nSET f 1\r\nGET f\r\nSET f 2\r\nEXEC`, 6}, {"w", "SET f 3", 1}, {"t3", "PING", 1},
		{"t3", `MULTI\r\nGET g\r\nSET g 1\r\nEXEC`, 5}, {"w", "SET g 2", 1}, {"t3", "PING", 1},
		{"t3", `GET h\r\nMULTI\r\nSET h 1\r\nGET h\r\nGET h\r\nEXEC`, 7}, {"w", "SET h 2", 1}, {"t3", "PING", 2},
		{"t3", "CLIENT TRACKING ON NOLOOP", 1}, {"t3", "GET m", 1}, {"t3", "SET m 1", 1}, {"w", "SET m 2", 1},
		{"t3", "PING", 1}, {"t3", "GET m", 1}, {"w", "SET m 3", 1}, {"t3", "PING", 2},
		{"t3", "CLIENT TRACKING OFF", 1}, {"t3", "CLIENT TRACKING ON OPTIN", 1}, {"t3", "GET n", 1},
		{"t3", "CLIENT CACHING YES", 1}, {"t3", "CLIENT GETNAME", 1}, {"t3", "GET o", 1}, {"t3", "GET p", 1},
		{"w", "MSET n 1 o 1 p 1", 1}, {"t3", "PING", 2},
		{"t3", "CLIENT CACHING YES", 1}, {"t3", `MULTI\r\nGET q\r\nGET r\r\nEXEC\r\nGET s`, 5},
		{"w", "MSET q 1 r 1 s 1", 1}, {"t3", "PING", 3},
		{"t3", "CLIENT TRACKING OFF", 1}, {"t3", "CLIENT TRACKING ON OPTOUT", 1}, {"t3", "CLIENT CACHING NO", 1},
		{"t3", "GET u", 1}, {"t3", "GET v", 1}, {"w", "MSET u 1 v 1", 1}, {"t3", "PING", 2},
		{"t3", "CLIENT TRACKING OFF", 1}, {"t3", "GET x", 1}, {"w", "SET x 1", 1}, {"t3", "PING", 1},
		{"t3", "CLIENT TRACKING ON BCAST PREFIX x: PREFIX y:", 1}, {"w", "MSET x:2 1 x:1 1 y:1 1 z 1 x:2 2", 1},
		{"t3", "PING", 3}, {"t3", "SET y:2 1", 2}, {"t3", "CLIENT TRACKING ON BCAST NOLOOP", 1},
		{"t3", "SET y:3 1", 1}, {"w", "SET y:3 2", 1}, {"t3", "PING", 3}, // y: and "" (BCAST without PREFIX) both match
		{"w", "FLUSHDB", 1}, {"t3", "PING", 2},
		{"t3", "CLIENT TRACKING OFF", 1}, {"w", "SET x:1 3", 1}, {"t3", "PING", 1},
	})
}

// TestTrackingRedirectMatchesRedis: REDIRECT sends the invalidations to another client, as pub/sub messages of
// __redis__:invalidate to a subscribed RESP2 client (a FLUSHALL's null as the tracking client's protocol writes
// it), as pushes to a RESP3 one, nowhere to a RESP2 client with no subscription; a redirect to a client that left
// breaks (the tracking-redir-broken push to a RESP3 tracker, the broken_redirect flag). A RESP2 client tracking
// without a redirect gets nothing.
func TestTrackingRedirectMatchesRedis(t *testing.T) {
	sameTracking(t, []trackStep{
		{"w", "FLUSHALL", 1}, {"r", "SUBSCRIBE __redis__:invalidate", 1},
		{"t", "CLIENT TRACKING ON REDIRECT {r}", 1}, {"t", "GET a", 1}, {"w", "SET a 1", 1}, {"r", "", 1},
		{"t", "CLIENT GETREDIR", 1}, {"t", "CLIENT TRACKINGINFO", 1}, {"w", "FLUSHALL", 1}, {"r", "", 1},
		{"t3", "CLIENT TRACKING ON REDIRECT {r}", 1}, {"w", "FLUSHALL", 1}, {"r", "", 2},
		{"r3", "PING", 1}, {"t", "CLIENT TRACKING ON REDIRECT {r3}", 1}, {"t", "GET b", 1}, {"w", "SET b 1", 1},
		{"r3", "PING", 2},
		{"q", "PING", 1}, {"t", "CLIENT TRACKING ON REDIRECT {q}", 1}, {"t", "GET c", 1}, {"w", "SET c 1", 1},
		{"q", "PING", 1},
		{"x", "PING", 1}, {"t3", "CLIENT TRACKING ON REDIRECT {x}", 1}, {"t3", "GET d", 1}, {"x", "close", 0},
		{"w", "SET d 1", 1}, {"t3", "PING", 2}, {"t3", "CLIENT TRACKINGINFO", 1}, {"t3", "CLIENT GETREDIR", 1},
		{"t3", "CLIENT TRACKING ON", 1}, {"t3", "CLIENT TRACKINGINFO", 1},
		{"p", "CLIENT TRACKING ON", 1}, {"p", "GET e", 1}, {"w", "SET e 1", 1}, {"p", "PING", 1},
	})
}

// clientFlags is the flags= and redir= fields of a CLIENT LIST or CLIENT INFO reply.
var clientFlags = regexp.MustCompile(`flags=\S* |redir=\S* `)

// redirID is a redir= field naming a client.
var redirID = regexp.MustCompile(`redir=[1-9][0-9]*`)

// TestTrackingClientListMatchesRedis: CLIENT INFO and CLIENT LIST show tracking as Redis does: t, then R for a
// broken redirect, then B for BCAST, and redir= the redirect (0 for none, -1 when not tracking).
func TestTrackingClientListMatchesRedis(t *testing.T) {
	sameAsRedis(t, func(t *testing.T, addr string) []string {
		info := trackStep{"t3", "CLIENT INFO", 1}
		lines := trackTranscript(t, addr, []trackStep{
			{"w", "PING", 1}, info, {"t3", "CLIENT TRACKING ON", 1}, info, {"t3", "CLIENT TRACKING OFF", 1},
			{"t3", "CLIENT TRACKING ON BCAST", 1}, info, {"x", "PING", 1}, {"t3", "CLIENT TRACKING OFF", 1},
			{"t3", "CLIENT TRACKING ON BCAST REDIRECT {x}", 1}, info, {"x", "close", 0}, {"w", "SET k 1", 1},
			{"t3", "PING", 2}, info, {"t3", "CLIENT TRACKING ON", 1}, info,
		})
		var out []string
		for _, l := range lines {
			if strings.Contains(l, "CLIENT INFO") {
				l = redirID.ReplaceAllString(strings.Join(clientFlags.FindAllString(l, -1), ""), "redir=id")
			}
			out = append(out, l)
		}
		return out
	})
}

// TestTrackingScriptReads: the keys a script reads register for the tracking client that runs it (EVAL and
// EVAL_RO alike, in a transaction too), as Redis 7.2 does (7.0 registered EVAL_RO's declared keys instead), and
// OPTIN's rule holds for them; its writes invalidate as any write.
func TestTrackingScriptReads(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	got := trackTranscript(t, ts.addr, []trackStep{
		{"t3", "CLIENT TRACKING ON", 1}, {"t3", "EVAL \"return redis.call('get', 'j')\" 0", 1},
		{"t3", "EVAL_RO \"return redis.call('exists', KEYS[1])\" 1 k", 1},
		{"t3", `MULTI\r\nEVAL "return redis.call('get', 'l')" 0\r\nEXEC`, 3},
		{"w", "MSET j 1 k 1 l 1", 1}, {"t3", "PING", 4},
		{"t3", "GET m", 1}, {"w", "EVAL \"return redis.call('set', 'm', 1)\" 0", 1}, {"t3", "PING", 2},
		{"t3", "CLIENT TRACKING ON OPTIN", 1}, {"t3", "EVAL \"return redis.call('get', 'n')\" 0", 1},
		{"t3", "CLIENT CACHING YES", 1}, {"t3", "EVAL \"return redis.call('get', 'o')\" 0", 1},
		{"w", "MSET n 1 o 1", 1}, {"t3", "PING", 2},
	})
	want := []string{"+OK", "_", ":0", "+OK", "+QUEUED", "*1\r\n_", "+OK", push("j"), push("k"), push("l"), "+PONG",
		"_", "+OK", push("m"), "+PONG", "+OK", "_", "+OK", "_", "+OK", push("o"), "+PONG"}
	compareReplies(t, got, want)
}

// push is the invalidation push of one key, without its last CRLF.
func push(key string) string {
	return ">2\r\n$10\r\ninvalidate\r\n*1\r\n$" + itoa(int64(len(key))) + "\r\n" + key
}

// compareReplies requires the replies of a trackTranscript to be want (each without its final CRLF).
func compareReplies(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d replies, want %d:\n%q", len(got), len(want), got)
	}
	for i, g := range got {
		if _, r, _ := strings.Cut(g, " -> "); r != want[i]+"\r\n" {
			t.Errorf("reply %d: %q, want %q", i, g, want[i]+"\r\n")
		}
	}
}

// TestTrackingTableBound: past tracking-table-max-keys a new key evicts another, whose holders get its
// invalidation as if it changed; lowering the bound evicts at once; INFO counts the keys, registrations and
// tracking clients; TRACKING OFF and a disconnection take a client's registrations away.
func TestTrackingTableBound(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c3, other, w := ts.raw(t), ts.raw(t), ts.raw(t)
	c3.send("HELLO 3\r\n")
	c3.reply()
	do := func(rc *rawConn, cmd string) string { rc.send(cmd + "\r\n"); return rc.reply() }
	info := func() string {
		r := do(w, "INFO everything")
		var out []string
		for _, l := range strings.Split(r, "\r\n") {
			if strings.HasPrefix(l, "tracking_") {
				out = append(out, l)
			}
		}
		return strings.Join(out, " ")
	}
	if r := do(w, "CONFIG GET tracking-table-max-keys"); !strings.Contains(r, "1000000") {
		t.Fatalf("default bound: %q", r)
	}
	do(w, "CONFIG SET tracking-table-max-keys 3")
	do(c3, "CLIENT TRACKING ON")
	do(other, "CLIENT TRACKING ON")
	do(other, "MGET a b")
	do(c3, "MGET a b c")
	if got := info(); got != "tracking_clients:2 tracking_total_keys:3 tracking_total_items:5 tracking_total_prefixes:0" {
		t.Fatalf("INFO: %s", got)
	}
	c3.send("GET d\r\n") // a fourth key: one of a, b, c goes, with its invalidation (after the reply)
	if r := c3.reply(); r != "_\r\n" {
		t.Fatalf("GET d: %q", r)
	}
	evicted := c3.reply()
	if !strings.HasPrefix(evicted, ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\n") {
		t.Fatalf("no eviction push: %q", evicted)
	}
	if got := info(); !strings.Contains(got, "tracking_total_keys:3 ") {
		t.Fatalf("after the eviction: %s", got)
	}
	do(w, "CONFIG SET tracking-table-max-keys 1") // two more go at once
	for i := 0; i < 2; i++ {
		if r := c3.reply(); !strings.HasPrefix(r, ">2\r\n$10\r\ninvalidate\r\n") {
			t.Fatalf("eviction %d: %q", i, r)
		}
	}
	if got := info(); !strings.Contains(got, "tracking_total_keys:1 ") {
		t.Fatalf("after lowering the bound: %s", got)
	}
	do(w, "CONFIG SET tracking-table-max-keys 0") // no bound
	do(c3, "MGET e f g")
	do(other, "CLIENT TRACKING OFF")
	other.c.Close()
	do(c3, "CLIENT TRACKING OFF")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if got := info(); got == "tracking_clients:0 tracking_total_keys:0 tracking_total_items:0 tracking_total_prefixes:0" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("after OFF and a disconnection: %s", got)
		}
	}
	do(w, "MSET a 1 b 1 c 1 d 1 e 1")
	if r := do(c3, "PING"); r != "+PONG\r\n" {
		t.Fatalf("an invalidation after OFF: %q", r)
	}
}

// TestTrackingWritesMatchRedis: which writes invalidate which keys, as redis-server 7 sends them: a change of any
// kind (EXPIRE, PERSIST, APPEND, list, set, hash and sorted-set writes, GETDEL, UNLINK, MOVE, COPY's target,
// RENAME's source and target, a script's write), and none for what changes nothing (SADD of a member there, DEL of
// a missing key, SET NX of an existing key, EXPIRE of a missing key, HDEL of a missing field) or only reads.
func TestTrackingWritesMatchRedis(t *testing.T) {
	sameAsRedis(t, writesTranscript)
}

// writesTranscript has a RESP3 connection track a set of keys and, after each of a list of writes by another
// connection, report the keys whose invalidations it got (up to a sentinel key's, written after).
func writesTranscript(t *testing.T, addr string) []string {
	w, t3 := dialRaw(t, addr), dialRaw(t, addr)
	do := func(rc *rawConn, cmd string) string { rc.send(cmd + "\r\n"); return rc.reply() }
	for _, c := range []string{"FLUSHALL", "MSET s 1 p 1 a 1 g 1 u 1 m 1 c 1 r 1 n 1", "SADD set x", "RPUSH l x",
		"HSET h f v", "ZADD z 1 x", "HELLO 3", "CLIENT TRACKING ON"} {
		rc := w
		if c == "HELLO 3" || c == "CLIENT TRACKING ON" {
			rc = t3
		}
		do(rc, c)
	}
	var out []string
	for i, c := range []string{"EXPIRE s 100", "PERSIST s", "APPEND a x", "LPUSH l y", "SADD set x", "SADD set y",
		"HDEL h nosuch", "HSET h f w", "ZADD z 1 x", "ZINCRBY z 1 x", "GETDEL g", "UNLINK u", "MOVE m 1",
		"COPY c c2", "RENAME r n", "DEL nosuch", "SET s 2 NX", "EXPIRE nosuch 10", "GET s",
		"EVAL \"return redis.call('incr', KEYS[1])\" 1 p"} {
		for _, r := range []string{"MGET s p a g u m c c2 r n nosuch sentinel", "SCARD set", "LLEN l", "HLEN h", "ZCARD z"} {
			do(t3, r)
		}
		reply := do(w, c)
		do(w, "SET sentinel "+itoa(int64(i)))
		var keys []string
		for {
			r := t3.reply()
			k := r[strings.LastIndex(r[:len(r)-2], "\n")+1 : len(r)-2]
			if k == "sentinel" {
				break
			}
			keys = append(keys, k)
		}
		out = append(out, c+" -> "+strings.TrimSpace(reply)+" invalidates "+strings.Join(keys, " "))
	}
	return out
}
