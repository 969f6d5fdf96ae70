// Package glob matches strings against Redis glob patterns (*, ?, [abc], [^a-z], \x), as KEYS, SCAN's MATCH,
// PSUBSCRIBE and CONFIG GET do, with the results of Redis's stringmatchlen, in time linear in the pattern and
// the string: a match that would need more steps stops and says so.
package glob

// Pattern is a compiled pattern: its classes are sets of bytes, so that matching a byte against one is one step
// however long the class is written.
type Pattern struct {
	toks  []token
	sets  []byteSet // the classes' sets, by token.set
	fixed int       // tokens that match exactly one byte (all but stars): a string shorter cannot match
}

type tokenKind uint8

const (
	literal tokenKind = iota // c
	anyByte                  // ?
	star                     // one or more '*'
	class                    // [...]: sets[set]
)

// token is 8 bytes: a pattern of n bytes compiles to at most 8n of tokens, plus 32 bytes per class.
type token struct {
	kind tokenKind
	c    byte
	set  int32
}

// byteSet is a set of bytes, a bit each.
type byteSet [4]uint64

func (b *byteSet) add(c byte)      { b[c>>6] |= 1 << (c & 63) }
func (b *byteSet) has(c byte) bool { return b[c>>6]&(1<<(c&63)) != 0 }

// Bytes is about the memory the compiled pattern holds, for the callers that account it (PSUBSCRIBE).
func (pt *Pattern) Bytes() int { return 64 + 8*cap(pt.toks) + 32*cap(pt.sets) }

// Compile parses pat as stringmatchlen reads it: an unterminated class ends with the pattern, a trailing '\'
// is itself, a reversed range counts as its reverse.
func Compile(pat []byte) *Pattern {
	p := &Pattern{}
	for i := 0; i < len(pat); {
		switch c := pat[i]; c {
		case '*':
			for i < len(pat) && pat[i] == '*' {
				i++
			}
			p.toks = append(p.toks, token{kind: star})
		case '?':
			p.toks = append(p.toks, token{kind: anyByte})
			i++
		case '[':
			set, next := compileClass(pat, i+1)
			p.sets = append(p.sets, *set)
			p.toks = append(p.toks, token{kind: class, set: int32(len(p.sets) - 1)})
			i = next
		case '\\':
			if i+1 < len(pat) {
				i++
			}
			p.toks = append(p.toks, token{kind: literal, c: pat[i]})
			i++
		default:
			p.toks = append(p.toks, token{kind: literal, c: c})
			i++
		}
	}
	for _, t := range p.toks {
		if t.kind != star {
			p.fixed++
		}
	}
	return p
}

// compileClass reads the class starting at pat[i] (just after '['); it returns the bytes it matches and where the
// pattern continues (after ']', or at the end of an unterminated class).
func compileClass(pat []byte, i int) (*byteSet, int) {
	var set byteSet
	not := i < len(pat) && pat[i] == '^'
	if not {
		i++
	}
	for i < len(pat) && pat[i] != ']' {
		switch {
		case pat[i] == '\\' && i+1 < len(pat):
			i++
			set.add(pat[i])
		case i+2 < len(pat) && pat[i+1] == '-':
			lo, hi := pat[i], pat[i+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			for c := int(lo); c <= int(hi); c++ {
				set.add(byte(c))
			}
			i += 2
		default:
			set.add(pat[i])
		}
		i++
	}
	if i < len(pat) {
		i++ // past ']'
	}
	if not {
		for w := range set {
			set[w] = ^set[w]
		}
	}
	return &set, i
}

// Limit is the steps a match against str may take: a small multiple of its length. A long literal after a '*'
// matched against a long string of near misses ("*aaa…ab" against "aaa…a") makes any backtracking matcher
// (Redis's too) take about len(literal)*len(str) steps: one 1.5 KB SSCAN MATCH against a 3 MB member took 10 s of
// CPU, and a PUBLISH against such a pattern held every other client's pub/sub. Patterns people write
// ("user:*:name", "*[0-9]") stay far below it. It does not grow with the pattern, which padding could raise:
// a pattern with more single-byte tokens than str has bytes is refused at once.
func Limit(str []byte) int { return 16*len(str) + 4096 }

// Match reports whether str matches the pattern; complete is false when the match stopped at Limit steps (matched
// is then false). It backtracks only to the last '*', so a pattern like "*a*a*a*b" is not exponential, as a
// recursive matcher is (CVE-2022-36021). As Redis's stringmatchlen, the empty string matches the empty pattern
// only (KEYS and SCAN answer "*" as every key themselves). A nil pattern matches every string: a command without
// MATCH, or with "*", passes nil.
func (pt *Pattern) Match(str []byte) (matched, complete bool) {
	if pt == nil {
		return true, true
	}
	toks := pt.toks
	if len(str) < pt.fixed || len(str) == 0 {
		return len(str) == 0 && len(toks) == 0, true
	}
	steps := Limit(str)
	p, s := 0, 0
	starP, starS := -1, 0
	for s < len(str) {
		if steps--; steps < 0 {
			return false, false
		}
		if p < len(toks) {
			t := &toks[p]
			switch t.kind {
			case star:
				p++
				if p == len(toks) {
					return true, true
				}
				starP, starS = p, s
				continue
			case anyByte:
				p, s = p+1, s+1
				continue
			case class:
				if pt.sets[t.set].has(str[s]) {
					p, s = p+1, s+1
					continue
				}
			default:
				if t.c == str[s] {
					p, s = p+1, s+1
					continue
				}
			}
		}
		if starP < 0 {
			return false, true
		}
		starS++ // let the last '*' swallow one more byte and retry from there
		p, s = starP, starS
	}
	for p < len(toks) && toks[p].kind == star {
		p++
	}
	return p == len(toks), true
}

// Matches is Match for callers that cannot report an unfinished match: it counts as no match.
func (pt *Pattern) Matches(str []byte) bool {
	m, _ := pt.Match(str)
	return m
}
