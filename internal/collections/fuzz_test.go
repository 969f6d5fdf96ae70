package collections

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"anykv/internal/engine"
)

// FuzzStreamRecords decodes arbitrary bytes as each of a stream's stored records (entry fields, group, pending
// entry, consumer), as a damaged store could hand them back: no panic, only ErrCorrupt, nothing allocated out of
// proportion to the input, and a record that decodes re-encodes to bytes that decode the same. Each record is
// also decoded behind a leading uvarint n and ^n (a count or length prefix near 2^64, which neither random bytes
// nor the fuzzer's integer mutations make).
func FuzzStreamRecords(f *testing.F) {
	f.Add(encodeFields([][]byte{[]byte("f"), []byte("v"), []byte("g"), nil}), uint64(1))
	f.Add(binary.AppendUvarint(binary.AppendVarint(ID{5, 1}.key(), 3), 2), uint64(1))
	f.Add(binary.AppendUvarint(binary.AppendVarint(lp([]byte("alice")), 1700000000000), 4), uint64(1))
	f.Add(binary.AppendUvarint(binary.AppendVarint(binary.AppendVarint(nil, 1), -1), 9), uint64(1))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, uint64(1))
	f.Fuzz(func(t *testing.T, in []byte, prefix uint64) {
		for _, v := range [][]byte{in, append(binary.AppendUvarint(nil, prefix), in...), append(binary.AppendUvarint(nil, ^prefix), in...)} {
			streamRecords(t, v)
		}
	})
}

func streamRecords(t *testing.T, v []byte) {
	t.Helper()
	corrupt := func(what string, err error) bool {
		if err != nil && !errors.Is(err, engine.ErrCorrupt) {
			t.Fatalf("%s %x: error %v is not ErrCorrupt", what, v, err)
		}
		return err != nil
	}
	if fields, err := DecodeFields(v); !corrupt("fields", err) {
		if cap(fields) > len(v) {
			t.Fatalf("fields %x: room for %d fields from %d bytes", v, cap(fields), len(v))
		}
		again, err := DecodeFields(encodeFields(fields))
		if err != nil || len(again) != len(fields) {
			t.Fatalf("fields %x: %q re-encodes to %q (%v)", v, fields, again, err)
		}
		for i := range fields {
			if !bytes.Equal(again[i], fields[i]) {
				t.Fatalf("fields %x: %q re-encodes to %q", v, fields, again)
			}
		}
	}
	if g, err := decodeGroup([]byte("g"), v); !corrupt("group", err) {
		enc := binary.AppendUvarint(binary.AppendVarint(g.last.key(), g.read), uint64(g.pending))
		if again, err := decodeGroup([]byte("g"), enc); err != nil || !reflect.DeepEqual(again, g) {
			t.Fatalf("group %x: %+v re-encodes to %+v (%v)", v, g, again, err)
		}
	}
	id := ID{1, 2}
	if p, err := decodeNack(id, v); !corrupt("nack", err) {
		if len(p.consumer) > len(v) {
			t.Fatalf("nack %x: consumer of %d bytes", v, len(p.consumer))
		}
		enc := binary.AppendUvarint(binary.AppendVarint(lp(p.consumer), p.at), uint64(p.count))
		if again, err := decodeNack(id, enc); err != nil || !reflect.DeepEqual(again, p) {
			t.Fatalf("nack %x: %+v re-encodes to %+v (%v)", v, p, again, err)
		}
	}
	if c, err := decodeConsumer([]byte("c"), v); !corrupt("consumer", err) {
		enc := binary.AppendUvarint(binary.AppendVarint(binary.AppendVarint(nil, c.seen), c.active), uint64(c.pending))
		if again, err := decodeConsumer([]byte("c"), enc); err != nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("consumer %x: %+v re-encodes to %+v (%v)", v, c, again, err)
		}
	}
	n := 0
	for val, rest, ok := NextValue(v); ok; val, rest, ok = NextValue(rest) {
		if len(val) > len(v) || len(rest) >= len(v)-n {
			t.Fatalf("values %x: element %d of %d bytes leaves %d", v, n, len(val), len(rest))
		}
		n++
	}
}

// FuzzParseID parses stream IDs and XRANGE bounds: no panic, and an ID that parses prints as text that parses
// to it again.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"0-0", "1-1", "1700000000000-3", "5", "-", "+", "(5-0", "(0-0", "(18446744073709551615-18446744073709551615",
		"18446744073709551616", "1-", "-1", "+1", "1-2-3", " 1"} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, b []byte, high bool) {
		if id, ok := ParseID(b, high); ok {
			if again, ok := ParseID([]byte(id.String()), high); !ok || again != id {
				t.Fatalf("%q parses to %v, whose text %q parses to %v (%v)", b, id, id.String(), again, ok)
			}
		}
		ParseRangeID(b, high)
	})
}
