package memcache

import (
	"fmt"
	"strings"
	"testing"
)

var cmdNames = map[command]string{
	cmdNone: "none", cmdError: "error", cmdClose: "close", cmdGet: "get", cmdGets: "gets", cmdGat: "gat",
	cmdGats: "gats", cmdSet: "set", cmdAdd: "add", cmdReplace: "replace", cmdAppend: "append",
	cmdPrepend: "prepend", cmdCas: "cas", cmdIncr: "incr", cmdDecr: "decr", cmdDelete: "delete",
	cmdTouch: "touch", cmdFlushAll: "flush_all", cmdVersion: "version", cmdVerbosity: "verbosity",
	cmdQuit: "quit", cmdStats: "stats", cmdMg: "mg", cmdMs: "ms", cmdMd: "md", cmdMa: "ma", cmdMn: "mn",
	cmdMe: "me",
}

// describe renders a request for comparisons: the command, its arguments and its error line.
func describe(r *request) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "cmd=%s", cmdNames[r.cmd])
	if r.err != "" {
		fmt.Fprintf(&sb, " err=%q", r.err)
	}
	if r.noreply {
		sb.WriteString(" noreply")
	}
	if r.key != nil {
		fmt.Fprintf(&sb, " key=%q", r.key)
	}
	if r.keys != nil {
		fmt.Fprintf(&sb, " keys=%q", r.keys)
	}
	if r.data != nil {
		fmt.Fprintf(&sb, " data=%q", r.data)
	}
	if r.flags != 0 || r.exptime != 0 || r.cas != 0 {
		fmt.Fprintf(&sb, " flags=%d exptime=%d cas=%d", r.flags, r.exptime, r.cas)
	}
	if r.tooLarge != cmdNone {
		fmt.Fprintf(&sb, " tooLarge=%s", cmdNames[r.tooLarge])
	}
	if m := &r.meta; m.isMeta {
		fmt.Fprintf(&sb, " meta{rest=%q bin=%v v=%v q=%v ttl=%v/%d viv=%v/%d cas=%v/%d F=%d M=%q D=%d J=%d}",
			m.rest, m.binary, m.value, m.quiet, m.hasTTL, m.ttl, m.hasViv, m.viv, m.hasCas, m.cas, m.flags,
			m.mode, m.delta, m.init)
	}
	return sb.String()
}

// parseAll feeds chunks to a parser the way a connection does (unparsed bytes carried over) and describes
// every request, then what is left.
func parseAll(maxValue int, chunks ...[]byte) []string {
	p := newParser(maxKeyLen, maxValue, 4096)
	var pending []byte
	var out []string
	for _, ch := range chunks {
		pending = append(pending, ch...)
		for {
			var r request
			n, st := p.next(pending, &r)
			if st == needMore {
				break
			}
			pending = pending[n:]
			if st == parsed {
				out = append(out, describe(&r))
			}
			if r.cmd == cmdClose {
				return append(out, "closed")
			}
		}
	}
	if len(pending) > 0 || p.swallow > 0 {
		out = append(out, fmt.Sprintf("left=%d swallow=%d", len(pending), p.swallow))
	}
	return out
}

func TestParser(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"get a b\r\n", []string{`cmd=get keys=" a b"`}},
		{"get a", []string{"left=5 swallow=0"}},
		{"gets a\n", []string{`cmd=gets keys=" a"`}},
		{"gat 10 a\r\n", []string{`cmd=gat keys=" a" flags=0 exptime=10 cas=0`}},
		{"get\r\n", []string{`cmd=error err="ERROR"`}},
		{"set k 1 2 3\r\nabc\r\n", []string{`cmd=set key="k" data="abc" flags=1 exptime=2 cas=0`}},
		{"set k 1 2 3 noreply\r\nabc\r\n", []string{`cmd=set noreply key="k" data="abc" flags=1 exptime=2 cas=0`}},
		{"set k 0 0 3\r\nab", []string{"left=15 swallow=0"}},
		{"set k 0 0 3\r\nabcd\r\n", []string{`cmd=error err="CLIENT_ERROR bad data chunk" key="k"`, `cmd=error err="ERROR"`}},
		{"set k 0 0 9\r\nab", []string{`cmd=error err="SERVER_ERROR object too large for cache" key="k" tooLarge=set`, "left=0 swallow=9"}},
		{"set k 0 0 -1\r\n", []string{`cmd=error err="CLIENT_ERROR bad command line format" key="k"`}},
		{"cas k 0 0 1 77\r\nx\r\n", []string{`cmd=cas key="k" data="x" flags=0 exptime=0 cas=77`}},
		{"incr k 5\r\n", []string{`cmd=incr key="k" flags=0 exptime=0 cas=5`}},
		{"decr k x\r\n", []string{`cmd=error err="CLIENT_ERROR invalid numeric delta argument" key="k"`}},
		{"delete k 0 noreply\r\n", []string{`cmd=delete noreply key="k"`}},
		{"flush_all 5\r\n", []string{`cmd=flush_all flags=0 exptime=5 cas=0`}},
		{"version\x00junk\r\n", []string{`cmd=version`}},
		{"x\r\n", []string{`cmd=error err="ERROR"`}},
		{"mn\r\n", []string{`cmd=mn meta{rest="" bin=false v=false q=false ttl=false/0 viv=false/0 cas=false/0 F=0 M='\x00' D=0 J=0}`}},
		{"mg k v T30 N5 q\r\n", []string{`cmd=mg noreply key="k" meta{rest="v T30 N5 q" bin=false v=true q=true ttl=true/30 viv=true/5 cas=false/0 F=0 M='\x00' D=1 J=0}`}},
		{"ms k 2 F3 MA C9\r\nhi\r\n", []string{`cmd=ms key="k" data="hi" meta{rest="F3 MA C9" bin=false v=false q=false ttl=false/0 viv=false/0 cas=true/9 F=3 M='A' D=1 J=0}`}},
		{"ms k 2 Zq\r\nhi\r\nmn\r\n", []string{`cmd=error err="CLIENT_ERROR invalid flag" key="k" meta{rest="Zq" bin=false v=false q=false ttl=false/0 viv=false/0 cas=false/0 F=0 M='\x00' D=1 J=0}`,
			`cmd=mn meta{rest="" bin=false v=false q=false ttl=false/0 viv=false/0 cas=false/0 F=0 M='\x00' D=0 J=0}`}},
		{"ma YQ== b D7 J2 N0 MD\r\n", []string{`cmd=ma key="a" meta{rest="b D7 J2 N0 MD" bin=true v=false q=false ttl=false/0 viv=true/0 cas=false/0 F=0 M='D' D=7 J=2}`}},
		{strings.Repeat("x", 2049), []string{`cmd=close err="CLIENT_ERROR line too long"`, "closed"}},
		{"get " + strings.Repeat("a ", 2000) + "\r\n", []string{`cmd=get keys=" ` + strings.Repeat("a ", 2000) + `"`}},
		{"get " + strings.Repeat("a ", 3000) + "\r\n", []string{`cmd=close err="CLIENT_ERROR line too long"`, "closed"}},
	} {
		t.Run(tc.in[:min(len(tc.in), 30)], func(t *testing.T) {
			got := parseAll(8, []byte(tc.in))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("parse %q:\ngot  %q\nwant %q", tc.in, got, tc.want)
			}
			// The same input split anywhere, or byte by byte, gives the same requests.
			for k := 0; k <= len(tc.in); k++ {
				split := parseAll(8, []byte(tc.in[:k]), []byte(tc.in[k:]))
				if strings.Join(split, "\n") != strings.Join(got, "\n") {
					t.Fatalf("split at %d: %q, whole: %q", k, split, got)
				}
			}
			var bytewise [][]byte
			for i := range len(tc.in) {
				bytewise = append(bytewise, []byte{tc.in[i]})
			}
			if b := parseAll(8, bytewise...); strings.Join(b, "\n") != strings.Join(got, "\n") {
				t.Fatalf("byte by byte: %q, whole: %q", b, got)
			}
		})
	}
}

func TestExpiresAt(t *testing.T) {
	const now = clockStart
	for _, tc := range []struct {
		exptime, want int64
	}{
		{0, 0},
		{-1, now},
		{1, now + 1000},
		{relativeMax, now + relativeMax*1000},
		{relativeMax + 1, (relativeMax + 1) * 1000}, // a unix time in 1970: already expired
		{1767229200, 1767229200000},
		{1 << 62, 1<<63 - 1},
	} {
		if got := expiresAt(tc.exptime, now); got != tc.want {
			t.Errorf("expiresAt(%d) = %d, want %d", tc.exptime, got, tc.want)
		}
	}
	if got := ttlLeft(0, now); got != -1 {
		t.Errorf("ttlLeft(never) = %d", got)
	}
	if got := ttlLeft(now+1, now); got != 1 {
		t.Errorf("ttlLeft(1ms) = %d, want 1 (rounded up)", got)
	}
}

func TestParseNumbers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		bits uint
		want uint64
		ok   bool
	}{
		{"0", 32, 0, true}, {"+5", 32, 5, true}, {"007", 32, 7, true}, {"4294967295", 32, 4294967295, true},
		{"4294967296", 32, 0, false}, {"-1", 32, 0, false}, {"", 64, 0, false}, {"+", 64, 0, false},
		{"18446744073709551615", 64, 1<<64 - 1, true}, {"18446744073709551616", 64, 0, false}, {"1x", 64, 0, false},
	} {
		got, ok := parseUint([]byte(tc.in), tc.bits)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseUint(%q, %d) = %d, %v; want %d, %v", tc.in, tc.bits, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"-1", -1, true}, {"+1", 1, true}, {"-9223372036854775808", -1 << 63, true},
		{"9223372036854775808", 0, false}, {"--1", 0, false}, {"-", 0, false},
	} {
		got, ok := parseInt([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseInt(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
