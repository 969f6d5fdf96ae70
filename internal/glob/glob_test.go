package glob

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		pat, s string
		want   bool
	}{
		{"*", "", false}, {"", "", true}, {"**", "", false}, {"*", "abc", true}, {"a*c", "abbbc", true}, {"a*c", "abcd", false}, {"", "a", false},
		{"h?llo", "hello", true}, {"h?llo", "hllo", false}, {"h[ae]llo", "hallo", true}, {"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true}, {"h[^e]llo", "hello", false}, {"h[a-b]llo", "hbllo", true},
		{"h[a-b]llo", "hcllo", false}, {"h[b-a]llo", "hallo", true}, {`h\*llo`, "h*llo", true}, {`h\*llo`, "hallo", false},
		{"**x", "ax", true}, {"[", "a", false}, {"user:*:name", "user:12:name", true}, {`[\]]`, "]", true},
		{"[abc", "b", true}, {`a\`, `a\`, true}, {"*[0-9]", "key7", true}, {"*?", "", false}, {"a**", "a", true},
		// Exponential for a recursive matcher (CVE-2022-36021): this must return at once, not in years.
		{"*a*a*a*a*a*a*a*a*a*a*a*b", strings.Repeat("a", 3000), false},
	}
	var none *Pattern // no pattern: every string
	if m, complete := none.Match([]byte("x")); !m || !complete {
		t.Errorf("a nil pattern: matched %v complete %v", m, complete)
	}
	for _, c := range cases {
		got, complete := Compile([]byte(c.pat)).Match([]byte(c.s))
		if got != c.want || !complete {
			t.Errorf("Match(%q, %q) = %v (complete %v), want %v", c.pat, c.s, got, complete, c.want)
		}
	}
}

// TestQuadraticMatchStops: a long literal after a '*' against a long string of near misses would take
// len(pat)*len(str) steps (10 s for 1.5 KB against 3 MB: an audit); it stops at Limit, incomplete.
func TestQuadraticMatchStops(t *testing.T) {
	pat := []byte("*" + strings.Repeat("a", 1500) + "b")
	str := []byte(strings.Repeat("a", 3<<20))
	m, complete := Compile(pat).Match(str) // about 25 M steps; the unbounded match took 10 s
	if m || complete {
		t.Fatalf("matched %v complete %v, want an unfinished match", m, complete)
	}
	// The same shapes, short enough to finish within the limit, still answer.
	if m, complete := Compile([]byte("*aaab")).Match([]byte(strings.Repeat("a", 1000) + "b")); !m || !complete {
		t.Fatalf("a short pattern: matched %v complete %v", m, complete)
	}
}

// TestLongClassIsOneStep: a class written long (every byte listed) costs one step per byte matched.
func TestLongClassIsOneStep(t *testing.T) {
	var b strings.Builder
	b.WriteString("*[")
	for i := 0; i < 64<<10; i++ {
		b.WriteByte('a' + byte(i%20))
	}
	b.WriteString("]z")
	m, complete := Compile([]byte(b.String())).Match([]byte(strings.Repeat("q", 100000) + "az"))
	if !m || !complete {
		t.Fatalf("matched %v complete %v", m, complete)
	}
}

func FuzzMatchAgreesWithReference(f *testing.F) {
	for _, s := range [][2]string{{"h[a-b]l*o", "hbllllo"}, {`[\]]*`, "]x"}, {"*a*b?", "aabbc"}, {"[^a-", "b"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pat, str string) {
		if len(pat) > 64 || len(str) > 64 {
			return
		}
		got, complete := Compile([]byte(pat)).Match([]byte(str))
		if want := reference([]byte(pat), []byte(str)); complete && got != want || !complete {
			t.Fatalf("Match(%q, %q) = %v complete %v, reference %v", pat, str, got, complete, want)
		}
	})
}

// reference is a direct transcription of Redis's stringmatchlen (util.c, without the nesting bound), recursive on
// '*'.
func reference(pat, str []byte) bool {
	for len(pat) > 0 && len(str) > 0 {
		switch pat[0] {
		case '*':
			for len(pat) > 1 && pat[1] == '*' {
				pat = pat[1:]
			}
			if len(pat) == 1 {
				return true
			}
			for len(str) > 0 {
				if reference(pat[1:], str) {
					return true
				}
				str = str[1:]
			}
			return false
		case '?':
			str = str[1:]
		case '[':
			pat = pat[1:]
			not := len(pat) > 0 && pat[0] == '^'
			if not {
				pat = pat[1:]
			}
			match := false
			for {
				if len(pat) > 0 && pat[0] == '\\' && len(pat) >= 2 {
					pat = pat[1:]
					if pat[0] == str[0] {
						match = true
					}
				} else if len(pat) > 0 && pat[0] == ']' {
					break
				} else if len(pat) == 0 {
					pat = []byte{0} // stringmatchlen steps back onto the last byte; the loop below ends the pattern
					break
				} else if len(pat) >= 3 && pat[1] == '-' {
					lo, hi := pat[0], pat[2]
					if lo > hi {
						lo, hi = hi, lo
					}
					pat = pat[2:]
					if str[0] >= lo && str[0] <= hi {
						match = true
					}
				} else if pat[0] == str[0] {
					match = true
				}
				pat = pat[1:]
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			str = str[1:]
		case '\\':
			if len(pat) >= 2 {
				pat = pat[1:]
			}
			fallthrough
		default:
			if pat[0] != str[0] {
				return false
			}
			str = str[1:]
		}
		pat = pat[1:]
		if len(str) == 0 {
			for len(pat) > 0 && pat[0] == '*' {
				pat = pat[1:]
			}
			break
		}
	}
	return len(pat) == 0 && len(str) == 0
}

// TestPaddingDoesNotRaiseTheLimit: the limit follows the string alone; a pattern padded with tokens it cannot
// match (more single-byte tokens than the string has bytes) is refused at once, where a limit growing with the
// pattern let "*"+a×499+"b*"+x×32000 cost 236 µs per 1 KB member (a review).
func TestPaddingDoesNotRaiseTheLimit(t *testing.T) {
	str := []byte(strings.Repeat("a", 1024))
	if m, complete := Compile([]byte("*" + strings.Repeat("a", 499) + "b*" + strings.Repeat("x", 32000))).Match(str); m || !complete {
		t.Fatalf("a pattern longer than the string: matched %v complete %v", m, complete)
	}
	if m, complete := Compile([]byte("*" + strings.Repeat("a", 499) + "b*" + strings.Repeat("x", 500))).Match(str); m || complete {
		t.Fatalf("a quadratic pattern within the string's length: matched %v complete %v, want it stopped", m, complete)
	}
}
