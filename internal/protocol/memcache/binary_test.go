package memcache

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/metrics"
)

// binReq encodes a binary-protocol request.
func binReq(op byte, opaque uint32, cas uint64, extras, key, value []byte) []byte {
	h := make([]byte, binaryHeaderLen)
	h[0], h[1] = binaryRequestMagic, op
	binary.BigEndian.PutUint16(h[2:], uint16(len(key)))
	h[4] = byte(len(extras))
	binary.BigEndian.PutUint32(h[8:], uint32(len(extras)+len(key)+len(value)))
	binary.BigEndian.PutUint32(h[12:], opaque)
	binary.BigEndian.PutUint64(h[16:], cas)
	return append(append(append(h, extras...), key...), value...)
}

// u32 and u64 are big-endian extras.
func u32(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

func incrExtras(delta, initial uint64, exp uint32) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, delta), initial), exp)
}

// renderBin decodes binary responses into one line each: "op=.. st=.. opq=.. cas? ext=.. key=.. val=..".
// The CAS is shown as "cas" when not 0, since versions depend on the store's history.
func renderBin(t *testing.T, b []byte) string {
	t.Helper()
	var sb strings.Builder
	for len(b) > 0 {
		if len(b) < binaryHeaderLen || b[0] != binaryResponseMagic {
			t.Fatalf("not a binary response: %x", b)
		}
		kl, el := int(binary.BigEndian.Uint16(b[2:])), int(b[4])
		bl := int(binary.BigEndian.Uint32(b[8:]))
		body := b[binaryHeaderLen : binaryHeaderLen+bl]
		fmt.Fprintf(&sb, "op=%02x st=%x opq=%d", b[1], binary.BigEndian.Uint16(b[6:]), binary.BigEndian.Uint32(b[12:]))
		if binary.BigEndian.Uint64(b[16:]) != 0 {
			sb.WriteString(" cas")
		}
		if el > 0 {
			fmt.Fprintf(&sb, " ext=%x", body[:el])
		}
		if kl > 0 {
			fmt.Fprintf(&sb, " key=%s", body[el:el+kl])
		}
		if v := body[el+kl:]; len(v) > 0 {
			fmt.Fprintf(&sb, " val=%q", v)
		}
		sb.WriteString("\n")
		b = b[binaryHeaderLen+bl:]
	}
	return sb.String()
}

// TestBinaryProtocol runs every binary command memcached 1.6 serves, quiet variants and CAS included, as one
// session (the responses were compared with memcached 1.6.18's, CAS values aside); the same session in 7-byte
// reads must give the same bytes.
func TestBinaryProtocol(t *testing.T) {
	var in bytes.Buffer
	add := func(op byte, cas uint64, extras, key, value []byte) {
		in.Write(binReq(op, uint32(in.Len()%1000), cas, extras, key, value))
	}
	add(opVersion, 0, nil, nil, nil)
	add(opSet, 0, u32(7, 0), []byte("k"), []byte("hello"))
	add(opGet, 0, nil, []byte("k"), nil)
	add(opGetK, 0, nil, []byte("k"), nil)
	add(opGetQ, 0, nil, []byte("missing"), nil) // silent
	add(opGetKQ, 0, nil, []byte("k"), nil)      // a hit is sent
	add(opGet, 0, nil, []byte("missing"), nil)
	add(opGetK, 0, nil, []byte("missing"), nil)
	add(opAdd, 0, u32(0, 0), []byte("k"), []byte("x"))
	add(opReplace, 0, u32(0, 0), []byte("missing"), []byte("x"))
	add(opSetQ, 0, u32(1, 0), []byte("q"), []byte("quiet")) // silent
	add(opAppend, 0, nil, []byte("k"), []byte("!"))
	add(opPrepend, 0, nil, []byte("k"), []byte(">"))
	add(opAppend, 0, nil, []byte("missing"), []byte("!"))
	add(opSet, 1, u32(0, 0), []byte("k"), []byte("cas"))   // CAS 1 is not k's version
	add(opIncr, 0, incrExtras(5, 10, 0), []byte("n"), nil) // created at 10
	add(opIncr, 0, incrExtras(5, 10, 0), []byte("n"), nil)
	add(opDecr, 0, incrExtras(100, 0, 0), []byte("n"), nil)
	add(opIncr, 0, incrExtras(1, 0, 0xffffffff), []byte("nope"), nil) // no create
	add(opIncr, 0, incrExtras(1, 0, 0), []byte("k"), nil)
	add(opIncrQ, 0, incrExtras(1, 0, 0), []byte("n"), nil) // silent
	add(opTouch, 0, u32(100), []byte("k"), nil)
	add(opTouch, 0, u32(100), []byte("missing"), nil)
	add(opGAT, 0, u32(0), []byte("k"), nil)
	add(opGATKQ, 0, u32(0), []byte("missing"), nil) // silent
	add(opDelete, 0, nil, []byte("k"), nil)
	add(opDelete, 0, nil, []byte("k"), nil)
	add(opDeleteQ, 0, nil, []byte("q"), nil) // silent
	add(opVerbosity, 0, u32(1), nil, nil)
	add(opStat, 0, nil, []byte("nope"), nil)
	add(0x50, 0, nil, nil, nil)                                 // unknown
	add(opSASLList, 0, nil, nil, nil)                           // no password: no SASL
	add(opSet, 0, u32(0, 0), []byte("big"), make([]byte, 5000)) // over the 4096-byte limit of serveScript
	add(opFlushQ, 0, nil, nil, nil)
	add(opGet, 0, nil, []byte("n"), nil)
	add(opNoop, 0, nil, nil, nil)
	add(opGet, 0, u32(1), []byte("k"), nil) // extras on a get: invalid, and the connection is closed
	add(opNoop, 0, nil, nil, nil)           // never read
	whole := serveScript(in.Bytes())
	var chunks [][]byte
	for rest := in.Bytes(); len(rest) > 0; rest = rest[min(7, len(rest)):] {
		chunks = append(chunks, rest[:min(7, len(rest))])
	}
	if small := serveScript(chunks...); !bytes.Equal(whole, small) {
		t.Fatalf("7-byte reads differ:\n%s\nwhole:\n%s", renderBin(t, small), renderBin(t, whole))
	}
	want := `op=0b st=0 opq=0 val="1.6.18-anykv-test"
op=01 st=0 opq=24 cas
op=00 st=0 opq=62 cas ext=00000007 val="hello"
op=0c st=0 opq=87 cas ext=00000007 key=k val="hello"
op=0d st=0 opq=143 cas ext=00000007 key=k val="hello"
op=00 st=1 opq=168 val="Not found"
op=0c st=1 opq=199 key=missing
op=02 st=2 opq=230 val="Data exists for key."
op=03 st=1 opq=264 val="Not found"
op=0e st=0 opq=342 cas
op=0f st=0 opq=368 cas
op=0e st=5 opq=394 val="Not stored."
op=01 st=2 opq=426 val="Data exists for key."
op=05 st=0 opq=462 cas val="\x00\x00\x00\x00\x00\x00\x00\n"
op=05 st=0 opq=507 cas val="\x00\x00\x00\x00\x00\x00\x00\x0f"
op=06 st=0 opq=552 cas val="\x00\x00\x00\x00\x00\x00\x00\x00"
op=05 st=1 opq=597 val="Not found"
op=05 st=6 opq=645 val="Non-numeric server-side value for incr or decr"
op=1c st=0 opq=735 cas ext=00000007
op=1c st=1 opq=764 val="Not found"
op=1d st=0 opq=799 cas ext=00000007 val=">hello!"
op=04 st=0 opq=863
op=04 st=1 opq=888 val="Not found"
op=1b st=81 opq=938 val="Unknown command"
op=10 st=1 opq=966 val="Not found"
op=50 st=81 opq=994 val="Unknown command"
op=20 st=81 opq=18 val="Unknown command"
op=01 st=3 opq=42 val="Too large."
op=00 st=1 opq=101 val="Not found"
op=0a st=0 opq=126
op=00 st=4 opq=150 val="Invalid arguments"
`
	if got := renderBin(t, whole); got != want {
		t.Fatalf("responses:\n%s\nwant:\n%s", got, want)
	}
}

// TestBinaryAddWithCASIsACompareAndSwap: memcached 1.6 makes any store that carries a CAS a compare-and-swap,
// add included: on a missing key it is Not found (anykv stored it), on a key of another version Data exists.
func TestBinaryAddWithCASIsACompareAndSwap(t *testing.T) {
	var in bytes.Buffer
	in.Write(binReq(opAdd, 1, 12345, u32(0, 0), []byte("missing"), []byte("v")))
	in.Write(binReq(opGet, 2, 0, nil, []byte("missing"), nil))
	in.Write(binReq(opSet, 3, 0, u32(0, 0), []byte("k"), []byte("v")))
	in.Write(binReq(opAdd, 4, 12345, u32(0, 0), []byte("k"), []byte("w")))
	want := `op=02 st=1 opq=1 val="Not found"
op=00 st=1 opq=2 val="Not found"
op=01 st=0 opq=3 cas
op=02 st=2 opq=4 val="Data exists for key."
`
	if got := renderBin(t, serveScript(in.Bytes())); got != want {
		t.Fatalf("responses:\n%s\nwant:\n%s", got, want)
	}
}

// TestBinarySASL checks SASL PLAIN when a password is set: only the SASL commands and version are served
// before it (anything else is refused and the connection closed), a wrong password is refused, the right one
// authenticates.
func TestBinarySASL(t *testing.T) {
	ts := startServer(t, withPassword("s3cret pw"))
	if got, want := binaryUntilClose(t, dial(t, ts.addr), append(binReq(opGet, 1, 0, nil, []byte("k"), nil),
		binReq(opVersion, 2, 0, nil, nil, nil)...)), "op=00 st=20 opq=1 val=\"Auth failure.\"\n"; got != want {
		t.Fatalf("got\n%swant\n%s", got, want)
	}
	cl := dial(t, ts.addr)
	exchange := func(req []byte, want string) { t.Helper(); binExchange(t, cl, req, want) }
	exchange(binReq(opVersion, 2, 0, nil, nil, nil), "op=0b st=0 opq=2 val=\"1.6.18-anykv\"\n")
	exchange(binReq(opSASLList, 3, 0, nil, nil, nil), "op=20 st=0 opq=3 val=\"PLAIN\"\n")
	exchange(binReq(opSASLAuth, 4, 0, nil, []byte("PLAIN"), []byte("\x00alice\x00wrong")),
		"op=21 st=20 opq=4 val=\"Auth failure.\"\n")
	exchange(binReq(opSASLAuth, 5, 0, nil, []byte("PLAIN"), []byte("\x00alice\x00s3cret pw")),
		"op=21 st=0 opq=5 val=\"Authenticated\"\n")
	exchange(binReq(opSet, 6, 0, u32(0, 0), []byte("k"), []byte("v")), "op=01 st=0 opq=6 cas\n")
	exchange(binReq(opGetK, 7, 0, nil, []byte("k"), nil), "op=0c st=0 opq=7 cas ext=00000000 key=k val=\"v\"\n")
}

// binExchange sends req and reads until as many responses as want has lines came, which must render as want.
func binExchange(t *testing.T, cl *client, req []byte, want string) {
	t.Helper()
	if _, err := cl.c.Write(req); err != nil {
		t.Fatal(err)
	}
	cl.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var out []byte
	for {
		buf := make([]byte, 4096)
		n, err := cl.c.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			t.Fatalf("read: %v after %x", err, out)
		}
		if got := renderBin(t, out); strings.Count(got, "\n") >= strings.Count(want, "\n") {
			if got != want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, want)
			}
			return
		}
	}
}

// TestBinaryTooLargeNeedsAuth: a store too large for the item limit makes memcached drop the stored item; from
// a client that has not authenticated it is an auth failure like any other write, and the item stays.
func TestBinaryTooLargeNeedsAuth(t *testing.T) {
	ts := startServer(t, withPassword("s3cret pw"), func(o *Options, _ *kv.Options) { o.MaxItemSize = 4096 })
	owner := dial(t, ts.addr)
	binExchange(t, owner, binReq(opSASLAuth, 1, 0, nil, []byte("PLAIN"), []byte("\x00alice\x00s3cret pw")),
		"op=21 st=0 opq=1 val=\"Authenticated\"\n")
	binExchange(t, owner, binReq(opSet, 2, 0, u32(0, 0), []byte("victim"), []byte("precious")), "op=01 st=0 opq=2 cas\n")
	stranger := dial(t, ts.addr)
	big := bytes.Repeat([]byte("x"), 5000) // over the test server's 4096-byte items
	binExchange(t, stranger, binReq(opSet, 3, 0, u32(0, 0), []byte("victim"), big), "op=01 st=20 opq=3 val=\"Auth failure.\"\n")
	binExchange(t, owner, binReq(opGetK, 4, 0, nil, []byte("victim"), nil),
		"op=0c st=0 opq=4 cas ext=00000000 key=victim val=\"precious\"\n")
}

// TestBinaryStatsAndClose checks stat (one response per figure, an empty one last) and that a byte other
// than the request magic where a header should start closes the connection.
func TestBinaryStatsAndClose(t *testing.T) {
	ts := startServer(t)
	cl := dial(t, ts.addr)
	if _, err := cl.c.Write(append(binReq(opStat, 9, 0, nil, []byte("settings"), nil), "junk that is not a header"...)); err != nil {
		t.Fatal(err)
	}
	cl.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	out, err := io.ReadAll(cl.c)
	if err != nil {
		t.Fatal(err)
	}
	got := renderBin(t, out)
	for _, want := range []string{"key=binding_protocol val=\"auto-negotiate\"\n", "key=auth_enabled_sasl val=\"no\"\n",
		"op=10 st=0 opq=9\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("stat settings lacks %q:\n%s", want, got)
		}
	}
	if !strings.HasSuffix(got, "op=10 st=0 opq=9\n") {
		t.Errorf("the last response is not the empty terminator:\n%s", got)
	}
}

// TestBinaryMetrics checks that binary requests are counted under "binary", failures (here an unknown
// opcode) as errors and misses not.
func TestBinaryMetrics(t *testing.T) {
	store := kv.New(memstore.New(), kv.Options{SweepInterval: -1})
	defer store.Close()
	m := metrics.New(store)
	h := New(store, Options{Metrics: m})
	in := append(binReq(opSet, 1, 0, u32(0, 0), []byte("a"), []byte("x")), binReq(opGet, 2, 0, nil, []byte("a"), nil)...)
	in = append(in, binReq(opGet, 3, 0, nil, []byte("b"), nil)...)
	in = append(in, binReq(0x50, 4, 0, nil, nil, nil)...)
	h.ServeConn(context.Background(), &scriptConn{chunks: [][]byte{in}})
	if o := m.Command("memcache", "binary"); o.Requests() != 4 || o.Errors() != 1 {
		t.Fatalf("%d requests, %d errors; want 4, 1", o.Requests(), o.Errors())
	}
}

// TestBinaryUnauthenticatedBodiesAreNotHeld: before authenticating, a binary request other than SASL is refused
// from its header and the connection closed: a set announcing an item-sized body is answered before the body is
// sent, so the server never holds it (300 such connections held 400 MB). A SASL request may carry at most
// maxAuthData bytes; a longer one is refused, its body discarded as it arrives.
func TestBinaryUnauthenticatedBodiesAreNotHeld(t *testing.T) {
	ts := startServer(t, withPassword("s3cret pw"))
	set := binReq(opSet, 1, 0, u32(0, 0), []byte("k"), bytes.Repeat([]byte("x"), 1<<20))
	if got, want := binaryUntilClose(t, dial(t, ts.addr), set[:binaryHeaderLen+100]),
		"op=01 st=20 opq=1 val=\"Auth failure.\"\n"; got != want {
		t.Fatalf("got\n%swant\n%s", got, want)
	}
	cl := dial(t, ts.addr)
	big := binReq(opSASLAuth, 3, 0, nil, []byte("PLAIN"), bytes.Repeat([]byte("p"), maxAuthData+1))
	binExchange(t, cl, big[:binaryHeaderLen], "op=21 st=20 opq=3 val=\"Auth failure.\"\n")
	cl.c.Write(big[binaryHeaderLen:])
	binExchange(t, cl, binReq(opSASLAuth, 4, 0, nil, []byte("PLAIN"), []byte("\x00alice\x00s3cret pw")),
		"op=21 st=0 opq=4 val=\"Authenticated\"\n")
	binExchange(t, cl, set, "op=01 st=0 opq=1 cas\n") // authenticated: the same set is stored
}

// TestBinaryTouchToAPastTime: a touch to a time already past expires the item and still answers with its flags
// and a CAS, as memcached 1.6.18 does (checked against it: touch of an item of flags 7 to 2592001, a unix time in
// 1970, answers 0x0000 with ext=00000007 and the item's CAS; a get then misses). anykv answered flags 0 and CAS 0.
func TestBinaryTouchToAPastTime(t *testing.T) {
	var in bytes.Buffer
	in.Write(binReq(opSet, 1, 0, u32(7, 0), []byte("k"), []byte("v")))
	in.Write(binReq(opTouch, 2, 0, u32(2592001), []byte("k"), nil))
	in.Write(binReq(opGet, 3, 0, nil, []byte("k"), nil))
	in.Write(binReq(opSet, 4, 0, u32(9, 0), []byte("g"), []byte("w")))
	in.Write(binReq(opGAT, 5, 0, u32(2592001), []byte("g"), nil))
	in.Write(binReq(opGet, 6, 0, nil, []byte("g"), nil))
	want := `op=01 st=0 opq=1 cas
op=1c st=0 opq=2 cas ext=00000007
op=00 st=1 opq=3 val="Not found"
op=01 st=0 opq=4 cas
op=1d st=0 opq=5 cas ext=00000009 val="w"
op=00 st=1 opq=6 val="Not found"
`
	if got := renderBin(t, serveScript(in.Bytes())); got != want {
		t.Fatalf("responses:\n%s\nwant:\n%s", got, want)
	}
}

// TestIncrOfAnEmptyValueIsNonNumericBeforeItsCAS: memcached 1.6.18 refuses to increment an empty value before it
// compares the CAS (do_add_delta), so an incr or decr with another item's CAS answers non-numeric on an empty
// value and a CAS mismatch on a non-empty text (checked against it, binary and ma alike); anykv answered a
// CAS mismatch to both.
func TestIncrOfAnEmptyValueIsNonNumericBeforeItsCAS(t *testing.T) {
	var in bytes.Buffer
	in.Write(binReq(opSet, 1, 0, u32(0, 0), []byte("e"), nil))
	in.Write(binReq(opSet, 2, 0, u32(0, 0), []byte("a"), []byte("abc")))
	in.Write(binReq(opIncr, 3, 12345, incrExtras(1, 0, 0xffffffff), []byte("e"), nil))
	in.Write(binReq(opDecr, 4, 12345, incrExtras(1, 0, 0), []byte("e"), nil))
	in.Write(binReq(opIncr, 5, 12345, incrExtras(1, 0, 0xffffffff), []byte("a"), nil))
	want := `op=01 st=0 opq=1 cas
op=01 st=0 opq=2 cas
op=05 st=6 opq=3 val="Non-numeric server-side value for incr or decr"
op=06 st=6 opq=4 val="Non-numeric server-side value for incr or decr"
op=05 st=2 opq=5 val="Data exists for key."
`
	if got := renderBin(t, serveScript(in.Bytes())); got != want {
		t.Errorf("binary:\n%s\nwant:\n%s", got, want)
	}
	got := string(serveScript([]byte("set e 0 0 0\r\n\r\nset a 0 0 3\r\nabc\r\nma e C12345\r\nma e C12345 MD\r\nma a C12345\r\n")))
	want = "STORED\r\nSTORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n" +
		"CLIENT_ERROR cannot increment or decrement non-numeric value\r\nEX\r\n"
	if got != want {
		t.Errorf("ma: %q, want %q", got, want)
	}
}
