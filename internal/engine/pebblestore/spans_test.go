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
	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
)

// TestMemberTableEdgeSeparatesMembers: for keys of many tables (client tables of every length up to 130 bytes,
// names below and above the member tables' prefix, and member tables), the span from a key to its edge holds only
// keys of its own member table, or only keys outside every member table, and the edge lies after the key; from a
// start that is only part of a key, the span holds member-table keys or other keys, never both.
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
	// Starts that are not whole keys (a range deletion's piece from a bare prefix, an earlier edge): the span
	// holds member-table keys only, or none.
	for _, s := range keys {
		for cut := 1; cut < len(s.k); cut++ {
			start := s.k[:cut]
			edge := memberTableEdge(start)
			if edge == nil {
				if cut >= 2 && start[0] == nsData && start[1] < 126 {
					t.Fatalf("no edge after %q", start)
				}
				continue
			}
			if bytes.Compare(edge, start) <= 0 {
				t.Fatalf("edge %q at or before its start %q", edge, start)
			}
			var member, other bool
			from, _ := slices.BinarySearchFunc(keys, start, func(k key, t []byte) int { return bytes.Compare(k.k, t) })
			for _, o := range keys[from:] {
				if bytes.Compare(o.k, edge) >= 0 {
					break
				}
				if o.k[0] == nsData {
					member, other = member || o.member, other || !o.member
				}
			}
			if member && other {
				t.Fatalf("span from %q to %q holds member and other keys", start, edge)
			}
		}
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

// TestSpanCutsKeepEveryItem: writes, deletions, table flushes and FLUSHALL over client tables and member tables
// of many name lengths (up to 200 bytes), through small memtables, compactions and reopens, keep exactly what a
// model keeps; and no sstable holds keys of a member table with others, but for range deletions ending at their
// exclusive end and tables of names too long to cut around.
func TestSpanCutsKeepEveryItem(t *testing.T) {
	for _, mode := range []SyncMode{SyncNever, SyncInterval} {
		t.Run(mode.String(), func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			opts := Options{Dir: "/db", FS: fs, Sync: mode, CacheBytes: 8 << 20, Logger: quiet,
				tune: func(o *pebble.Options) { o.MemTableSize = 64 << 10; o.FlushDelayDeleteRange = 0 }}
			s, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			base := []string{"t", "u", "\xff", strings.Repeat("a", 60), strings.Repeat("b", 124), strings.Repeat("c", 125), strings.Repeat("d", 126), strings.Repeat("z", 127), strings.Repeat("e", 128), strings.Repeat("f", 200)}
			var tables []string
			for _, b := range base {
				tables = append(tables, b, engine.MemberTable(b))
			}
			tables = append(tables, engine.MemberTable(""))
			model := map[string]map[string]string{}
			rng := rand.New(rand.NewPCG(7, 8))
			val := make([]byte, 100)
			for round := 0; round < 6; round++ {
				for b := 0; b < 400; b++ {
					var muts []engine.Mutation
					for i := 0; i < 20; i++ {
						tb := tables[rng.IntN(len(tables))]
						k := fmt.Sprintf("k%04d", rng.IntN(300))
						switch r := rng.IntN(1000); {
						case r < 3:
							muts = append(muts, engine.Mutation{Op: engine.OpFlush, Table: tb})
							delete(model, tb)
							delete(model, engine.MemberTable(tb))
						case r == 3 && b%50 == 0:
							muts = append(muts, engine.Mutation{Op: engine.OpFlush})
							clear(model)
						case r < 150:
							if model[tb] != nil {
								if _, ok := model[tb][k]; ok {
									muts = append(muts, engine.Mutation{Op: engine.OpDelete, Table: tb, Key: []byte(k)})
									delete(model[tb], k)
								}
							}
						default:
							for j := range val {
								val[j] = byte(rng.Uint32())
							}
							muts = append(muts, set(tb, k, string(val)))
							if model[tb] == nil {
								model[tb] = map[string]string{}
							}
							model[tb][k] = string(val)
						}
					}
					if len(muts) > 0 {
						mustApply(t, s, muts...)
					}
				}
				if err := s.db.Flush(); err != nil {
					t.Fatal(err)
				}
				if round%2 == 1 {
					if err := s.db.Compact(ctx, []byte{0}, []byte{2}, true); err != nil {
						t.Fatal(err)
					}
				}
				lvls, err := s.db.SSTables()
				if err != nil {
					t.Fatal(err)
				}
				// Every live key of a table named in at most 120 bytes (cuts are certain there), in key order.
				type live struct {
					k      []byte
					member bool
				}
				var keys []live
				for tb, items := range model {
					if len(tb) > 120 {
						continue
					}
					_, member := engine.UserTable(tb)
					for k := range items {
						keys = append(keys, live{appendKey(nil, tb, []byte(k)), member})
					}
				}
				slices.SortFunc(keys, func(a, b live) int { return bytes.Compare(a.k, b.k) })
				nfiles, bad := 0, 0
				for lvl, files := range lvls {
					for _, f := range files {
						nfiles++
						sm, lg := f.Smallest.UserKey, f.Largest.UserKey
						i, _ := slices.BinarySearchFunc(keys, sm, func(l live, k []byte) int { return bytes.Compare(l.k, k) })
						var member, other bool
						for ; i < len(keys); i++ {
							if c := bytes.Compare(keys[i].k, lg); c > 0 || c == 0 && f.Largest.IsExclusiveSentinel() {
								break
							}
							member, other = member || keys[i].member, other || !keys[i].member
						}
						if member && other {
							bad++
							t.Errorf("L%d file %s spans %q .. %q: keys of member tables and of others", lvl, f.FileNum, sm, lg)
						}
					}
				}
				if bad > 0 {
					t.Fatalf("round %d: %d of %d sstables mix member tables with other keys", round, bad, nfiles)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if s, err = Open(opts); err != nil {
					t.Fatal(err)
				}
				for _, tb := range tables {
					got := dump(t, s, tb)
					want := model[tb]
					if len(got) != len(want) {
						t.Fatalf("round %d table %q: %d items, want %d", round, tb, len(got), len(want))
					}
					for k, v := range want {
						if !bytes.Equal(got[k].Value, []byte(v)) {
							t.Fatalf("table %q key %q differs", tb, k)
						}
					}
				}
			}
			_ = s.Close()
		})
	}
}
