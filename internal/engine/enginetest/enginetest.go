// Package enginetest is the conformance suite every engine runs: the same behaviour checks over each
// implementation (and later over the cache and replication decorators), plus a model test comparing random
// batches against the memory engine.
package enginetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

// Opener returns a fresh, empty engine; the suite closes it.
type Opener func(t *testing.T) engine.Engine

// now is the fixed time the suite judges expiry at.
const now = int64(1_700_000_000_000)

// Run runs every conformance test against engines from open. has declares the optional abilities the engine
// offers: Run fails if the engine offers others or lacks one, and runs the tests of each declared ability. An
// engine declaring engine.SingleItem skips the tests of batches over several items and must refuse them instead
// (testSingleItem).
func Run(t *testing.T, open Opener, has engine.Ability) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e engine.Engine)
		need engine.Ability
		wide bool // its batches touch several items
	}{
		{"GetMissing", testGetMissing, 0, false},
		{"SetGet", testSetGet, 0, false},
		{"Ownership", testOwnership, 0, false},
		{"Versions", testVersions, 0, false},
		{"Conditions", testConditions, 0, false},
		{"GuardAborts", testGuardAborts, 0, true},
		{"IncrSigned", testIncrSigned, 0, false},
		{"IncrUnsigned", testIncrUnsigned, 0, false},
		{"IncrFloat", testIncrFloat, 0, false},
		{"AppendPrepend", testAppendPrepend, 0, false},
		{"SetRange", testSetRange, 0, false},
		{"Expire", testExpire, 0, false},
		{"RenameCopy", testRenameCopy, 0, true},
		{"Swap", testSwap, 0, true},
		{"Flush", testFlush, 0, true},
		{"BatchSeesOwnWrites", testBatchSeesOwnWrites, 0, false},
		{"ExpiredInvisible", testExpiredInvisible, 0, false},
		{"ConcurrentIncr", testConcurrentIncr, 0, false},
		{"Closed", testClosed, 0, false},
		{"Collections", testCollections, 0, true},
		{"Lists", testLists, 0, true},
		{"CallAnyKey", testCallAnyKey, 0, true},
		{"Model", testModel, 0, false},
		{"Scan", testScan, engine.CanScan, false},
		{"Tables", testTables, engine.CanTables, false},
		{"Sweep", testSweep, engine.CanSweep, false},
		{"SweepReport", testSweepReport, engine.CanSweep, false},
		{"Stats", testStats, engine.CanStats, false},
		{"SingleItem", testSingleItem, engine.SingleItem, false},
	}
	t.Run("Abilities", func(t *testing.T) {
		e := open(t)
		defer e.Close()
		if got := engine.AbilitiesOf(e); got != has {
			t.Fatalf("%T offers %v, declared %v", e, got, has)
		}
	})
	for _, tc := range tests {
		switch {
		case tc.wide && has&engine.SingleItem != 0:
			continue // batches the engine refuses: testSingleItem proves it does
		case tc.need&has != tc.need:
			continue // an ability the engine does not offer: the Abilities check above proves it says so
		}
		t.Run(tc.name, func(t *testing.T) {
			e := open(t)
			t.Cleanup(func() {
				if err := e.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			if tc.wide && engine.SlotsOf(e) > 1 {
				tc.fn(t, tagged{e}) // in one slot: the adapter's tests prove batches across slots are refused
				return
			}
			tc.fn(t, e)
		})
	}
}

var ctx = context.Background()

// apply runs a batch at the suite's time and fails the test on a batch-level error.
func apply(t *testing.T, e engine.Engine, muts ...engine.Mutation) []engine.Result {
	t.Helper()
	if scoped(e) && spansTables(muts) || len(muts) > 1 && spansSlots(e, muts) {
		return applyEach(t, e, muts)
	}
	res, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: muts})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(res) != len(muts) {
		t.Fatalf("Apply returned %d results for %d mutations", len(res), len(muts))
	}
	return res
}

func set(table, key, val string) engine.Mutation {
	return engine.Mutation{Op: engine.OpSet, Table: table, Key: []byte(key), Value: []byte(val)}
}

func get(t *testing.T, e engine.Engine, table, key string) (engine.Item, bool) {
	t.Helper()
	it, err := e.Get(ctx, table, []byte(key), now)
	if errors.Is(err, engine.ErrNotFound) {
		return it, false
	}
	if err != nil {
		t.Fatalf("Get(%q, %q): %v", table, key, err)
	}
	return it, true
}

func wantValue(t *testing.T, e engine.Engine, table, key, want string) engine.Item {
	t.Helper()
	it, ok := get(t, e, table, key)
	if !ok {
		t.Fatalf("Get(%q, %q): not found, want %q", table, key, want)
	}
	if string(it.Value) != want {
		t.Fatalf("Get(%q, %q) = %q, want %q", table, key, it.Value, want)
	}
	return it
}

func wantMissing(t *testing.T, e engine.Engine, table, key string) {
	t.Helper()
	if it, ok := get(t, e, table, key); ok {
		t.Fatalf("Get(%q, %q) = %q, want not found", table, key, it.Value)
	}
}

func wantErr(t *testing.T, r engine.Result, want error) {
	t.Helper()
	if !errors.Is(r.Err, want) || (want == nil && r.Err != nil) {
		t.Fatalf("result error = %v, want %v", r.Err, want)
	}
}

func testGetMissing(t *testing.T, e engine.Engine) {
	wantMissing(t, e, "default", "nope")
	wantMissing(t, e, "", "")
}

func testSetGet(t *testing.T, e engine.Engine) {
	bin := string([]byte{0, 1, 0xff, '\r', '\n'})
	r := apply(t, e, engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte(bin), Value: []byte(bin),
		Flags: 0xdeadbeef, Expires: now + 5000})
	wantErr(t, r[0], nil)
	if r[0].OldFound || !r[0].NewFound || r[0].New.Version == 0 {
		t.Fatalf("first set result = %+v", r[0])
	}
	it := wantValue(t, e, "default", bin, bin)
	if it.Flags != 0xdeadbeef || it.Expires != now+5000 || it.Version != r[0].New.Version {
		t.Fatalf("item = %+v, want flags, expiry and version %d", it, r[0].New.Version)
	}
	// Overwrite with a shorter value and no expiry: nothing of the old item remains.
	r = apply(t, e, set("default", bin, "x"))
	if !r[0].OldFound || string(r[0].Old.Value) != bin {
		t.Fatalf("overwrite old = %+v", r[0])
	}
	it = wantValue(t, e, "default", bin, "x")
	if it.Flags != 0 || it.Expires != 0 {
		t.Fatalf("overwritten item kept metadata: %+v", it)
	}
	// A blind set writes without reading: no old item in its result, the same item stored.
	r = apply(t, e, engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte(bin), Value: []byte("b"), Set: engine.SetArgs{Blind: true}})
	if r[0].OldFound || !r[0].NewFound || r[0].New.Version == 0 {
		t.Fatalf("blind set result = %+v", r[0])
	}
	wantValue(t, e, "default", bin, "b")
	// Empty value is a value, distinct from absence.
	apply(t, e, set("default", "empty", ""))
	wantValue(t, e, "default", "empty", "")
	// KeepTTL keeps the expiry of the old item.
	apply(t, e, engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("k"), Value: []byte("1"), Expires: now + 9000})
	apply(t, e, engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("k"), Value: []byte("2"), Set: engine.SetArgs{KeepTTL: true}})
	if it := wantValue(t, e, "default", "k", "2"); it.Expires != now+9000 {
		t.Fatalf("KeepTTL lost expiry: %+v", it)
	}
	// Tables are separate keyspaces.
	wantMissing(t, e, "other", "k")
}

func testVersions(t *testing.T, e engine.Engine) {
	seen := map[uint64]bool{}
	var last uint64
	single := engine.SingleItemOnly(e)
	slotted := engine.SlotsOf(e) > 1 // versions grow per slot: per key, not across keys
	lastOf := map[string]uint64{}
	for i := 0; i < 50; i++ {
		batches := [][]engine.Mutation{{set("default", fmt.Sprintf("k%d", i%7), "v"), set("t2", "k", "v")}}
		if single || slotted {
			batches = [][]engine.Mutation{batches[0][:1], batches[0][1:]}
		}
		for _, b := range batches {
			for j, x := range apply(t, e, b...) {
				v, key := x.New.Version, b[j].Table+"/"+string(b[j].Key)
				if slotted {
					last = lastOf[key]
				}
				if v <= last || seen[v] {
					t.Fatalf("version %d of %s not fresh (last %d)", v, key, last)
				}
				seen[v], last, lastOf[key] = true, v, v
			}
		}
	}
	if single {
		return // the rest writes hashes, which take several items
	}
	// A collection op takes several versions (generation, member, meta) for one mutation; a later write must
	// still get a version above all of them (in the hash's slot, for a SlotScoped engine: "{h0}after" hashes as
	// "h0" does).
	for i := 0; i < 3; i++ {
		h := fmt.Sprintf("h%d", i)
		apply(t, e, hset(h, "f", "v"))
		meta, ok := get(t, e, "t", h)
		if !ok {
			t.Fatalf("hash %s not found", h)
		}
		after := "after"
		if slotted {
			after = "{" + h + "}after"
		}
		if v := apply(t, e, set("default", after, "v"))[0].New.Version; v <= meta.Version || seen[v] {
			t.Fatalf("version %d after a hash whose meta has version %d: not fresh", v, meta.Version)
		}
	}
}

func testConditions(t *testing.T, e engine.Engine) {
	absent := engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("c"), Value: []byte("1"), Cond: engine.CondAbsent}
	present := engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("c"), Value: []byte("2"), Cond: engine.CondPresent}
	wantErr(t, apply(t, e, present)[0], engine.ErrNotFound)
	wantMissing(t, e, "default", "c")
	r := apply(t, e, absent)
	wantErr(t, r[0], nil)
	v1 := r[0].New.Version
	wantErr(t, apply(t, e, absent)[0], engine.ErrExists)
	wantValue(t, e, "default", "c", "1")
	cas := engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("c"), Value: []byte("3"), Cond: engine.CondVersion, Version: v1 + 1000}
	wantErr(t, apply(t, e, cas)[0], engine.ErrVersionMismatch)
	cas.Version = v1
	wantErr(t, apply(t, e, cas)[0], nil)
	wantValue(t, e, "default", "c", "3")
	wantErr(t, apply(t, e, cas)[0], engine.ErrVersionMismatch) // the version moved on
	cas.Key = []byte("absent")
	wantErr(t, apply(t, e, cas)[0], engine.ErrNotFound)
	cas.Version = 0 // version 0 means "only if absent"
	wantErr(t, apply(t, e, cas)[0], nil)
	wantErr(t, apply(t, e, present)[0], nil)
	wantValue(t, e, "default", "c", "2")
	del := engine.Mutation{Op: engine.OpDelete, Table: "default", Key: []byte("c"), Cond: engine.CondVersion, Version: 1}
	wantErr(t, apply(t, e, del)[0], engine.ErrVersionMismatch)
	del.Cond = engine.CondNone
	if r := apply(t, e, del)[0]; r.Err != nil || string(r.Old.Value) != "2" {
		t.Fatalf("delete = %+v", r)
	}
	wantErr(t, apply(t, e, del)[0], engine.ErrNotFound)
}

func testGuardAborts(t *testing.T, e engine.Engine) {
	apply(t, e, set("default", "g", "old"))
	b := &engine.Batch{Now: now, Muts: []engine.Mutation{
		set("default", "a1", "x"),
		{Op: engine.OpSet, Table: "default", Key: []byte("g"), Value: []byte("new"), Cond: engine.CondAbsent, Guard: true},
		set("default", "a2", "x"),
	}}
	if _, err := e.Apply(ctx, b); !errors.Is(err, engine.ErrAborted) {
		t.Fatalf("Apply with failing guard: err = %v, want ErrAborted", err)
	}
	wantMissing(t, e, "default", "a1")
	wantMissing(t, e, "default", "a2")
	wantValue(t, e, "default", "g", "old")
	// A guard with a group aborts only its group: MSETNX inside a transaction.
	r := apply(t, e,
		set("default", "before", "x"),
		engine.Mutation{Op: engine.OpCheck, Table: "default", Key: []byte("n1"), Cond: engine.CondAbsent, Guard: true, Group: 7},
		engine.Mutation{Op: engine.OpCheck, Table: "default", Key: []byte("g"), Cond: engine.CondAbsent, Guard: true, Group: 7},
		engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("n1"), Value: []byte("1"), Group: 7},
		engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("g"), Value: []byte("2"), Group: 7},
		set("default", "after", "x"))
	wantErr(t, r[2], engine.ErrExists)
	wantErr(t, r[3], engine.ErrAborted)
	wantMissing(t, e, "default", "n1")
	wantValue(t, e, "default", "g", "old")
	wantValue(t, e, "default", "before", "x")
	wantValue(t, e, "default", "after", "x")
	// A failed condition without Guard leaves the rest of the batch applied.
	b.Muts[1].Guard = false
	r = apply(t, e, b.Muts...)
	wantErr(t, r[1], engine.ErrExists)
	wantValue(t, e, "default", "a1", "x")
	wantValue(t, e, "default", "a2", "x")
}

func incr(key string, delta int64) engine.Mutation {
	return engine.Mutation{Op: engine.OpIncr, Table: "default", Key: []byte(key), Incr: engine.IncrArgs{Delta: delta, Create: true}}
}

func testIncrSigned(t *testing.T, e engine.Engine) {
	if r := apply(t, e, incr("n", 5))[0]; r.Err != nil || string(r.New.Value) != "5" {
		t.Fatalf("incr missing = %+v", r)
	}
	if r := apply(t, e, incr("n", -7))[0]; string(r.New.Value) != "-2" {
		t.Fatalf("incr -7 = %+v", r)
	}
	apply(t, e, set("default", "big", "9223372036854775806"))
	wantErr(t, apply(t, e, incr("big", 1))[0], nil)
	wantErr(t, apply(t, e, incr("big", 1))[0], engine.ErrOverflow)
	wantValue(t, e, "default", "big", "9223372036854775807")
	apply(t, e, set("default", "neg", "-9223372036854775808"))
	wantErr(t, apply(t, e, incr("neg", -1))[0], engine.ErrOverflow)
	for _, bad := range []string{"abc", "", " 1", "1 ", "+1", "01", "1.5", "99999999999999999999"} {
		apply(t, e, set("default", "bad", bad))
		wantErr(t, apply(t, e, incr("bad", 1))[0], engine.ErrNotInteger)
		wantValue(t, e, "default", "bad", bad)
	}
	m := incr("absent", 1)
	m.Incr.Create = false
	wantErr(t, apply(t, e, m)[0], engine.ErrNotFound)
	// Increment keeps flags and expiry.
	apply(t, e, engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("f"), Value: []byte("1"), Flags: 9, Expires: now + 1000})
	if r := apply(t, e, incr("f", 1))[0]; r.New.Flags != 9 || r.New.Expires != now+1000 {
		t.Fatalf("incr lost metadata: %+v", r.New)
	}
	withTTL := incr("f", 1)
	withTTL.Touch, withTTL.Expires = true, now+5000
	if r := apply(t, e, withTTL)[0]; string(r.New.Value) != "3" || r.New.Expires != now+5000 {
		t.Fatalf("incr with Touch = %+v", r.New)
	}
}

func testIncrUnsigned(t *testing.T, e engine.Engine) {
	u := func(key string, d uint64, decr bool) engine.Mutation {
		return engine.Mutation{Op: engine.OpIncr, Table: "default", Key: []byte(key), Incr: engine.IncrArgs{Unsigned: true, UDelta: d, Decr: decr}}
	}
	wantErr(t, apply(t, e, u("u", 1, false))[0], engine.ErrNotFound)
	apply(t, e, set("default", "u", "18446744073709551615"))
	if r := apply(t, e, u("u", 2, false))[0]; string(r.New.Value) != "1" {
		t.Fatalf("incr wrap = %+v", r)
	}
	if r := apply(t, e, u("u", 5, true))[0]; string(r.New.Value) != "0" {
		t.Fatalf("decr floor = %+v", r)
	}
	apply(t, e, set("default", "pad", "12  "))
	if r := apply(t, e, u("pad", 1, false))[0]; string(r.New.Value) != "13" {
		t.Fatalf("incr padded = %+v", r)
	}
	apply(t, e, set("default", "neg", "-1"))
	wantErr(t, apply(t, e, u("neg", 1, false))[0], engine.ErrNotInteger)
	viv := u("viv", 3, false)
	viv.Incr.Create, viv.Incr.Initial, viv.Expires = true, 42, now+100
	if r := apply(t, e, viv)[0]; string(r.New.Value) != "42" || r.New.Expires != now+100 {
		t.Fatalf("vivify = %+v", r)
	}
}

func testIncrFloat(t *testing.T, e engine.Engine) {
	incrf := func(by string) engine.Result {
		return apply(t, e, engine.Mutation{Op: engine.OpIncrFloat, Table: "default", Key: []byte("f"), Value: []byte(by)})[0]
	}
	for _, step := range []struct{ by, want string }{
		{"10.5", "10.5"}, {"0.1", "10.6"}, {"-10.6", "0"}, {"0.1", "0.1"}, {"0.2", "0.3"}, // long double, as Redis
		{"0x10", "16.3"}, {"1e3", "1016.29999999999999999"}, // what redis-server 7 answers, digit for digit
	} {
		if r := incrf(step.by); r.Err != nil || string(r.New.Value) != step.want {
			t.Fatalf("INCRBYFLOAT by %s = %q, %v; want %s", step.by, r.New.Value, r.Err, step.want)
		}
	}
	apply(t, e, set("default", "f", "5.0e3"))
	if r := incrf("200"); string(r.New.Value) != "5200" {
		t.Fatalf("incrbyfloat = %q", r.New.Value)
	}
	for _, bad := range []string{"abc", " 1", "nan", ""} {
		wantErr(t, incrf(bad), engine.ErrNotFloat)
	}
	for _, inf := range []string{"inf", "-Infinity", "+INF"} { // strtold reads them; the sum is then infinite, as in Redis
		wantErr(t, incrf(inf), engine.ErrNaN)
	}
	apply(t, e, set("default", "f", "abc"))
	wantErr(t, incrf("1"), engine.ErrNotFloat)
	apply(t, e, set("default", "f", "1.1e4932"))
	wantErr(t, incrf("1.1e4932"), engine.ErrNaN) // past long double's range
	apply(t, e, set("default", "f", "1e4933"))
	wantErr(t, incrf("1"), engine.ErrNotFloat)
	apply(t, e, set("default", "f", "-0.0"))
	if r := incrf("0"); string(r.New.Value) != "0" {
		t.Fatalf("-0.0 + 0 = %q", r.New.Value)
	}
}

func testAppendPrepend(t *testing.T, e engine.Engine) {
	ap := engine.Mutation{Op: engine.OpAppend, Table: "default", Key: []byte("a"), Value: []byte("lo")}
	wantErr(t, apply(t, e, ap)[0], engine.ErrNotFound)
	ap.Edit.Create = true
	if r := apply(t, e, ap)[0]; string(r.New.Value) != "lo" {
		t.Fatalf("append create = %+v", r)
	}
	pre := engine.Mutation{Op: engine.OpPrepend, Table: "default", Key: []byte("a"), Value: []byte("hel")}
	apply(t, e, pre)
	wantValue(t, e, "default", "a", "hello")
	ap.Edit.MaxSize = 6
	wantErr(t, apply(t, e, ap)[0], engine.ErrTooLarge)
	wantValue(t, e, "default", "a", "hello")
}

func testSetRange(t *testing.T, e engine.Engine) {
	sr := engine.Mutation{Op: engine.OpSetRange, Table: "default", Key: []byte("s"), Edit: engine.EditArgs{Offset: 3}, Value: []byte("ab")}
	apply(t, e, sr)
	wantValue(t, e, "default", "s", "\x00\x00\x00ab")
	sr.Edit.Offset, sr.Value = 1, []byte("Z")
	apply(t, e, sr)
	wantValue(t, e, "default", "s", "\x00Z\x00ab")
	sr.Value = nil
	if r := apply(t, e, sr)[0]; r.Err != nil || len(r.New.Value) != 5 {
		t.Fatalf("empty setrange = %+v", r)
	}
	sr.Edit.Offset, sr.Value, sr.Edit.MaxSize = 10, []byte("x"), 10
	wantErr(t, apply(t, e, sr)[0], engine.ErrTooLarge)
	sr.Edit.Offset, sr.Edit.MaxSize = math.MaxInt64, 0 // the end overflows: refused, never a panic
	wantErr(t, apply(t, e, sr)[0], engine.ErrTooLarge)
}

func testExpire(t *testing.T, e engine.Engine) {
	exp := func(at int64, c engine.ExpireCond) engine.Mutation {
		return engine.Mutation{Op: engine.OpExpire, Table: "default", Key: []byte("x"), Expires: at, Expire: engine.ExpireArgs{Cond: c}}
	}
	wantErr(t, apply(t, e, exp(now+10, engine.ExpAlways))[0], engine.ErrNotFound)
	apply(t, e, set("default", "x", "v"))
	wantErr(t, apply(t, e, exp(now+10, engine.ExpXX))[0], engine.ErrConditionFailed)
	wantErr(t, apply(t, e, exp(now+10, engine.ExpGT))[0], engine.ErrConditionFailed) // no TTL = infinite
	wantErr(t, apply(t, e, exp(now+10, engine.ExpLT))[0], nil)
	wantErr(t, apply(t, e, exp(now+20, engine.ExpNX))[0], engine.ErrConditionFailed)
	wantErr(t, apply(t, e, exp(now+5, engine.ExpGT))[0], engine.ErrConditionFailed)
	wantErr(t, apply(t, e, exp(now+50, engine.ExpGT))[0], nil)
	wantErr(t, apply(t, e, exp(now+60, engine.ExpXXLT))[0], engine.ErrConditionFailed)
	wantErr(t, apply(t, e, exp(now+40, engine.ExpXXLT))[0], nil)
	wantErr(t, apply(t, e, exp(now+50, engine.ExpGT))[0], nil)
	if it := wantValue(t, e, "default", "x", "v"); it.Expires != now+50 {
		t.Fatalf("expiry = %d", it.Expires)
	}
	wantErr(t, apply(t, e, exp(0, engine.ExpXX))[0], nil) // PERSIST
	wantErr(t, apply(t, e, exp(0, engine.ExpXX))[0], engine.ErrConditionFailed)
	if it := wantValue(t, e, "default", "x", "v"); it.Expires != 0 {
		t.Fatalf("persist left expiry %d", it.Expires)
	}
	if r := apply(t, e, exp(now-1, engine.ExpAlways))[0]; r.Err != nil || !r.OldFound {
		t.Fatalf("expire in the past = %+v", r)
	}
	wantMissing(t, e, "default", "x")
	// GETEX-style read that sets expiry.
	apply(t, e, set("default", "g", "v"))
	r := apply(t, e, engine.Mutation{Op: engine.OpGet, Table: "default", Key: []byte("g"), Touch: true, Expires: now + 7})
	if r[0].Err != nil || string(r[0].New.Value) != "v" || r[0].New.Expires != now+7 {
		t.Fatalf("getex = %+v", r[0])
	}
}

func testRenameCopy(t *testing.T, e engine.Engine) {
	mv := func(op engine.Op, from, to string, c engine.Cond) engine.Mutation {
		return engine.Mutation{Op: op, Table: "default", Key: []byte(from), Target: engine.Target{Table: "default", Key: []byte(to)}, Cond: c}
	}
	wantErr(t, apply(t, e, mv(engine.OpRename, "src", "dst", 0))[0], engine.ErrNotFound)
	apply(t, e, engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("src"), Value: []byte("v"), Expires: now + 99, Flags: 3})
	apply(t, e, set("default", "dst", "old"))
	wantErr(t, apply(t, e, mv(engine.OpRename, "src", "dst", engine.CondAbsent))[0], engine.ErrExists)
	wantErr(t, apply(t, e, mv(engine.OpRename, "src", "dst", 0))[0], nil)
	wantMissing(t, e, "default", "src")
	if it := wantValue(t, e, "default", "dst", "v"); it.Expires != now+99 || it.Flags != 3 {
		t.Fatalf("rename lost metadata: %+v", it)
	}
	wantErr(t, apply(t, e, mv(engine.OpRename, "dst", "dst", 0))[0], nil)
	wantValue(t, e, "default", "dst", "v")
	wantErr(t, apply(t, e, mv(engine.OpCopy, "dst", "cp", engine.CondAbsent))[0], nil)
	wantErr(t, apply(t, e, mv(engine.OpCopy, "dst", "cp", engine.CondAbsent))[0], engine.ErrExists)
	wantValue(t, e, "default", "dst", "v")
	wantValue(t, e, "default", "cp", "v")
	m := mv(engine.OpCopy, "dst", "x", 0)
	m.Target.Table = "db1"
	if scoped(e) {
		wantRefused(t, e, m)
		wantMissing(t, e, "db1", "x")
		return
	}
	wantErr(t, apply(t, e, m)[0], nil)
	wantValue(t, e, "db1", "x", "v")
}

func testFlush(t *testing.T, e engine.Engine) {
	apply(t, e, set("a", "1", "v"), set("a", "2", "v"), set("b", "1", "v"), set("ab", "1", "v"))
	r := apply(t, e, engine.Mutation{Op: engine.OpFlush, Table: "a"}, set("a", "3", "new"))
	wantErr(t, r[0], nil)
	wantMissing(t, e, "a", "1")
	wantMissing(t, e, "a", "2")
	wantValue(t, e, "a", "3", "new")
	wantValue(t, e, "b", "1", "v")
	wantValue(t, e, "ab", "1", "v")
	if scoped(e) {
		wantRefused(t, e, set("c", "k", "v"), engine.Mutation{Op: engine.OpFlush}, set("d", "k", "v"))
		wantRefused(t, e, engine.Mutation{Op: engine.OpFlush})
		wantValue(t, e, "a", "3", "new")
		wantMissing(t, e, "c", "k")
		return
	}
	apply(t, e, set("c", "k", "v"), engine.Mutation{Op: engine.OpFlush}, set("d", "k", "v"))
	wantMissing(t, e, "a", "3")
	wantMissing(t, e, "b", "1")
	wantMissing(t, e, "c", "k")
	wantValue(t, e, "d", "k", "v")
}

func testBatchSeesOwnWrites(t *testing.T, e engine.Engine) {
	r := apply(t, e,
		set("default", "k", "1"),
		incr("k", 1),
		engine.Mutation{Op: engine.OpGet, Table: "default", Key: []byte("k")},
		engine.Mutation{Op: engine.OpDelete, Table: "default", Key: []byte("k")},
		engine.Mutation{Op: engine.OpGet, Table: "default", Key: []byte("k")},
	)
	if string(r[2].New.Value) != "2" || !errors.Is(r[4].Err, engine.ErrNotFound) {
		t.Fatalf("batch results = %+v", r)
	}
	wantMissing(t, e, "default", "k")
}

func testExpiredInvisible(t *testing.T, e engine.Engine) {
	apply(t, e, engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("e"), Value: []byte("v"), Expires: now})
	wantMissing(t, e, "default", "e")
	// An expired item is absent for conditions too.
	wantErr(t, apply(t, e, engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("e"), Value: []byte("n"), Cond: engine.CondAbsent})[0], nil)
	wantValue(t, e, "default", "e", "n")
	apply(t, e, engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("e2"), Value: []byte("v"), Expires: now - 1})
	wantErr(t, apply(t, e, incr("e2", 1))[0], nil)
	wantValue(t, e, "default", "e2", "1")
	// An item written already expired earlier in the same batch is absent to the batch's later mutations.
	r := apply(t, e,
		engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("e3"), Value: []byte("v"), Expires: now - 1},
		engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("e3"), Value: []byte("add"), Cond: engine.CondAbsent})
	wantErr(t, r[1], nil)
	wantValue(t, e, "default", "e3", "add")
}

func scanKeys(t *testing.T, e engine.Engine, table string, r engine.Range) []string {
	t.Helper()
	return scanKeysAt(t, e, table, r, now)
}

// scanKeysAt lists "key=value" of the items Scan finds live at ts.
func scanKeysAt(t *testing.T, e engine.Engine, table string, r engine.Range, ts int64) []string {
	t.Helper()
	s, ok := e.(engine.Scanner)
	if !ok {
		t.Fatalf("%T is not an engine.Scanner", e)
	}
	var keys []string
	err := s.Scan(ctx, table, r, ts, func(k []byte, it engine.Item) bool {
		v := string(it.Value)
		if it.Kind != engine.KindString { // a meta holds a generation, which differs between engines
			m, err := engine.DecodeCollMeta(it.Value)
			v = fmt.Sprintf("%v(%d members, %v)", it.Kind, m.Count, err)
		}
		keys = append(keys, string(k)+"="+v)
		return true
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return keys
}

func testScan(t *testing.T, e engine.Engine) {
	apply(t, e, set("t", "b", "2"), set("t", "a", "1"), set("t", "c", "3"), set("t", "\xff", "ff"),
		set("t", "a\x00", "0"), set("u", "a", "other"),
		engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("bx"), Value: []byte("dead"), Expires: now - 1})
	got := fmt.Sprint(scanKeys(t, e, "t", engine.Range{}))
	if want := "[a=1 a\x00=0 b=2 c=3 \xff=ff]"; got != want {
		t.Fatalf("scan all = %q, want %q", got, want)
	}
	got = fmt.Sprint(scanKeys(t, e, "t", engine.Range{Start: []byte("a\x00"), End: []byte("c")}))
	if want := "[a\x00=0 b=2]"; got != want {
		t.Fatalf("scan range = %q, want %q", got, want)
	}
	got = fmt.Sprint(scanKeys(t, e, "t", engine.PrefixRange([]byte("b"))))
	if want := "[b=2]"; got != want {
		t.Fatalf("scan prefix = %q, want %q", got, want)
	}
	var n int
	e.(engine.Scanner).Scan(ctx, "t", engine.Range{}, now, func([]byte, engine.Item) bool { n++; return n < 2 })
	if n != 2 {
		t.Fatalf("scan did not stop when fn returned false: %d calls", n)
	}
	if got := scanKeys(t, e, "nosuch", engine.Range{}); len(got) != 0 {
		t.Fatalf("scan of empty table = %q", got)
	}
}

func testTables(t *testing.T, e engine.Engine) {
	tl, ok := e.(engine.TableLister)
	if !ok {
		t.Fatalf("%T is not an engine.TableLister", e)
	}
	apply(t, e, set("b", "k", "v"), set("a", "k", "v"), set("a\x00z", "k", "v"), set("c", "k", "v"))
	apply(t, e, engine.Mutation{Op: engine.OpDelete, Table: "c", Key: []byte("k")})
	names, err := tl.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(names), fmt.Sprint([]string{"a", "a\x00z", "b"}); got != want {
		t.Fatalf("Tables = %q, want %q", got, want)
	}
}

func testSweep(t *testing.T, e engine.Engine) {
	sw, ok := e.(engine.Sweeper)
	if !ok {
		t.Fatalf("%T is not an engine.Sweeper", e)
	}
	for i := 0; i < 30; i++ {
		exp := int64(0)
		if i%3 == 0 {
			exp = now - 1
		}
		apply(t, e, engine.Mutation{Op: engine.OpSet, Table: fmt.Sprint("t", i%2), Key: []byte(fmt.Sprint(i)), Value: []byte("v"), Expires: exp})
	}
	removed := 0
	for i := 0; i < 20; i++ {
		n, err := sw.Sweep(ctx, now, 7)
		if err != nil {
			t.Fatal(err)
		}
		removed += n
	}
	if removed != 10 {
		t.Fatalf("swept %d expired items, want 10", removed)
	}
	live := 0
	for i := 0; i < 30; i++ {
		if _, found := get(t, e, fmt.Sprint("t", i%2), fmt.Sprint(i)); found {
			live++
		}
	}
	if live != 20 {
		t.Fatalf("%d live items after sweep, want 20", live)
	}
}

func testConcurrentIncr(t *testing.T, e engine.Engine) {
	const workers, each = 8, 50
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{incr("ctr", 1)}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	wantValue(t, e, "default", "ctr", fmt.Sprint(workers*each))
}

// CheckDecorator proves that wrap (a decorator such as the read cache) offers exactly the optional abilities of
// the engine it wraps, plus extra (those it has by itself): it wraps a memory engine showing each subset of
// abilities in turn. A decorator that claimed Scanner over an engine without ordered scans would make the
// command layer promise what the engine cannot do. It also checks that wrap reports the read levels of the
// engine it wraps (engine.ReadLevelsOf), and its batch scope (engine.SingleItemOnly).
func CheckDecorator(t *testing.T, wrap func(engine.Engine) engine.Engine, extra engine.Ability) {
	t.Helper()
	for a := engine.Ability(0); a < 16; a++ {
		inner := engine.Expose(memstore.New(), a)
		w := wrap(inner)
		if got, want := engine.AbilitiesOf(w), a|extra; got != want {
			t.Errorf("wrapping an engine with %v gives %v, want %v", a, got, want)
		}
		w.Close()
	}
	// Read levels are the wrapped engine's: a decorator over an engine serving only stale reads must not let a
	// linearizable read through.
	_, stale := NewLevels(memstore.New(), engine.Serializable)
	w := wrap(stale)
	if got := engine.ReadLevelsOf(w); len(got) != 1 || got[0] != engine.Serializable {
		t.Errorf("wrapping an engine serving only serializable reads gives one serving %v", got)
	}
	w.Close() // So is the batch scope: a decorator over an engine refusing multi-item batches must say so too.
	w = wrap(singleItem{memstore.New()})
	if !engine.SingleItemOnly(w) {
		t.Errorf("wrapping an engine whose batches reach one item gives one claiming more")
	}
	w.Close()
}
