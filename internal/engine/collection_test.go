package engine

import (
	"encoding/binary"
	"reflect"
	"slices"
	"testing"
)

// TestCollMetaRoundTrip checks every optional field of a collection's meta survives encoding alone and with the
// others, that metas written before the sorted-set floor existed still decode, and that a floor whose length
// does not match the bytes left is corruption, not a shorter floor.
func TestCollMetaRoundTrip(t *testing.T) {
	for _, m := range []CollMeta{
		{Gen: 1, Count: 3},
		{Gen: 2, Count: 1, Head: -5},
		{Gen: 3, Count: 0, LastMS: 7, LastSeq: 1},
		{Gen: 4, Count: 9, Floor: []byte("\x80\x00\x00\x00\x00\x00\x00\x00m1")},
		{Gen: 5, Count: 2, Head: 4, LastMS: 1, Floor: []byte{0}},
		{Gen: 6, Count: 2, Ceil: []byte("\xc0top")},
		{Gen: 7, Count: 5, Floor: []byte("lo"), Ceil: []byte("hi")},
	} {
		got, err := DecodeCollMeta(AppendCollMeta(nil, m))
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Errorf("%+v decodes as %+v, %v", m, got, err)
		}
	}
	old := binary.AppendVarint(binary.BigEndian.AppendUint64(nil, 6), 2) // gen and count only
	if got, err := DecodeCollMeta(old); err != nil || got.Gen != 6 || got.Count != 2 || got.Floor != nil {
		t.Errorf("an older meta decodes as %+v, %v", got, err)
	}
	full := AppendCollMeta(nil, CollMeta{Gen: 1, Count: 1, Floor: []byte("abc")})
	both := AppendCollMeta(nil, CollMeta{Gen: 1, Count: 1, Floor: []byte("abc"), Ceil: []byte("xyz")})
	for _, bad := range [][]byte{full[:len(full)-1], append(slices.Clone(full), 'x'), both[:len(both)-1], append(slices.Clone(both), 'x'), append(slices.Clone(full), 0)} {
		if _, err := DecodeCollMeta(bad); err == nil {
			t.Errorf("%x decodes", bad)
		}
	}
}
