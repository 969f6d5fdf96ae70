package pebblestore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
)

// A model check of the member filters: concurrent clients, each owning its keys, apply HSET, HDEL, DEL, RENAME,
// COPY and PEXPIRE of hashes in two tables, and every answer (whether a field existed, HLEN's count) is compared
// with a model; between rounds the store is restarted cleanly or after a crash, the tables swapped (SWAPDB) or
// one flushed. A wrong "absent" from a filter shows as an HSET answering "new" for a field the model holds.
func TestMemberFiltersModel(t *testing.T) {
	for _, c := range []struct {
		mode  SyncMode
		bound int64
	}{{SyncAlways, 0}, {SyncAlways, 600}, {SyncInterval, 600}, {SyncNever, 600}} {
		t.Run(fmt.Sprintf("%s/bound=%d", c.mode, c.bound), func(t *testing.T) {
			memberFiltersModel(t, c.mode, c.bound, 7)
		})
	}
}

type modelColl struct {
	fields  map[string]bool
	expires int64
}

func memberFiltersModel(t *testing.T, mode SyncMode, bound int64, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	mem := vfs.NewCrashableMem()
	opts := Options{Dir: "/db", FS: mem, Sync: mode, CacheBytes: 4 << 20, Logger: quiet, WriterCacheBytes: 2048,
		memberFilterBytes: bound, versionReserve: 64}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	tables := []string{"t", "u"}
	const clients, keysPer, fieldsPer = 4, 4, 12
	// model[table][key]; each client touches only its own keys.
	model := map[string]map[string]*modelColl{"t": {}, "u": {}}
	var modelMu sync.Mutex // guards the outer maps (clients write distinct keys)
	var clock atomic.Int64
	clock.Store(1_000_000)
	live := func(table, key string, now int64) *modelColl {
		c := model[table][key]
		if c != nil && c.expires != 0 && c.expires <= now {
			delete(model[table], key)
			return nil
		}
		return c
	}
	var proved int64
	for round := range 12 {
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for cl := range clients {
			wg.Add(1)
			crng := rand.New(rand.NewPCG(seed, uint64(round*clients+cl+2)))
			go func() {
				defer wg.Done()
				key := func() (string, string) {
					return tables[crng.IntN(2)], fmt.Sprintf("c%d-%d", cl, crng.IntN(keysPer))
				}
				for step := range 150 {
					now := clock.Add(1)
					tbl, k := key()
					f := fmt.Sprint("f", crng.IntN(fieldsPer))
					var m engine.Mutation
					op := crng.IntN(20)
					switch {
					case op < 11:
						m = engine.Mutation{Op: engine.OpMemberSet, Table: tbl, Key: []byte(k), Value: []byte("v"),
							Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(f)}}
					case op < 14:
						m = engine.Mutation{Op: engine.OpMemberDel, Table: tbl, Key: []byte(k),
							Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte(f)}}
					case op < 15:
						m = engine.Mutation{Op: engine.OpDelete, Table: tbl, Key: []byte(k), AnyKind: true}
					case op < 17:
						dt, dk := key()
						m = engine.Mutation{Op: engine.OpRename, Table: tbl, Key: []byte(k), Target: engine.Target{Table: dt, Key: []byte(dk)}}
						if op == 16 {
							m.Op = engine.OpCopy
						}
					case op < 18:
						m = engine.Mutation{Op: engine.OpExpire, Table: tbl, Key: []byte(k), Expires: now + int64(1+crng.IntN(40))}
					default:
						m = engine.Mutation{Op: engine.OpMembers, Table: tbl, Key: []byte(k), Coll: engine.CollArgs{Kind: engine.KindHash}}
					}
					res, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{m}})
					if err != nil {
						errs <- err
						return
					}
					r := res[0]
					modelMu.Lock()
					c := live(tbl, k, now)
					bad := ""
					switch m.Op {
					case engine.OpMemberSet:
						had := c != nil && c.fields[f]
						if r.Err != nil || r.OldFound != had {
							bad = fmt.Sprintf("HSET %s/%s %s: existed %v (err %v), the model says %v", tbl, k, f, r.OldFound, r.Err, had)
						}
						if c == nil {
							c = &modelColl{fields: map[string]bool{}}
							model[tbl][k] = c
						}
						c.fields[f] = true
					case engine.OpMemberDel:
						had := c != nil && c.fields[f]
						if (r.Err == nil) != had || r.Err != nil && !errors.Is(r.Err, engine.ErrNotFound) {
							bad = fmt.Sprintf("HDEL %s/%s %s: err %v, the model says existed %v", tbl, k, f, r.Err, had)
						}
						if had {
							delete(c.fields, f)
							if len(c.fields) == 0 {
								delete(model[tbl], k)
							}
						}
					case engine.OpDelete:
						if (r.Err == nil) != (c != nil) {
							bad = fmt.Sprintf("DEL %s/%s: err %v, the model says existed %v", tbl, k, r.Err, c != nil)
						}
						delete(model[tbl], k)
					case engine.OpRename, engine.OpCopy:
						dt, dk := m.Target.Table, string(m.Target.Key)
						if (r.Err == nil) != (c != nil) {
							bad = fmt.Sprintf("%v %s/%s: err %v, the model says existed %v", m.Op, tbl, k, r.Err, c != nil)
						}
						if c != nil && (dt != tbl || dk != k) {
							cp := &modelColl{fields: map[string]bool{}, expires: c.expires}
							for f := range c.fields {
								cp.fields[f] = true
							}
							model[dt][dk] = cp
							if m.Op == engine.OpRename {
								delete(model[tbl], k)
							}
						}
					case engine.OpExpire:
						if (r.Err == nil) != (c != nil) {
							bad = fmt.Sprintf("PEXPIRE %s/%s: err %v, the model says existed %v", tbl, k, r.Err, c != nil)
						}
						if c != nil {
							c.expires = m.Expires
						}
					case engine.OpMembers:
						want := 0
						if c != nil {
							want = len(c.fields)
						}
						if r.Err != nil || len(r.Members) != want {
							bad = fmt.Sprintf("HGETALL %s/%s: %d fields (err %v), the model has %d", tbl, k, len(r.Members), r.Err, want)
						}
					}
					modelMu.Unlock()
					if bad != "" {
						errs <- fmt.Errorf("round %d step %d: %s", round, step, bad)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		proved += s.Stats()["writer_filter_absent"]
		now := clock.Add(1)
		switch rng.IntN(5) {
		case 0: // SWAPDB
			if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{{Op: engine.OpSwap, Table: "t", Target: engine.Target{Table: "u"}}}}); err != nil {
				t.Fatal(err)
			}
			for _, tbl := range tables {
				for k := range model[tbl] {
					live(tbl, k, now)
				}
			}
			model["t"], model["u"] = model["u"], model["t"]
		case 1: // FLUSHDB of u
			if _, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{{Op: engine.OpFlush, Table: "u"}}}); err != nil {
				t.Fatal(err)
			}
			model["u"] = map[string]*modelColl{}
		}
		switch rng.IntN(3) {
		case 0: // a clean restart
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		case 1: // a crash: a kill under interval (the journal holds what Pebble's WAL buffer lost), a power loss
			// under always (every acknowledged group synced)
			if mode == SyncNever {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				break
			}
			keep := 100
			if mode == SyncAlways {
				keep = rng.IntN(101)
			}
			clone := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: keep, RNG: rand.New(rand.NewPCG(seed, uint64(round)))})
			_ = s.Close()
			mem = clone
			opts.FS = mem
		default:
			continue
		}
		if s, err = Open(opts); err != nil {
			t.Fatal(err)
		}
	}
	if proved == 0 {
		t.Fatal("the filters never answered")
	}
}
