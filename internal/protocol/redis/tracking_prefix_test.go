package redis

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// bruteUnder is what the BCAST prefixes of tt that key has are, by a scan of them all (the old way).
func bruteUnder(tt *trackTable, key string) []string {
	var out []string
	for p := range tt.prefixes {
		if strings.HasPrefix(key, p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(a) - len(b) })
	return out
}

// TestTrackingPrefixesFoundByLength: the prefixes a key has are found through the lengths in use, as a scan of
// every prefix finds them, while trackers with overlapping prefixes (the empty one included) come and go.
func TestTrackingPrefixesFoundByLength(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	tt := &trackTable{prefixes: map[string]map[*tracker]struct{}{}}
	alphabet := "ab:"
	word := func(max int) string {
		b := make([]byte, rng.Intn(max+1))
		for i := range b {
			b[i] = alphabet[rng.Intn(len(alphabet))]
		}
		return string(b)
	}
	var trackers []*tracker
	for round := range 400 {
		if len(trackers) > 0 && rng.Intn(3) == 0 {
			i := rng.Intn(len(trackers))
			tt.dropPrefixes(trackers[i])
			trackers = slices.Delete(trackers, i, i+1)
		} else {
			tr := &tracker{}
			for range 1 + rng.Intn(4) {
				tt.addPrefix(tr, word(5))
			}
			trackers = append(trackers, tr)
		}
		for range 20 {
			key := word(8)
			var got []string
			for p, keys := range tt.under([]byte(key), nil) {
				if len(keys) != 1 || string(keys[0]) != key {
					t.Fatalf("round %d: key %q listed under %q as %q", round, key, p, keys)
				}
				got = append(got, p)
			}
			slices.SortFunc(got, func(a, b string) int { return len(a) - len(b) })
			if want := bruteUnder(tt, key); !slices.Equal(got, want) {
				t.Fatalf("round %d, key %q: prefixes %q, want %q", round, key, got, want)
			}
		}
		lens := map[int]int{}
		for p := range tt.prefixes {
			lens[len(p)]++
		}
		if fmt.Sprint(lens) != fmt.Sprint(tt.lens) || len(tt.byLen) != len(lens) {
			t.Fatalf("round %d: lengths %v %v, want %v", round, tt.lens, tt.byLen, lens)
		}
	}
	for _, tr := range trackers {
		tt.dropPrefixes(tr)
	}
	if len(tt.prefixes) != 0 || len(tt.lens) != 0 || len(tt.byLen) != 0 {
		t.Fatalf("after every tracker left: %d prefixes, lengths %v %v", len(tt.prefixes), tt.lens, tt.byLen)
	}
}

// BenchmarkTrackWritesManyPrefixes: finding the BCAST prefixes of a written key among 100,000 registered ones
// (what every write of every client does, under the table's lock), by length and by the old scan of them all.
func BenchmarkTrackWritesManyPrefixes(b *testing.B) {
	tt := &trackTable{prefixes: map[string]map[*tracker]struct{}{}}
	tr := &tracker{}
	for i := range 100000 {
		tt.addPrefix(tr, fmt.Sprintf("user:%06d:", i))
	}
	key := []byte("user:004242:name")
	b.Run("by-length", func(b *testing.B) {
		bcast := map[string][][]byte{} // made once per batch, as trackWrites does
		for range b.N {
			clear(bcast)
			if n := len(tt.under(key, bcast)); n != 1 {
				b.Fatal(n)
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		for range b.N {
			if len(bruteUnder(tt, string(key))) != 1 {
				b.Fatal()
			}
		}
	})
}
