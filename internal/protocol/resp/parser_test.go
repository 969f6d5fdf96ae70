package resp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"anykv/internal/membudget"
)

// small limits make every boundary cheap to reach.
var small = Limits{MaxBulk: 16, MaxArgs: 4, MaxInline: 32}

func cmds(c ...[]string) [][]string { return c }

func TestParserErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // commands before the error
		err  string
	}{
		{"count not a number", "*x\r\n", nil, "ERR Protocol error: invalid multibulk length"},
		{"count empty", "*\r\n", nil, "ERR Protocol error: invalid multibulk length"},
		{"count leading zero", "*01\r\n$1\r\na\r\n", nil, "ERR Protocol error: invalid multibulk length"},
		{"count plus sign", "*+1\r\n", nil, "ERR Protocol error: invalid multibulk length"},
		{"count minus zero", "*-0\r\n", nil, "ERR Protocol error: invalid multibulk length"},
		{"count over max", "*1048577\r\n", nil, "ERR Protocol error: invalid multibulk length"},
		{"count overflow", "*99999999999999999999\r\n", nil, "ERR Protocol error: invalid multibulk length"},
		{"count space", "*1 \r\n", nil, "ERR Protocol error: invalid multibulk length"},
		{"bulk not a number", "*1\r\n$x\r\n", nil, "ERR Protocol error: invalid bulk length"},
		{"bulk empty", "*1\r\n$\r\n", nil, "ERR Protocol error: invalid bulk length"},
		{"bulk negative", "*1\r\n$-1\r\n", nil, "ERR Protocol error: invalid bulk length"},
		{"bulk over max", "*1\r\n$536870913\r\n", nil, "ERR Protocol error: invalid bulk length"},
		{"bulk leading zero", "*1\r\n$03\r\nfoo\r\n", nil, "ERR Protocol error: invalid bulk length"},
		{"expected dollar", "*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", nil, "ERR Protocol error: expected '$', got 'f'"},
		{"expected dollar CR", "*1\r\n\r\n", nil, "ERR Protocol error: expected '$', got ' '"},
		{"expected dollar star", "*1\r\n*1\r\n", nil, "ERR Protocol error: expected '$', got '*'"},
		{"expected dollar after cmd", multibulk("PING") + "*1\r\n:1\r\n", []string{"PING"}, "ERR Protocol error: expected '$', got ':'"},
		{"too big inline", strings.Repeat("a", 64<<10+1), nil, "ERR Protocol error: too big inline request"},
		{"too big inline with newline", strings.Repeat("a", 64<<10+1) + "\n", nil, "ERR Protocol error: too big inline request"},
		{"too big mbulk count", "*" + strings.Repeat("1", 64<<10), nil, "ERR Protocol error: too big mbulk count string"},
		{"too big bulk count", "*1\r\n$" + strings.Repeat("1", 64<<10), nil, "ERR Protocol error: too big bulk count string"},
		{"too big bulk count not dollar", "*1\r\n" + strings.Repeat("X", 70000), nil, "ERR Protocol error: too big bulk count string"},
		{"unbalanced double", "SET a \"b\r\n", nil, "ERR Protocol error: unbalanced quotes in request"},
		{"unbalanced single", "SET a 'b\r\n", nil, "ERR Protocol error: unbalanced quotes in request"},
		{"text after closing quote", "ECHO \"a\"b\r\n", nil, "ERR Protocol error: unbalanced quotes in request"},
		{"text after closing single quote", "ECHO 'a'b\r\n", nil, "ERR Protocol error: unbalanced quotes in request"},
		{"inline then error", "PING\r\nECHO \"x\r\n", []string{"PING"}, "ERR Protocol error: unbalanced quotes in request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseWhole(DefaultLimits(), []byte(tc.in))
			want := result{err: tc.err}
			if tc.want != nil {
				want.cmds = cmds(tc.want)
			}
			if !got.equal(want) {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
			if b := parseBytewise(DefaultLimits(), []byte(tc.in)); !b.equal(want) {
				t.Fatalf("byte by byte: got\n%s\nwant\n%s", b, want)
			}
		})
	}
}

func TestErrorIsSticky(t *testing.T) {
	p := NewParser(DefaultLimits())
	p.Feed([]byte("*x\r\n"))
	_, err1 := p.Next()
	p.Feed([]byte(multibulk("PING")))
	args, err2 := p.Next()
	if err1 != ErrInvalidMultibulkLength || err2 != err1 || args != nil {
		t.Fatalf("got %v then %q, %v", err1, args, err2)
	}
	if !errors.Is(err2, ErrInvalidMultibulkLength) {
		t.Fatal("errors.Is does not match the sentinel")
	}
}

func TestInlineQuoting(t *testing.T) {
	tests := []struct {
		in   string
		want []string // nil: the line is skipped
	}{
		{"PING\r\n", []string{"PING"}},
		{"PING\n", []string{"PING"}},
		{"SET a \"b c\"\r\n", []string{"SET", "a", "b c"}},
		{"SET a 'b c'\r\n", []string{"SET", "a", "b c"}},
		{`SET a "\n\r\t\b\a\\\"\x41\x7a\xFF"` + "\r\n", []string{"SET", "a", "\n\r\t\b\a\\\"Az\xff"}},
		{`SET a "\q\x4"` + "\r\n", []string{"SET", "a", "qx4"}},
		{`SET a '\'\n\x41"'` + "\r\n", []string{"SET", "a", `'\n\x41"`}},
		{"SET a ''\r\n", []string{"SET", "a", ""}},
		{"SET a \"\"\r\n", []string{"SET", "a", ""}},
		{"SET a\"b c\"d\r\n", nil}, // closing quote followed by 'd': error, checked below
		{"ECHO a\"b c\"\r\n", []string{"ECHO", "ab c"}},
		{"  GET\t  key  \r\n", []string{"GET", "key"}},
		{"\r\n", nil},
		{"\n", nil},
		{"   \t \r\n", nil},
		{"GET a\x00b c\r\n", []string{"GET", "a"}}, // a C string ends at NUL
		{"GET a\vb\r\n", []string{"GET", "a\vb"}},  // \v is blank only between arguments
		{"\vGET\fa\r\n", []string{"GET\fa"}},
		{"GET a\rb\r\n", []string{"GET", "a", "b"}},
		{"GET a\r\r\n", []string{"GET", "a"}},
		{"ECHO \"a\"\t\r\n", []string{"ECHO", "a"}},
		{"$3\r\n", []string{"$3"}}, // only '*' starts a multibulk
		{" *1\r\n", []string{"*1"}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got := parseWhole(DefaultLimits(), []byte(tc.in))
			var want result
			if strings.Contains(tc.in, "\"d") {
				want.err = ErrUnbalancedQuotes.Msg
			} else if tc.want != nil {
				want.cmds = cmds(tc.want)
			}
			if !got.equal(want) {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestBinaryBulk(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	args := []string{"SET", "\r\n", string(all), "", "\x00\x00", "$3\r\n*1\r\n"}
	in := multibulk(args...)
	want := result{cmds: cmds(args)}
	for _, l := range []Limits{DefaultLimits(), {MaxBulk: 256, MaxArgs: 6, MaxInline: 4}} {
		if got := parseWhole(l, []byte(in)); !got.equal(want) {
			t.Fatalf("%+v: got\n%s", l, got)
		}
	}
}

func TestPipelined(t *testing.T) {
	in := multibulk("SET", "k", "v") + "*0\r\n" + "*-1\r\n" + "GET k\r\n" + "\r\n" +
		multibulk("PING") + "*-10\r\n" + "ECHO 'x y'\n" + multibulk("DEL", "k") + "*2\r\n$3\r\nGET"
	want := result{
		cmds:     cmds([]string{"SET", "k", "v"}, []string{"GET", "k"}, []string{"PING"}, []string{"ECHO", "x y"}, []string{"DEL", "k"}),
		buffered: len("*2\r\n$3\r\nGET"),
	}
	if got := parseWhole(DefaultLimits(), []byte(in)); !got.equal(want) {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// splitInputs are streams that exercise every state; each must parse the
// same however it is cut.
var splitInputs = []string{
	multibulk("SET", "key", "value") + multibulk("GET", "key"),
	"SET a \"b c\"\r\nGET '\\'x'\nPING\r\n",
	multibulk("SET", "bin", "\r\n\x00\xff") + "*0\r\n\r\n" + multibulk("A", "", "B"),
	"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPI",
	"*1\r\n$2\r\nab\r\nfooz\r\n",
	"*1\r\n$x\r\n",
	"PING\r\nSET a \"b\r\n",
	"*1\rX$1\rYaZZ", // Redis skips the byte after '\r' and after a bulk unchecked
}

func TestSplitAtEveryByte(t *testing.T) {
	for _, l := range []Limits{DefaultLimits(), small} {
		for _, in := range splitInputs {
			data := []byte(in)
			whole := parseWhole(l, data)
			for k := 0; k <= len(data); k++ {
				if got := parseChunks(l, data[:k], data[k:]); !got.equal(whole) {
					t.Fatalf("%q split at %d:\ngot\n%s\nwhole\n%s", in, k, got, whole)
				}
			}
			if got := parseBytewise(l, data); !got.equal(whole) {
				t.Fatalf("%q byte by byte:\ngot\n%s\nwhole\n%s", in, got, whole)
			}
		}
	}
}

func TestLimitsAtBoundary(t *testing.T) {
	l := small
	ok := func(name string, in string, want ...string) {
		t.Helper()
		for _, got := range []result{parseWhole(l, []byte(in)), parseBytewise(l, []byte(in))} {
			if w := (result{cmds: cmds(want)}); !got.equal(w) {
				t.Errorf("%s: got\n%s\nwant\n%s", name, got, w)
			}
		}
	}
	bad := func(name string, in string, err *ProtocolError) {
		t.Helper()
		for _, got := range []result{parseWhole(l, []byte(in)), parseBytewise(l, []byte(in))} {
			if got.err != err.Msg || len(got.cmds) != 0 {
				t.Errorf("%s: got\n%s\nwant error %s", name, got, err.Msg)
			}
		}
	}
	bulk := strings.Repeat("b", l.MaxBulk)
	ok("MaxBulk", multibulk(bulk), bulk)
	bad("MaxBulk+1", multibulk(bulk+"b"), ErrInvalidBulkLength)

	ok("MaxArgs", multibulk("a", "b", "c", "d"), "a", "b", "c", "d")
	bad("MaxArgs+1", multibulk("a", "b", "c", "d", "e"), ErrInvalidMultibulkLength)

	// The inline line may hold MaxInline bytes before its '\n'.
	line := "GET " + strings.Repeat("k", l.MaxInline-4)
	ok("MaxInline", line+"\n", "GET", line[4:])
	bad("MaxInline+1", line+"k\n", ErrTooBigInline)
	ok("MaxInline with CR", line[:len(line)-1]+"\r\n", "GET", line[4:len(line)-1])
	bad("MaxInline+1 with CR", line+"\r\n", ErrTooBigInline)
	bad("MaxInline+1 no newline", line+"k", ErrTooBigInline)

	// Header lines may have their '\r' at most MaxInline bytes in.
	pad := "*" + strings.Repeat("0", l.MaxInline-1) // MaxInline bytes, no '\r'
	bad("count line at MaxInline", pad+"\r\n", ErrInvalidMultibulkLength)
	bad("count line past MaxInline", pad+"0\r\n", ErrTooBigMbulkCount)
	bad("count line no CR", pad+"0", ErrTooBigMbulkCount)
	hdr := "*1\r\n$" + strings.Repeat("0", l.MaxInline-1)
	bad("bulk line at MaxInline", hdr+"\r\n", ErrInvalidBulkLength)
	bad("bulk line past MaxInline", hdr+"0\r\n", ErrTooBigBulkCount)

	// Without the CR, MaxInline bytes wait for more.
	for _, in := range []string{pad, hdr, line} {
		if got := parseWhole(l, []byte(in)); got.err != "" || got.buffered != len(in) {
			t.Errorf("%q: got %s, want it held", in, got)
		}
	}
}

func TestDefaultLimitsAtBoundary(t *testing.T) {
	d := DefaultLimits()
	if d.MaxBulk != 512<<20 || d.MaxArgs != 1024*1024 || d.MaxInline != 64<<10 {
		t.Fatalf("DefaultLimits() = %+v", d)
	}
	// A full-size declared bulk is accepted and waits; one more is refused.
	p := NewParser(Limits{})
	p.Feed([]byte("*1\r\n$536870912\r\nabc"))
	if args, err := p.Next(); args != nil || err != nil {
		t.Fatalf("got %q, %v", args, err)
	}
	if c := cap(p.buf); c > 64<<10 {
		t.Fatalf("buffer grew to %d bytes on a declared length alone", c)
	}
	if got := parseWhole(d, []byte("*1\r\n$536870913\r\n")); got.err != ErrInvalidBulkLength.Msg {
		t.Fatalf("got %s", got)
	}
	// MaxArgs empty arguments parse; one more is refused.
	var b bytes.Buffer
	b.WriteString("*1048576\r\n")
	for range d.MaxArgs {
		b.WriteString("$0\r\n\r\n")
	}
	p = NewParser(d)
	p.Feed(b.Bytes())
	if args, err := p.Next(); err != nil || len(args) != d.MaxArgs {
		t.Fatalf("got %d args, %v", len(args), err)
	}
	if got := parseWhole(d, []byte("*1048577\r\n")); got.err != ErrInvalidMultibulkLength.Msg {
		t.Fatalf("got %s", got)
	}
	line := strings.Repeat("x", d.MaxInline)
	if got := parseWhole(d, []byte(line+"\n")); len(got.cmds) != 1 || got.err != "" {
		t.Fatalf("MaxInline: got error %q", got.err)
	}
	if got := parseWhole(d, []byte(line+"x\n")); got.err != ErrTooBigInline.Msg {
		t.Fatalf("MaxInline+1: got %s", got)
	}
}

// TestFillGrowsWithData reads a large bulk through a reader that hands out
// small pieces, and checks the buffer grows with the bytes that arrive, not
// with the declared length, and lets go of its memory afterwards.
func TestFillGrowsWithData(t *testing.T) {
	val := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	stream := []byte(multibulk("SET", "k", string(val)) + multibulk("GET", "k"))
	p := NewParser(DefaultLimits())
	r := iotest.HalfReader(bytes.NewReader(stream))
	var got [][]string
	maxCap := 0
	for {
		for {
			args, err := p.Next()
			if err != nil {
				t.Fatal(err)
			}
			if args == nil {
				break
			}
			c := make([]string, len(args))
			for i, a := range args {
				c[i] = string(a)
			}
			got = append(got, c)
		}
		maxCap = max(maxCap, cap(p.buf))
		if len(got) == 0 && cap(p.buf) > 2*p.Buffered()+minRead+initialBufSize {
			t.Fatalf("holding %d bytes in a %d-byte buffer", p.Buffered(), cap(p.buf))
		}
		if _, err := p.Fill(r); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 2 || got[0][2] != string(val) || got[1][1] != "k" {
		t.Fatalf("got %d commands", len(got))
	}
	if maxCap > len(val)+len(val)/2 {
		t.Fatalf("buffer reached %d bytes for a %d-byte value", maxCap, len(val))
	}
	p.Feed([]byte("PING\r\n"))
	if cap(p.buf) > initialBufSize || p.big {
		t.Fatalf("buffer kept %d bytes after the big request", cap(p.buf))
	}
}

// TestGrowingRequestCountsItsBufferOnce: a request that outgrows its big buffer while it arrives holds the
// budget for the buffer it grows into, not for that one and the one it leaves together. A 1 MiB SET under a
// budget just over its final buffer used to pass through 528 KiB + 1 MiB and be refused (ErrClientMemory: its
// client closed), though what it holds fits.
func TestGrowingRequestCountsItsBufferOnce(t *testing.T) {
	val := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	stream := []byte(multibulk("SET", "k", string(val)) + multibulk("GET", "k"))
	budget := membudget.New(int64(membudget.ClassSize(len(val)+100)+minRead), nil)
	acct := budget.Open("test", nil)
	defer acct.Close()
	p := NewParser(DefaultLimits())
	p.SetAccount(acct)
	r := iotest.HalfReader(bytes.NewReader(stream))
	var got [][]byte
	grew := 0
	for last := 0; ; {
		for {
			args, err := p.Next()
			if err != nil {
				t.Fatalf("after %d commands, holding %d bytes in a %d-byte buffer: %v", len(got), p.Buffered(), p.Size(), err)
			}
			if args == nil {
				break
			}
			got = append(got, bytes.Clone(args[len(args)-1]))
		}
		if p.big && p.Size() != last {
			grew++
			last = p.Size()
		}
		if held := acct.Held(); p.big && held != int64(p.Size()) || !p.big && held != 0 {
			t.Fatalf("the account holds %d bytes for a %d-byte buffer (big %v)", held, p.Size(), p.big)
		}
		if _, err := p.Fill(r); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 2 || !bytes.Equal(got[0], val) || string(got[1]) != "k" {
		t.Fatalf("got %d commands", len(got))
	}
	if grew < 3 {
		t.Fatalf("the buffer grew %d times, want several (the case tested)", grew)
	}
	p.Feed([]byte("PING\r\n"))
	if p.big || acct.Held() != 0 || budget.Used() != 0 {
		t.Fatalf("after the big request: big buffer %v, account holds %d, budget used %d", p.big, acct.Held(), budget.Used())
	}
}

func TestFillOneByteReader(t *testing.T) {
	in := strings.Join(splitInputs[:3], "")
	want := parseWhole(DefaultLimits(), []byte(in))
	p := NewParser(DefaultLimits())
	r := iotest.OneByteReader(strings.NewReader(in))
	var got result
	for {
		if !drain(p, &got) {
			break
		}
		if _, err := p.Fill(r); err == io.EOF {
			break
		}
	}
	if !got.equal(want) {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// TestArgsAreCapped checks an argument cannot be appended to over the next.
func TestArgsAreCapped(t *testing.T) {
	for _, in := range []string{multibulk("A", "B"), "A B\r\n"} {
		p := NewParser(DefaultLimits())
		p.Feed([]byte(in))
		args, _ := p.Next()
		_ = append(args[0], 'x')
		if string(args[1]) != "B" {
			t.Fatalf("%q: appending to args[0] changed args[1] to %q", in, args[1])
		}
	}
}

func TestNextDoesNotAllocate(t *testing.T) {
	var batch []byte
	for range 16 {
		batch = append(batch, multibulk("SET", "key:0001", strings.Repeat("v", 100))...)
	}
	batch = append(batch, "SET k \"v w\"\r\n"...)
	p := NewParser(DefaultLimits())
	run := func() {
		p.Feed(batch)
		for {
			args, err := p.Next()
			if err != nil {
				t.Fatal(err)
			}
			if args == nil {
				return
			}
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("%v allocations per batch, want 0", n)
	}
}

func TestParseInt(t *testing.T) {
	good := map[string]int64{
		"0": 0, "1": 1, "-1": -1, "10": 10, "536870912": 512 << 20,
		"9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63,
	}
	for s, want := range good {
		if v, ok := parseInt([]byte(s)); !ok || v != want {
			t.Errorf("parseInt(%q) = %d, %v", s, v, ok)
		}
	}
	for _, s := range []string{"", "-", "+1", "01", "-0", "00", " 1", "1 ", "1a", "9223372036854775808",
		"-9223372036854775809", "18446744073709551616", "99999999999999999999", "123456789012345678901"} {
		if v, ok := parseInt([]byte(s)); ok {
			t.Errorf("parseInt(%q) = %d, want failure", s, v)
		}
	}
}

// TestMaxQuery: a command that would hold more than Limits.MaxQuery unparsed fails with
// ErrQueryBufferLimit, after the commands before it (of exactly the limit) were returned.
func TestMaxQuery(t *testing.T) {
	l := DefaultLimits()
	ok := multibulk("SET", "k", strings.Repeat("v", 100<<10))
	l.MaxQuery = len(ok)
	over := multibulk("SET", "k", strings.Repeat("v", 100<<10+1))
	if got := parseWhole(l, []byte(over)); len(got.cmds) != 0 || got.err != ErrQueryBufferLimit.Msg {
		t.Fatalf("a command over MaxQuery: %d commands, error %q", len(got.cmds), got.err)
	}
	p := NewParser(l)
	r := iotest.HalfReader(strings.NewReader(ok + ok + over))
	var got result
	for drain(p, &got) {
		if _, err := p.Fill(r); err != nil {
			t.Fatal(err)
		}
	}
	if len(got.cmds) != 2 || got.err != ErrQueryBufferLimit.Msg || p.Buffered() > l.MaxQuery {
		t.Fatalf("read in pieces: %d commands, error %q, holding %d bytes", len(got.cmds), got.err, p.Buffered())
	}
}
