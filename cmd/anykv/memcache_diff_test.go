package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine/remote/remotetest"
	"anykv/internal/servertest"
)

// TestMemcacheMatchesMemcached sends the same random sequences of memcached text and meta commands (storage
// commands, cas with each server's own tokens, get/gets/gat/gats, delete, incr/decr over numbers, texts and the
// 64-bit edge, touch, mg/ms/md/ma/mn with their flags and modes) to anykv and to memcached 1.6, and compares every
// reply; the compare-and-set tokens and remaining TTLs, which differ by design, are compared by kind only.
func TestMemcacheMatchesMemcached(t *testing.T) {
	real := strings.TrimPrefix(remotetest.Start(t, "memcached"), "memcache://")
	s := servertest.Start(t, servertest.Options{Memcache: true})
	a, b := dialMemcache(t, s.Memcache), dialMemcache(t, real)
	first, seeds, steps := diffRange("ANYKV_MC", 100, 80) // (1,500 seeds pass too: a minute)
	for seed := first; seed < first+seeds; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		for _, c := range []*mcConn{a, b} {
			c.do(t, "flush_all\r\n")
			c.tokens = map[string]string{}
		}
		var history []string
		for step := range steps {
			req := mcCommand(rng, "")
			if f := strings.Fields(req); (f[0] == "incr" || f[0] == "ma") && b.padded(t, f[1]) {
				break // the rest of this sequence would read memcached's padding: a documented deviation (padded)
			}
			ra, rb := a.do(t, a.bind(req)), b.do(t, b.bind(req))
			history = append(history, strings.TrimSpace(req)+"  →  "+ra)
			forgetTouched(req, a, b)
			if ra != rb {
				t.Fatalf("seed %d step %d: %q\n  anykv:     %q\n  memcached: %q\nhistory:\n  %s", seed, step, req, ra, rb,
					strings.Join(history, "\n  "))
			}
		}
	}
}

// padded reports whether the server holds k's value with a space in it: memcached pads a number an incr shrank
// (a leading zero gone: "0100" became "101 ") and a later append keeps the space inside the value ("101 -1"),
// which memcached's strtoull then reads as 101 and anykv as no number (docs/memcache.md's deviations). The
// generated values hold no spaces, so only that padding puts one there. mg with v alone changes nothing.
func (m *mcConn) padded(t *testing.T, k string) bool {
	t.Helper()
	m.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := m.c.Write([]byte("mg " + k + " v\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := m.r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(line, "VA ") {
		return false
	}
	data, err := m.r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(strings.TrimRight(data, "\r\n"), " ")
}

// forgetTouched makes the clients forget the token of a key req touches: anykv gives a touched item a new CAS
// unique, memcached keeps it (a documented deviation), so both clients' next cas of it sends a bogus one.
func forgetTouched(req string, conns ...*mcConn) {
	f := strings.Fields(req)
	if f[0] != "touch" && f[0] != "gat" {
		return
	}
	k := f[1]
	if f[0] == "gat" {
		k = f[2]
	}
	for _, c := range conns {
		delete(c.tokens, k)
	}
}

// mcConn is a connection to one server, with the cas tokens it last read for each key.
type mcConn struct {
	c      net.Conn
	r      *bufio.Reader
	tokens map[string]string
}

func dialMemcache(t *testing.T, addr string) *mcConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &mcConn{c: c, r: bufio.NewReader(c), tokens: map[string]string{}}
}

var (
	mcToken = regexp.MustCompile(`\$TOKEN\(([^)]*)\)`)
	mcCas   = regexp.MustCompile(`^(VALUE \S+ \d+ \d+) (\d+)$`)
)

// bind puts this server's last cas token of a key where the request says $TOKEN(key) (a bogus one if it read none).
func (m *mcConn) bind(req string) string {
	return mcToken.ReplaceAllStringFunc(req, func(s string) string {
		if tok, ok := m.tokens[mcToken.FindStringSubmatch(s)[1]]; ok {
			return tok
		}
		return "987654321"
	})
}

// do sends req and returns its reply, normalized: cas tokens (remembered for bind) and remaining TTLs by kind.
func (m *mcConn) do(t *testing.T, req string) string {
	t.Helper()
	out, err := m.try(req)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// try is do, returning a failure of the connection.
func (m *mcConn) try(req string) (string, error) {
	m.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := m.c.Write([]byte(req)); err != nil {
		return "", err
	}
	if strings.Contains(strings.SplitN(req, "\r\n", 2)[0], " noreply") {
		req = "mn\r\n" // nothing comes back: read up to a no-op's MN instead
		if _, err := m.c.Write([]byte(req)); err != nil {
			return "", err
		}
	}
	var out []string
	for {
		line, err := m.r.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("reading the reply to %q: %w (so far %q)", req, err, out)
		}
		line = strings.TrimRight(line, "\r\n")
		f := strings.Fields(line)
		switch {
		case mcCas.MatchString(line): // gets/gats: VALUE key flags bytes cas
			sub := mcCas.FindStringSubmatch(line)
			m.tokens[f[1]] = sub[2]
			line = sub[1] + " CAS"
		case len(f) > 0 && (f[0] == "VA" || f[0] == "HD" || f[0] == "EN" || f[0] == "NF" || f[0] == "NS" || f[0] == "EX"):
			line = m.metaFlags(req, f)
		}
		if len(f) > 0 && (f[0] == "VALUE" || f[0] == "VA") {
			data, err := m.r.ReadString('\n')
			if err != nil {
				return "", err
			}
			data = strings.TrimRight(data, "\r\n")
			if trimmed := strings.ReplaceAll(data, " ", ""); trimmed != data {
				// memcached pads a number incr/decr shrank with spaces, which an append then keeps inside the value
				// (a documented deviation): compare without them
				line = unpad(line, len(data), len(trimmed))
				data = trimmed
			}
			out = append(out, line, data)
		} else {
			out = append(out, line)
		}
		if len(f) == 0 || f[0] != "VALUE" {
			return strings.Join(out, " | "), nil
		}
	}
}

// unpad writes a reply line's sizes of a value of n bytes (VALUE's bytes, VA's size, the s flag) as m.
func unpad(line string, n, m int) string {
	f := strings.Fields(line)
	for i, x := range f {
		if (i == 1 && f[0] == "VA" || i == 3 && f[0] == "VALUE") && x == strconv.Itoa(n) {
			f[i] = strconv.Itoa(m)
		} else if f[0] == "VA" && x == "s"+strconv.Itoa(n) {
			f[i] = "s" + strconv.Itoa(m)
		}
	}
	return strings.Join(f, " ")
}

// metaFlags normalizes a meta reply's flags: c<token> (remembered for the request's key) and t<seconds>.
func (m *mcConn) metaFlags(req string, f []string) string {
	key := ""
	if rf := strings.Fields(req); len(rf) > 1 {
		key = rf[1]
	}
	for i, fl := range f[1:] {
		switch {
		case len(fl) > 1 && fl[0] == 'c' && fl[1] >= '0' && fl[1] <= '9':
			m.tokens[key] = fl[1:]
			f[i+1] = "cTOKEN"
		case len(fl) > 1 && fl[0] == 't' && fl != "t-1":
			f[i+1] = "tTTL"
		case len(fl) > 1 && fl[0] == 's' && f[0] != "VA":
			f[i+1] = "sSIZE" // without the value, memcached's padding of a shrunk number cannot be told apart
		}
	}
	return strings.Join(f, " ")
}

// mcCommand draws one request (with its data block) over five keys, named prefix + k0..k4.
func mcCommand(rng *rand.Rand, prefix string) string {
	key := func() string { return prefix + "k" + strconv.Itoa(rng.IntN(5)) }
	// No stored number of 2^63 or more: memcached 1.6.18 then looks for a '-' with strchr in the item's bytes,
	// which are not NUL-terminated, and answers non-numeric or not by what follows them in its memory.
	values := []string{"", "a", "hello", "0", "1", "41", "12abc", "-1", "99999999999999999999",
		"x-y"} // (no spaces, no leading zeros: an incr that shrinks a number is padded, see do)
	val := func() string { return values[rng.IntN(len(values))] }
	flags := func() string { return []string{"0", "1", "42", "4294967295"}[rng.IntN(4)] }
	exp := func() string { return []string{"0", "0", "100000", "-1"}[rng.IntN(4)] }
	num := func() string {
		return []string{"0", "1", "5", "100", "18446744073709551616", "-3", "x"}[rng.IntN(7)]
	}
	noreply := func() string {
		if rng.IntN(8) == 0 {
			return " noreply"
		}
		return ""
	}
	pick := func(oneIn int, flags ...string) string { // each flag with a chance of 1 in oneIn
		var out []string
		for _, f := range flags {
			if rng.IntN(oneIn) == 0 {
				out = append(out, f)
			}
		}
		return strings.Join(out, " ")
	}
	store := func(cmd, k string, extra string) string {
		v := val()
		return fmt.Sprintf("%s %s %s %s %d%s%s\r\n%s\r\n", cmd, k, flags(), exp(), len(v), extra, noreply(), v)
	}
	k := key()
	switch rng.IntN(24) {
	case 0, 1, 2:
		return store("set", k, "")
	case 3:
		return store([]string{"add", "replace"}[rng.IntN(2)], k, "")
	case 4:
		return store([]string{"append", "prepend"}[rng.IntN(2)], k, "")
	case 5:
		return store("cas", k, " $TOKEN("+k+")")
	case 6:
		return fmt.Sprintf("get %s %s\r\n", k, key())
	case 7:
		return fmt.Sprintf("gets %s %s\r\n", k, key())
	case 8:
		return fmt.Sprintf("delete %s%s\r\n", k, noreply())
	case 9, 10:
		// (no decr: memcached pads a number it shrank with spaces, which later appends and increments read
		// differently, a documented deviation; the transcripts cover decr)
		return fmt.Sprintf("incr %s %s%s\r\n", k, num(), noreply())
	case 11:
		return fmt.Sprintf("touch %s %s%s\r\n", k, exp(), noreply())
	case 12:
		return fmt.Sprintf("%s %s %s\r\n", []string{"gat", "gats"}[rng.IntN(2)], exp(), k)
	case 13, 14:
		// (h and l are refused: docs/memcache.md)
		return fmt.Sprintf("mg %s %s\r\n", k, pick(2, "v", "f", "s", "k", "t", "c", "O123"))
	case 15, 16:
		v := val()
		// (no I: a stale item's marks differ after an incr, a documented deviation; the transcripts cover them)
		return fmt.Sprintf("ms %s %d %s\r\n%s\r\n", k, len(v),
			pick(4, "F"+flags(), "T"+exp(), "MS", "ME", "MA", "MP", "MR", "C$TOKEN("+k+")", "c"), v)
	case 17:
		return fmt.Sprintf("md %s %s\r\n", k, pick(4, "T30", "C$TOKEN("+k+")", "O7"))
	case 18, 19:
		return fmt.Sprintf("ma %s %s\r\n", k, pick(3, "MI", "D"+num(), "N0", "J"+num(), "v", "t", "c"))
	case 20:
		return "mn\r\n"
	case 21:
		return fmt.Sprintf("get %s\r\n", k)
	default:
		return store("set", k, "")
	}
}

// TestMemcacheKillKeepsAcknowledged is the kill -9 test of the memcached protocol, with memcached as the model:
// eight writers, each on keys of its own, send the random commands above one at a time; anykv is killed with
// SIGKILL in the middle and restarted, and each writer's keys (value, flags, whether they expire) must be
// memcached's after its answered commands, or after those and the one it sent without an answer.
func TestMemcacheKillKeepsAcknowledged(t *testing.T) {
	model := dialMemcache(t, strings.TrimPrefix(remotetest.Start(t, "memcached"), "memcache://"))
	s := servertest.Start(t, servertest.Options{Memcache: true})
	for round := range 3 {
		sent := make([][]string, 8) // per writer, its requests; all but the last were answered
		var wg sync.WaitGroup
		var answered atomic.Int64
		for w := range sent {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := net.Dial("tcp", s.Memcache)
				if err != nil {
					return
				}
				defer c.Close()
				m := &mcConn{c: c, r: bufio.NewReader(c), tokens: map[string]string{}}
				rng := rand.New(rand.NewPCG(uint64(round), uint64(w)))
				for {
					req := mcCommand(rng, fmt.Sprintf("r%dw%d", round, w))
					sent[w] = append(sent[w], req)
					if _, err := m.try(m.bind(req)); err != nil {
						return // the server is gone
					}
					forgetTouched(req, m)
					answered.Add(1)
				}
			}()
		}
		for answered.Load() < 2000 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(rand.IntN(50)) * time.Millisecond)
		s.Kill()
		wg.Wait()
		s.Restart()
		a := dialMemcache(t, s.Memcache)
		for w, reqs := range sent {
			prefix := fmt.Sprintf("r%dw%d", round, w)
			got := mcDump(t, a, prefix)
			model.do(t, "flush_all\r\n")
			model.tokens = map[string]string{}
			for _, req := range reqs[:len(reqs)-1] {
				model.do(t, model.bind(req))
				forgetTouched(req, model)
			}
			want := mcDump(t, model, prefix)
			if got != want {
				model.do(t, model.bind(reqs[len(reqs)-1]))
				if alt := mcDump(t, model, prefix); got != alt {
					t.Fatalf("round %d writer %d: after the kill anykv holds\n  %s\nwhere memcached holds after its %d "+
						"answered requests\n  %s\nor after its unanswered %q too\n  %s", round, w, got, len(reqs)-1, want,
						reqs[len(reqs)-1], alt)
				}
			}
		}
		t.Logf("round %d: %d requests answered before the kill, every writer's keys as memcached's", round, answered.Load())
	}
}

// mcDump reads the five keys of prefix: value, flags and whether the item expires.
func mcDump(t *testing.T, m *mcConn, prefix string) string {
	var out []string
	for i := range 5 {
		out = append(out, m.do(t, fmt.Sprintf("mg %sk%d v f t\r\n", prefix, i)))
	}
	return strings.Join(out, " ; ")
}

// TestMetaHitAndLastAccessMatchMemcached: mg's h (hit before) and l (last access) flags answer as memcached's
// while every fetch is an mg that asks for one of them (the case anykv tracks: docs/memcache.md): h0 on an
// item's first fetch, h1 after, h0 again once the item is rewritten, in the order the flags were asked, EN for a
// miss, an mg with u not counted as a fetch, an mg's T keeping the item's fetch. The seconds of l are compared
// by kind (a second may tick between the two servers' answers).
func TestMetaHitAndLastAccessMatchMemcached(t *testing.T) {
	real := strings.TrimPrefix(remotetest.Start(t, "memcached"), "memcache://")
	s := servertest.Start(t, servertest.Options{Memcache: true})
	a, b := dialMemcache(t, s.Memcache), dialMemcache(t, real)
	seconds := regexp.MustCompile(`\bl[0-9]+\b`)
	for _, req := range []string{
		"flush_all\r\n", "ms a 1\r\nx\r\n", "mg a h l v\r\n", "mg a h l v\r\n", "mg a l h k Oq\r\n",
		"ms a 2\r\nxy\r\n", "mg a h\r\n", "mg a l\r\n", "mg a h\r\n", "mg nokey h l v\r\n", "mg nokey h l q\r\nmn\r\n",
		"ms b 1 T100\r\nz\r\n", "mg b h t v\r\n", "mg b h t\r\n", "md a\r\n", "mg a h l\r\n", "ms a 1\r\nw\r\n",
		"mg a v h\r\n", "ma b\r\n", "set c 0 0 1\r\n1\r\n", "mg c h l f\r\n", "mg c h l f\r\n",
		// u leaves the item unfetched; an mg's own T keeps what the item was fetched (meta-memcache's get with a
		// touch TTL sends mg with T, h and l).
		"ms d 1\r\nx\r\n", "mg d u h l\r\n", "mg d h\r\n", "mg d h\r\n",
		"ms e 1\r\nx\r\n", "mg e h l\r\n", "mg e T30 h l v\r\n", "mg e h\r\n", "mg e T60 h\r\n",
	} {
		ra, rb := a.do(t, req), b.do(t, req)
		ra, rb = seconds.ReplaceAllString(ra, "lN"), seconds.ReplaceAllString(rb, "lN")
		if ra != rb {
			t.Errorf("%q\n  anykv:     %q\n  memcached: %q", req, ra, rb)
		}
	}
}
