package pebblestore

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// tk is one table/key pair.
type tk struct{ table, key string }

// collisionPairs are pairs of distinct table/key pairs that collide under plausible but wrong key encodings: a
// separator byte between table and key, or a table-name length that truncates (one byte, or two: a table name
// of 64 KiB or more).
func collisionPairs() [][2]tk {
	a := func(n int) string { return strings.Repeat("a", n) }
	return [][2]tk{
		{{"a\x00b", "c"}, {"a", "b\x00c"}},           // separator 0x00
		{{"a\xffb", "c"}, {"a", "b\xffc"}},           // separator 0xff
		{{"a", ""}, {"", "a"}},                       // no length at all
		{{"ab", "c"}, {"a", "bc"}},                   // no length at all
		{{a(257), "k"}, {a(1), a(256) + "k"}},        // one-byte length: 257 -> 1
		{{a(256), "k"}, {"", a(256) + "k"}},          // one-byte length: 256 -> 0
		{{a(65537), "k"}, {a(1), a(65536) + "k"}},    // two-byte length: 65537 -> 1
		{{a(65536), "k"}, {"", a(65536) + "k"}},      // two-byte length: 65536 -> 0
		{{a(127), "\x80k"}, {a(128), "k"}},           // a length byte that looks like a continuation
		{{"\x01", "\x01a"}, {"\x01\x01", "a"}},       // table bytes that look like a length
		{{a(128) + "\x01", "k"}, {a(128), "\x01k"}},  // the same around a two-byte uvarint
		{{a(1 << 21), "k"}, {a(1<<21 - 1), "ak"}},    // three-byte uvarint lengths
		{{"default", "k"}, {"defaul", "tk"}},         // the plain case
		{{"\x00\x00", "\x00"}, {"\x00", "\x00\x00"}}, // all zero bytes
		{{"\xff\xff", ""}, {"\xff", "\xff"}},         // all 0xff bytes
		{{"", ""}, {"", "\x00"}},                     // empty names
		{{"t", "\x01\x01t"}, {"\x01\x01t", "t"}},     // a key that repeats the prefix of another table
		{{a(300), a(300)}, {a(299), a(301)}},         // long names of equal total length
		{{string([]byte{0x80, 0x01}), "k"}, {"\x80", "\x01k"}},
	}
}

// The Pebble key of a table/key pair is unique, decodes back to the pair, and no table's key span holds a key
// of another table: the table name's length is a uvarint, which cannot truncate, and uvarints are prefix-free.
// Each pair in collisionPairs collides under a wrong design (see there), so this test fails on one.
func TestKeyEncodingCannotCollide(t *testing.T) {
	var pairs []tk
	for _, p := range collisionPairs() {
		pairs = append(pairs, p[0], p[1])
	}
	rng := rand.New(rand.NewSource(1))
	alphabet := []byte{0x00, 0x01, 0x7f, 0x80, 'a', 0xff}
	random := func() string {
		b := make([]byte, rng.Intn(6))
		for i := range b {
			b[i] = alphabet[rng.Intn(len(alphabet))]
		}
		return string(b)
	}
	for i := 0; i < 3000; i++ {
		pairs = append(pairs, tk{random(), random()})
	}
	seen := map[string]tk{}
	for _, p := range pairs {
		k := appendKey(nil, p.table, []byte(p.key))
		if q, ok := seen[string(k)]; ok && q != p {
			t.Fatalf("%s and %s have the same Pebble key", show(p), show(q))
		}
		seen[string(k)] = p
		table, user, n, err := splitKey(k)
		if err != nil || string(table) != p.table || string(user) != p.key || n != len(appendTablePrefix(nil, p.table)) {
			t.Fatalf("%s decodes as table %.40q key %.40q (prefix %d), %v", show(p), table, user, n, err)
		}
	}
	// Scans, flushes and Tables rely on this: the span of one table, [prefix, prefixEnd(prefix)), holds no key of
	// another table.
	for _, p := range pairs[:len(collisionPairs())*2] {
		prefix := appendTablePrefix(nil, p.table)
		end := prefixEnd(prefix)
		for _, q := range pairs {
			if q.table == p.table {
				continue
			}
			k := appendKey(nil, q.table, []byte(q.key))
			if bytes.Compare(k, prefix) >= 0 && bytes.Compare(k, end) < 0 {
				t.Fatalf("the key of %s lies in the span of table %.40q", show(q), p.table)
			}
		}
	}
}

// The on-disk key format is persisted: a change must come with a new formatVersion (and a migration or a clear
// refusal in Open). This pins today's bytes.
func TestKeyFormatIsStable(t *testing.T) {
	if formatVersion != 1 {
		t.Fatalf("formatVersion is %d: update this test with the new layout", formatVersion)
	}
	for _, c := range []struct {
		table, key string
		want       string
	}{
		{"default", "k", "\x01\x07defaultk"},
		{"", "", "\x01\x00"},
		{strings.Repeat("t", 300), "k", "\x01\xac\x02" + strings.Repeat("t", 300) + "k"},
		{strings.Repeat("t", 65536), "", "\x01\x80\x80\x04" + strings.Repeat("t", 65536)},
	} {
		if got := string(appendKey(nil, c.table, []byte(c.key))); got != c.want {
			t.Errorf("key of %.20q/%q = %.40q, want %.40q", c.table, c.key, got, c.want)
		}
	}
}

func show(p tk) string {
	return fmt.Sprintf("table %.40q (%d bytes) / key %.40q (%d bytes)", p.table, len(p.table), p.key, len(p.key))
}
