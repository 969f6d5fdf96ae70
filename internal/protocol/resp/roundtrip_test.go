package resp

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRoundTrip is a property test: random argument lists, encoded as
// multibulk requests (several per stream) and fed in random pieces, parse
// back to exactly themselves.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 500 {
		var want [][]string
		var stream []byte
		for range 1 + rng.IntN(8) {
			args := randomArgs(rng)
			want = append(want, args)
			stream = append(stream, multibulk(args...)...)
		}
		var chunks [][]byte
		for rest := stream; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(2*len(stream)/3+1))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		got := parseChunks(DefaultLimits(), chunks...)
		if got.err != "" || got.buffered != 0 || !slices.EqualFunc(got.cmds, want, slices.Equal[[]string]) {
			t.Fatalf("iteration %d: got\n%s\nwant %q", iter, got, want)
		}
	}
}

// randomArgs returns 1 to 20 arguments: mostly short, some empty, some
// large, with every byte value (CR, LF, '$', '*' included) likely.
func randomArgs(rng *rand.Rand) []string {
	args := make([]string, 1+rng.IntN(20))
	for i := range args {
		var n int
		switch rng.IntN(40) {
		case 0, 1, 2, 3:
			n = 0
		case 4:
			n = rng.IntN(40 << 10)
		default:
			n = rng.IntN(40)
		}
		b := make([]byte, n)
		for j := range b {
			if rng.IntN(4) == 0 {
				b[j] = "\r\n$*\x00"[rng.IntN(5)]
			} else {
				b[j] = byte(rng.Uint32())
			}
		}
		args[i] = string(b)
	}
	return args
}
