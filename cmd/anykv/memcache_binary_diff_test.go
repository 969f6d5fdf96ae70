package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"anykv/internal/engine/remote/remotetest"
	"anykv/internal/servertest"
)

// TestMemcacheBinaryMatchesMemcached is TestMemcacheMatchesMemcached for the binary protocol: the same random
// pipelines of binary requests over five keys (get/getq/getk/getkq, set/add/replace and their quiet variants
// with and without a CAS, append/prepend(q), delete(q), incr/decr(q) with initial values and the "do not create"
// expiry, touch, gat/gatq/gatk/gatkq, noop, version, flush(q) without delay) go to anykv and to memcached 1.6,
// each pipeline ending in a noop so that what the quiet requests leave unanswered is compared too, and every
// response is compared field by field: magic, opcode, status, data type, opaque, extras, key and value. CAS
// values are compared as zero or not; a request's CAS is the token that server last returned for the key.
func TestMemcacheBinaryMatchesMemcached(t *testing.T) {
	real := strings.TrimPrefix(remotetest.Start(t, "memcached"), "memcache://")
	s := servertest.Start(t, servertest.Options{Memcache: true})
	a, b := dialMemcacheBinary(t, s.Memcache), dialMemcacheBinary(t, real)
	first, seeds, steps := diffRange("ANYKV_MCB", 100, 80) // (ANYKV_MCB_SEEDS=3000 to hunt: two minutes)
	for seed := first; seed < first+seeds; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		numbered := map[string]bool{}
		flush := []mcbReq{{op: 0x08, opaque: 1}, {op: 0x0a, opaque: 2}}
		for _, c := range []*mcbConn{a, b} {
			c.tokens = map[string]uint64{}
			if out := c.exchange(t, flush, numbered); out != "op=08 st=0000 opq=1 | op=0a st=0000 opq=2" {
				t.Fatalf("seed %d: flush: %s", seed, out)
			}
		}
		var history []string
		for step := range steps {
			reqs := mcbPipeline(rng, numbered)
			ra, rb := a.exchange(t, reqs, numbered), b.exchange(t, reqs, numbered)
			var sent []string
			for _, r := range reqs {
				sent = append(sent, r.String())
			}
			history = append(history, strings.Join(sent, "; ")+"\n    →  "+ra)
			if ra != rb {
				t.Fatalf("seed %d step %d: %s\n  anykv:     %s\n  memcached: %s\nhistory (the last 12 steps):\n  %s", seed, step,
					strings.Join(sent, "; "), ra, rb, strings.Join(history[max(0, len(history)-12):], "\n  "))
			}
			b.settle(reqs, numbered)
		}
	}
	t.Logf("%d seeds of %d steps; responses by opcode and status: %v", seeds, steps, b.seen)
}

// Binary opcodes the test sends, by name (their quiet and K variants included).
var mcbNames = map[byte]string{
	0x00: "get", 0x01: "set", 0x02: "add", 0x03: "replace", 0x04: "delete", 0x05: "incr", 0x06: "decr",
	0x08: "flush", 0x09: "getq", 0x0a: "noop", 0x0b: "version", 0x0c: "getk", 0x0d: "getkq", 0x0e: "append",
	0x0f: "prepend", 0x11: "setq", 0x12: "addq", 0x13: "replaceq", 0x14: "deleteq", 0x15: "incrq", 0x16: "decrq",
	0x18: "flushq", 0x19: "appendq", 0x1a: "prependq", 0x1c: "touch", 0x1d: "gat", 0x1e: "gatq", 0x23: "gatk",
	0x24: "gatkq",
}

// mcbQuiet holds the quiet opcodes: answered only on failure (the gets: only on a hit).
var mcbQuiet = map[byte]bool{0x09: true, 0x0d: true, 0x11: true, 0x12: true, 0x13: true, 0x14: true, 0x15: true,
	0x16: true, 0x18: true, 0x19: true, 0x1a: true, 0x1e: true, 0x24: true}

// mcbReq is one binary request; its CAS is bound per server (cas: "" for 0, "token" for the server's last
// token of the key, "bogus" for a CAS no item has).
type mcbReq struct {
	op     byte
	key    string
	extras []byte
	value  string
	cas    string
	opaque uint32
}

func (r mcbReq) String() string {
	s := fmt.Sprintf("%s opq=%d", mcbNames[r.op], r.opaque)
	if r.key != "" {
		s += " " + r.key
	}
	if len(r.extras) > 0 {
		s += fmt.Sprintf(" ext=%x", r.extras)
	}
	if r.cas != "" {
		s += " cas=" + r.cas
	}
	if r.value != "" || r.op == 0x01 || r.op == 0x11 {
		s += " " + strconv.Quote(r.value)
	}
	return s
}

// mcbBase is the opcode without its quiet or K variant.
func mcbBase(op byte) byte {
	switch op {
	case 0x09, 0x0c, 0x0d:
		return 0x00
	case 0x11, 0x12, 0x13, 0x14, 0x15, 0x16:
		return op - 0x10
	case 0x18:
		return 0x08
	case 0x19, 0x1a:
		return op - 0x0b
	case 0x1e, 0x23, 0x24:
		return 0x1d
	}
	return op
}

// mcbPipeline draws one to four requests and the noop that ends them, each with an opaque of its own.
func mcbPipeline(rng *rand.Rand, numbered map[string]bool) []mcbReq {
	var reqs []mcbReq
	used := map[uint32]bool{}
	opaque := func() uint32 {
		for {
			if o := rng.Uint32(); !used[o] {
				used[o] = true
				return o
			}
		}
	}
	touched := map[string]bool{}
	for range 1 + rng.IntN(4) {
		r := mcbCommand(rng, numbered)
		r.opaque = opaque()
		if r.cas == "token" && touched[r.key] {
			// anykv gives a touched item a new CAS, memcached keeps it (documented: docs/memcache.md, "Other
			// deviations"): the token read before a touch earlier in the pipeline is stale to anykv only. (A
			// touch's own response carries the new one, which exchange remembers for the next pipeline.)
			r.cas = "bogus"
		}
		if b := mcbBase(r.op); b == 0x1c || b == 0x1d {
			touched[r.key] = true
		}
		reqs = append(reqs, r)
	}
	return append(reqs, mcbReq{op: 0x0a, opaque: opaque()})
}

// mcbCommand draws one request over five keys. A key an incr or decr may have written is marked in numbered
// until a store or delete replaces it (settle).
func mcbCommand(rng *rand.Rand, numbered map[string]bool) mcbReq {
	k := "k" + strconv.Itoa(rng.IntN(5))
	values := []string{"", "a", "hello", "0", "1", "41", "12abc", "-1", "99999999999999999999", "x-y"}
	val := func() string { return values[rng.IntN(len(values))] }
	flags := func() uint32 { return []uint32{0, 1, 42, 0xffffffff}[rng.IntN(4)] }
	// 2592001 is past 30 days, so a unix time: one in 1970, already expired. (No short TTL: it would race.)
	exp := func() uint32 { return []uint32{0, 0, 100000, 2592001}[rng.IntN(4)] }
	cas := func() string {
		switch rng.IntN(5) {
		case 0, 1:
			return "token"
		case 2:
			return "bogus"
		}
		return ""
	}
	ignoredCAS := func() string {
		if rng.IntN(8) == 0 {
			return "bogus"
		}
		return ""
	}
	quiet := rng.IntN(3) == 0
	op := func(loud, q byte) byte {
		if quiet {
			return q
		}
		return loud
	}
	u32 := func(vs ...uint32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.BigEndian.AppendUint32(b, v)
		}
		return b
	}
	switch rng.IntN(22) {
	case 0, 1, 2:
		return mcbReq{op: op(0x01, 0x11), key: k, extras: u32(flags(), exp()), value: val(), cas: cas()}
	case 3:
		return mcbReq{op: op(0x02, 0x12) + byte(rng.IntN(2)), key: k, extras: u32(flags(), exp()), value: val(),
			cas: cas()}
	case 4:
		if numbered[k] {
			// memcached pads a number an incr or decr shrank with spaces (documented: docs/memcache.md, "Other
			// deviations"), which an append or prepend then keeps inside the value and a later incr reads as
			// the end of the number: no append or prepend to such a key.
			return mcbReq{op: op(0x00, 0x09), key: k}
		}
		return mcbReq{op: op(0x0e, 0x19) + byte(rng.IntN(2)), key: k, value: val(), cas: cas()}
	case 5, 6, 7: // (a CAS on a get, touch or flush is ignored)
		return mcbReq{op: []byte{0x00, 0x09, 0x0c, 0x0d}[rng.IntN(4)], key: k, cas: ignoredCAS()}
	case 8:
		return mcbReq{op: op(0x04, 0x14), key: k, cas: cas()}
	case 9, 10, 11:
		numbered[k] = true
		// No delta or initial value that stores a number of 2^63 or more (see mcCommand: memcached 1.6.18 reads
		// such a number past its bytes); a decr may take any delta, it floors at 0.
		delta := []uint64{0, 1, 5, 100, 1 << 40}[rng.IntN(5)]
		if rng.IntN(2) == 0 {
			delta = []uint64{1, 100, 1<<64 - 1}[rng.IntN(3)]
			quiet = quiet || rng.IntN(4) == 0
			r := mcbReq{op: op(0x06, 0x16), key: k}
			r.extras, r.cas = mcbIncrExtras(rng, delta)
			return r
		}
		r := mcbReq{op: op(0x05, 0x15), key: k}
		r.extras, r.cas = mcbIncrExtras(rng, delta)
		return r
	case 12, 13:
		return mcbReq{op: 0x1c, key: k, extras: u32(exp()), cas: ignoredCAS()}
	case 14, 15:
		return mcbReq{op: []byte{0x1d, 0x1e, 0x23, 0x24}[rng.IntN(4)], key: k, extras: u32(exp()), cas: ignoredCAS()}
	case 16:
		return mcbReq{op: 0x0a}
	case 17:
		return mcbReq{op: 0x0b}
	case 18:
		if rng.IntN(4) == 0 {
			r := mcbReq{op: op(0x08, 0x18), cas: ignoredCAS()}
			if rng.IntN(2) == 0 {
				r.extras = u32(0) // a delay of 0: at once
			}
			return r
		}
		return mcbReq{op: 0x0c, key: k}
	default:
		return mcbReq{op: op(0x01, 0x11), key: k, extras: u32(flags(), exp()), value: val()}
	}
}

// mcbIncrExtras draws an incr or decr's extras (delta, initial value, expiry; all ones: do not create) and CAS.
func mcbIncrExtras(rng *rand.Rand, delta uint64) ([]byte, string) {
	initial := []uint64{0, 1, 41, 1 << 40}[rng.IntN(4)]
	exp := []uint32{0, 100000, 2592001, 0xffffffff, 0xffffffff}[rng.IntN(5)]
	cas := ""
	// A CAS only with "do not create": with a CAS, anykv answers Not found on a missing key that the request may
	// create, where memcached creates it (documented: docs/memcache.md, the binary protocol's deviations).
	if exp == 0xffffffff && rng.IntN(3) == 0 {
		cas = []string{"token", "bogus"}[rng.IntN(2)]
	}
	e := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, delta), initial)
	return binary.BigEndian.AppendUint32(e, exp), cas
}

// mcbConn is a binary-protocol connection to one server, with the CAS it last returned for each key.
type mcbConn struct {
	c      net.Conn
	r      *bufio.Reader
	tokens map[string]uint64
	last   map[uint32]mcbResp // the responses of the last exchange, by opaque
	seen   map[string]int     // responses by opcode and status, for the log
}

// mcbResp is what settle needs of a response.
type mcbResp struct{ status uint16 }

func dialMemcacheBinary(t *testing.T, addr string) *mcbConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &mcbConn{c: c, r: bufio.NewReader(c), tokens: map[string]uint64{}, seen: map[string]int{}}
}

// encode is a request with this server's CAS for it.
func (m *mcbConn) encode(r mcbReq) []byte {
	var cas uint64
	switch r.cas {
	case "token":
		cas = m.tokens[r.key]
		if cas == 0 {
			cas = 987654321 // none read: a bogus one
		}
	case "bogus":
		cas = 987654321
	}
	h := make([]byte, 24)
	h[0], h[1] = 0x80, r.op
	binary.BigEndian.PutUint16(h[2:], uint16(len(r.key)))
	h[4] = byte(len(r.extras))
	binary.BigEndian.PutUint32(h[8:], uint32(len(r.extras)+len(r.key)+len(r.value)))
	binary.BigEndian.PutUint32(h[12:], r.opaque)
	binary.BigEndian.PutUint64(h[16:], cas)
	return append(append(append(h, r.extras...), r.key...), r.value...)
}

// exchange sends the pipeline (whose last request is a noop) and returns the responses up to the noop's,
// rendered field by field, one " | " apart; it remembers the CAS of each response for its request's key.
func (m *mcbConn) exchange(t *testing.T, reqs []mcbReq, numbered map[string]bool) string {
	t.Helper()
	byOpaque := map[uint32]mcbReq{}
	var out []byte
	for _, r := range reqs {
		byOpaque[r.opaque] = r
		out = append(out, m.encode(r)...)
	}
	m.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := m.c.Write(out); err != nil {
		t.Fatal(err)
	}
	m.last = map[uint32]mcbResp{}
	var rendered []string
	end := reqs[len(reqs)-1].opaque
	for {
		var hdr [24]byte
		if _, err := io.ReadFull(m.r, hdr[:]); err != nil {
			t.Fatalf("reading a response to %v: %v (so far %q)", reqs, err, rendered)
		}
		kl, el, bl := int(binary.BigEndian.Uint16(hdr[2:])), int(hdr[4]), int(binary.BigEndian.Uint32(hdr[8:]))
		body := make([]byte, bl)
		if _, err := io.ReadFull(m.r, body); err != nil {
			t.Fatalf("reading a response body to %v: %v", reqs, err)
		}
		if el+kl > bl {
			t.Fatalf("response header %x: extras and key longer than the body", hdr)
		}
		op, status, opaque := hdr[1], binary.BigEndian.Uint16(hdr[6:]), binary.BigEndian.Uint32(hdr[12:])
		cas := binary.BigEndian.Uint64(hdr[16:])
		req, ok := byOpaque[opaque]
		if ok {
			m.last[opaque] = mcbResp{status: status}
			if cas != 0 && req.key != "" {
				m.tokens[req.key] = cas
			}
		}
		m.seen[fmt.Sprintf("%s:%x", mcbNames[op], status)]++
		ext, key, val := body[:el], body[el:el+kl], string(body[el+kl:])
		if b := mcbBase(op); (b == 0x00 || b == 0x1d) && numbered[req.key] && status == 0 {
			// memcached pads a number an incr or decr shrank with spaces (documented: docs/memcache.md, "Other
			// deviations"); the values drawn hold no spaces, and no append follows an incr (mcbCommand)
			val = strings.TrimRight(val, " ")
		}
		if mcbBase(op) == 0x0b && status == 0 && val != "" {
			val = "VERSION" // each server's own: compared by kind
		}
		s := fmt.Sprintf("op=%02x st=%04x opq=%d", op, status, opaque)
		if hdr[0] != 0x81 {
			s = fmt.Sprintf("magic=%02x ", hdr[0]) + s
		}
		if hdr[5] != 0 {
			s += fmt.Sprintf(" type=%02x", hdr[5])
		}
		if cas != 0 {
			s += " cas"
		}
		if len(ext) > 0 {
			s += fmt.Sprintf(" ext=%x", ext)
		}
		if len(key) > 0 {
			s += fmt.Sprintf(" key=%q", key)
		}
		if len(val) > 0 {
			s += fmt.Sprintf(" val=%q", val)
		}
		rendered = append(rendered, s)
		if opaque == end && op == 0x0a {
			return strings.Join(rendered, " | ")
		}
	}
}

// settle updates numbered from the outcome of the last exchange (the servers agreed on it), in request order:
// an incr or decr may write a number, a store or delete that succeeded replaces it, a flush every key's.
func (m *mcbConn) settle(reqs []mcbReq, numbered map[string]bool) {
	for _, r := range reqs {
		resp, answered := m.last[r.opaque]
		ok := answered && resp.status == 0 || !answered && mcbQuiet[r.op]
		switch mcbBase(r.op) {
		case 0x01, 0x02, 0x03, 0x04:
			if ok {
				delete(numbered, r.key)
			}
		case 0x05, 0x06: // (marked when drawn too, for the rest of its pipeline)
			numbered[r.key] = true
		case 0x08:
			if ok {
				clear(numbered)
			}
		}
	}
}

// diffRange is a differential test's seeds and steps: n seeds from 0 of the given steps each, unless the
// environment says otherwise (prefix_FIRST, prefix_SEEDS, prefix_STEPS), to hunt over new seeds or longer
// histories by hand.
func diffRange(prefix string, n, steps int) (first, seeds, length int) {
	first, seeds, length = 0, n, steps
	for _, v := range []struct {
		name string
		to   *int
	}{{"_FIRST", &first}, {"_SEEDS", &seeds}, {"_STEPS", &length}} {
		if x, err := strconv.Atoi(os.Getenv(prefix + v.name)); err == nil {
			*v.to = x
		}
	}
	return first, seeds, length
}
