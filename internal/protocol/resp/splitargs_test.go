package resp

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// refSplitArgs is a plain transliteration of Redis's sdssplitargs (one byte
// at a time, a fresh string per argument), the oracle splitArgs's in-place,
// run-copying version is checked against. line must hold no NUL byte.
func refSplitArgs(line []byte) ([]string, bool) {
	at := func(i int) byte {
		if i < len(line) {
			return line[i]
		}
		return 0
	}
	var out []string
	p := 0
	for {
		for at(p) != 0 && isSpace(at(p)) {
			p++
		}
		if at(p) == 0 {
			return out, true
		}
		var cur []byte
		inq, insq, done := false, false, false
		for !done {
			if inq {
				if at(p) == '\\' && at(p+1) == 'x' && isHex(at(p+2)) && isHex(at(p+3)) {
					cur = append(cur, unhex(at(p+2))*16+unhex(at(p+3)))
					p += 3
				} else if at(p) == '\\' && at(p+1) != 0 {
					p++
					c := at(p)
					switch c {
					case 'n':
						c = '\n'
					case 'r':
						c = '\r'
					case 't':
						c = '\t'
					case 'b':
						c = '\b'
					case 'a':
						c = '\a'
					}
					cur = append(cur, c)
				} else if at(p) == '"' {
					if at(p+1) != 0 && !isSpace(at(p+1)) {
						return nil, false
					}
					done = true
				} else if at(p) == 0 {
					return nil, false
				} else {
					cur = append(cur, at(p))
				}
			} else if insq {
				if at(p) == '\\' && at(p+1) == '\'' {
					p++
					cur = append(cur, '\'')
				} else if at(p) == '\'' {
					if at(p+1) != 0 && !isSpace(at(p+1)) {
						return nil, false
					}
					done = true
				} else if at(p) == 0 {
					return nil, false
				} else {
					cur = append(cur, at(p))
				}
			} else {
				switch at(p) {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					cur = append(cur, at(p))
				}
			}
			if at(p) != 0 {
				p++
			}
		}
		out = append(out, string(cur))
	}
}

// checkSplitArgs compares splitArgs with the reference on line (cut at its
// first NUL, as the parser does).
func checkSplitArgs(t *testing.T, line []byte) {
	t.Helper()
	if i := slices.Index(line, 0); i >= 0 {
		line = line[:i]
	}
	want, wantOK := refSplitArgs(line)
	got, ok := splitArgs(slices.Clone(line), nil)
	gs := make([]string, len(got))
	for i, a := range got {
		gs[i] = string(a)
	}
	if ok != wantOK || (ok && !slices.Equal(gs, want)) {
		t.Fatalf("splitArgs(%q) = %q, %v; sdssplitargs gives %q, %v", line, gs, ok, want, wantOK)
	}
}

// TestSplitArgsMatchesReference checks random lines over the bytes that
// matter to quoting.
func TestSplitArgsMatchesReference(t *testing.T) {
	const alphabet = " \t\r\n\v\f\"'\\xX0aF9z\xff"
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		line := make([]byte, rng.IntN(24))
		for i := range line {
			line[i] = alphabet[rng.IntN(len(alphabet))]
		}
		checkSplitArgs(t, line)
	}
}
