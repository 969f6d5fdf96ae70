package resp

import "testing"

// fuzzLimits are small so the fuzzer reaches every limit quickly.
var fuzzLimits = Limits{MaxBulk: 64, MaxArgs: 8, MaxInline: 48}

// FuzzParser feeds data[:k] then data[k:] and checks the parser does not
// panic, finds the same commands (and error, and leftover) as when fed data
// whole or one byte at a time, and never returns an argument or a command
// bigger than the limits allow; and that inline splitting agrees with a
// plain transliteration of Redis's sdssplitargs. The seeds in testdata/fuzz/FuzzParser run
// as a plain test under `go test`.
func FuzzParser(f *testing.F) {
	f.Add([]byte(multibulk("SET", "k", "v")+"GET k\r\n"), uint16(7))
	f.Add([]byte("SET a \"b\\x41\" 'c\\'d'\r\n*0\r\n"), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, k16 uint16) {
		k := int(k16) % (len(data) + 1)
		checkSplitArgs(t, data)
		for _, l := range []Limits{fuzzLimits, DefaultLimits()} {
			whole := parseWhole(l, data)
			split := parseChunks(l, data[:k], data[k:])
			if !split.equal(whole) {
				t.Fatalf("split at %d:\n%s\nwhole:\n%s", k, split, whole)
			}
			if bytewise := parseBytewise(l, data); !bytewise.equal(whole) {
				t.Fatalf("byte by byte:\n%s\nwhole:\n%s", bytewise, whole)
			}
			maxArg := max(l.MaxBulk, l.MaxInline)
			for _, c := range whole.cmds {
				if len(c) == 0 {
					t.Fatal("empty command")
				}
				if len(c) > l.MaxArgs && len(c) > l.MaxInline/2 {
					t.Fatalf("%d arguments, limits %+v", len(c), l)
				}
				for _, a := range c {
					if len(a) > maxArg {
						t.Fatalf("%d-byte argument, limits %+v", len(a), l)
					}
				}
			}
			if whole.buffered > len(data) {
				t.Fatalf("buffered %d of %d bytes", whole.buffered, len(data))
			}
		}
	})
}
