package pebblestore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"anykv/internal/engine"
)

// TestMemberTableEdgeSeparatesMembers: for keys of many tables (client tables of every length up to 130 bytes,
// names below and above the member tables' prefix, and member tables), the span from a key to its edge holds only
// keys of its own member table, or only keys outside every member table, and the edge lies after the key.
func TestMemberTableEdgeSeparatesMembers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var tables []string
	for n := 0; n <= 130; n++ {
		for _, lead := range []string{"", "\x00", "\x00a", "\x00m", "\x00n", "a", "\xff"} {
			name := lead
			for len(name) < n {
				name += string(rune('a' + rng.IntN(26)))
			}
			if len(name) == n {
				tables = append(tables, name)
			}
		}
	}
	for _, u := range []string{"", "0", "redis", strings.Repeat("x", 125), strings.Repeat("y", 126)} {
		tables = append(tables, engine.MemberTable(u))
	}
	type key struct {
		k      []byte
		member bool
		table  string
	}
	var keys []key
	for _, tb := range tables {
		_, member := engine.UserTable(tb)
		for _, uk := range []string{"", "\x00", "k", "\xff\xff"} {
			keys = append(keys, key{appendKey(nil, tb, []byte(uk)), member, tb})
		}
	}
	keys = append(keys, key{k: []byte{nsMeta, 'v'}}, key{k: metaFormatKey})
	slices.SortFunc(keys, func(a, b key) int { return bytes.Compare(a.k, b.k) })
	cuts := 0
	for i, s := range keys {
		edge := memberTableEdge(s.k)
		if edge == nil {
			if len(s.table) < 126 {
				t.Fatalf("no edge after a key of table %q", s.table)
			}
			continue // past 127-byte names, the rest of the keyspace is one span
		} else if bytes.Compare(edge, s.k) <= 0 {
			t.Fatalf("edge %q at or before its start %q", edge, s.k)
		}
		for _, o := range keys[i+1:] {
			if bytes.Compare(o.k, edge) >= 0 {
				cuts++
				break
			}
			if s.k[0] == nsMeta && o.k[0] != nsMeta {
				t.Fatalf("store meta %q and data key %q in one span", s.k, o.k)
			}
			if s.member && o.table != s.table || !s.member && o.member && s.k[0] == nsData {
				t.Fatalf("span from %q (table %q) to %q holds %q (table %q)", s.k, s.table, edge, o.k, o.table)
			}
		}
	}
	if cuts < len(tables)/2 {
		t.Fatalf("only %d spans ended before the last key", cuts)
	}
}

// TestPushedMembersCompactOnce: members appended at either end of a collection whose meta every batch rewrites
// (RPUSH and LPUSH) are compacted less than once each. When sstables were cut by size alone, each flushed sstable
// spanned from the meta to the newest members, and compactions rewrote the list so far (RPUSH) or its first
// sstable (LPUSH) again and again: 4.4× and 4.7× the bytes flushed here.
func TestPushedMembersCompactOnce(t *testing.T) {
	for _, dir := range []string{"rpush", "lpush"} {
		t.Run(dir, func(t *testing.T) {
			s := openWith(t, Options{Dir: "/db", Sync: SyncNever, CacheBytes: 8 << 20, Logger: quiet,
				tune: func(o *pebble.Options) { o.MemTableSize = 256 << 10 }})
			members := engine.MemberTable("t")
			value := make([]byte, 200)
			rng := rand.New(rand.NewPCG(5, 6))
			const batches, per = 500, 100
			for b := 0; b < batches; b++ {
				muts := make([]engine.Mutation, 0, per+1)
				for i := 0; i < per; i++ {
					idx := uint64(b*per + i)
					if dir == "lpush" {
						idx = 1<<40 - idx
					}
					for j := range value {
						value[j] = byte(rng.Uint32())
					}
					muts = append(muts, set(members, string(binary.BigEndian.AppendUint64([]byte("list\x00"), idx)), string(value)))
				}
				muts = append(muts, set("t", "list", fmt.Sprint(b)))
				mustApply(t, s, muts...)
			}
			flushed, compacted := settle(t, s)
			if flushed < 8<<20 {
				t.Fatalf("flushed %d bytes: the load did not go through flushes", flushed)
			}
			if compacted > flushed*3/2 {
				t.Fatalf("compactions wrote %d bytes for %d flushed (%.1f×)", compacted, flushed, float64(compacted)/float64(flushed))
			}
			t.Logf("flushed %d, compacted %d bytes", flushed, compacted)
		})
	}
}

// settle flushes s, waits until no compaction has run or is running for 300 ms (sstables that overlap nothing may
// stay in L0: Pebble compacts L0 by the depth of its overlaps, and counts them as debt meanwhile), and returns the
// bytes flushed and compacted.
func settle(t *testing.T, s *Store) (flushed, compacted int64) {
	t.Helper()
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	last, quiet := int64(-1), time.Now()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		m := s.db.Metrics()
		if m.Compact.NumInProgress > 0 || m.Compact.Count != last {
			last, quiet = m.Compact.Count, time.Now()
		} else if time.Since(quiet) > 300*time.Millisecond {
			break
		}
	}
	st := s.Stats()
	return st["flush_bytes_written"], st["compaction_bytes_written"]
}
