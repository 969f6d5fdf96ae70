package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// FuzzDecodeCollMeta decodes arbitrary (possibly damaged) meta values: no panic, an error that is ErrCorrupt,
// hints no longer than the input, and what decodes re-encodes to a value that decodes to the same meta.
func FuzzDecodeCollMeta(f *testing.F) {
	for _, m := range []CollMeta{
		{Gen: 1, Count: 3},
		{Gen: 7, Count: 2, Head: -4},
		{Gen: 9, Count: 1, LastMS: 1700000000000, LastSeq: 3},
		{Gen: 1, Count: 1, Floor: []byte("abc")},
		{Gen: 1, Count: 1, Floor: []byte("abc"), Ceil: []byte("xyz")},
		{Gen: 1, Count: 1, Ceil: []byte("z")},
	} {
		f.Add(AppendCollMeta(nil, m))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		m, err := DecodeCollMeta(v)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%x: error %v is not ErrCorrupt", v, err)
			}
			return
		}
		if len(m.Floor)+len(m.Ceil) > len(v) {
			t.Fatalf("%x: hints of %d+%d bytes from %d", v, len(m.Floor), len(m.Ceil), len(v))
		}
		again, err := DecodeCollMeta(AppendCollMeta(nil, m))
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("%x decodes to %+v, which re-encodes to %+v (%v)", v, m, again, err)
		}
	})
}

// FuzzSplitMemberKey splits arbitrary member-table keys (read back from an engine, so possibly damaged): no
// panic, parts that put together give the key back, and MemberKey's output split into what made it. The key
// split is mk, then mk behind the length n as a uvarint, then behind ^n: random bytes and the fuzzer's integer
// mutations seldom make a length near 2^64.
func FuzzSplitMemberKey(f *testing.F) {
	f.Add([]byte("k"), uint64(1), []byte("member"), MemberKey([]byte("k"), 1, []byte("member")), uint64(1))
	f.Add([]byte(""), uint64(0), []byte(""), AnnotationKey([]byte("key")), uint64(0))
	f.Add([]byte("x"), uint64(1<<63), []byte{0xff}, []byte{0x81, 0x01, 0, 0, 0, 0, 0, 0, 0, 0}, uint64(1<<40))
	f.Fuzz(func(t *testing.T, key []byte, gen uint64, member, mk []byte, n uint64) {
		for _, mk := range [][]byte{mk, append(binary.AppendUvarint(nil, n), mk...), append(binary.AppendUvarint(nil, ^n), mk...)} {
			k, g, m, err := SplitMemberKey(mk)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%x: error %v is not ErrCorrupt", mk, err)
				}
			} else if again := MemberKey(k, g, m); !bytes.Equal(again, mk) {
				// Only a non-minimal length uvarint may differ.
				if _, _, _, err := SplitMemberKey(again); err != nil || len(again) > len(mk) {
					t.Fatalf("%x splits to %q %d %q, which joins to %x", mk, k, g, m, again)
				}
			}
		}
		k, g, m, err := SplitMemberKey(MemberKey(key, gen, member))
		if err != nil || !bytes.Equal(k, key) || g != gen || !bytes.Equal(m, member) {
			t.Fatalf("MemberKey(%q, %d, %q) splits to %q %d %q (%v)", key, gen, member, k, g, m, err)
		}
	})
}
