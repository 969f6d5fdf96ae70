package enginetest

import (
	"errors"
	"strings"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

var errInjected = errors.New("injected: checksum mismatch")

// A Faulty engine without a fault is the engine it wraps.
func TestFaultyConformance(t *testing.T) {
	Run(t, func(*testing.T) engine.Engine {
		_, e := NewFaulty(memstore.New(), errInjected)
		return e
	}, engine.AllAbilities)
}

func abilities(e engine.Engine) [4]bool {
	_, sc := e.(engine.Scanner)
	_, tl := e.(engine.TableLister)
	_, sw := e.(engine.Sweeper)
	_, st := e.(engine.Statser)
	return [4]bool{sc, tl, sw, st}
}

func TestFaultyForwardsExactlyTheAbilities(t *testing.T) {
	ms := memstore.New()
	defer ms.Close()
	type base struct{ engine.Engine }
	inners := []engine.Engine{
		ms,
		base{ms},
		struct {
			base
			engine.Scanner
		}{base{ms}, ms},
		struct {
			base
			engine.TableLister
			engine.Statser
		}{base{ms}, ms, ms},
		struct {
			base
			engine.Sweeper
		}{base{ms}, ms},
		struct {
			base
			engine.Scanner
			engine.Sweeper
			engine.Statser
		}{base{ms}, ms, ms, ms},
	}
	for i, in := range inners {
		_, e := NewFaulty(in, errInjected)
		if got, want := abilities(e), abilities(in); got != want {
			t.Errorf("inner %d: decorator has abilities %v, inner %v", i, got, want)
		}
	}
}

func TestFaultyFailsSelectedReads(t *testing.T) {
	f, e := NewFaulty(memstore.New(), errInjected)
	defer e.Close()
	muts := []engine.Mutation{
		{Op: engine.OpSet, Table: "t", Key: []byte("a"), Value: []byte("1")},
		{Op: engine.OpSet, Table: "t", Key: []byte("bad"), Value: []byte("2")},
		{Op: engine.OpSet, Table: "t", Key: []byte("c"), Value: []byte("3")},
	}
	if _, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: muts}); err != nil {
		t.Fatal(err)
	}
	f.Fail(func(table string, key []byte) bool { return key == nil || strings.HasPrefix(string(key), "bad") })

	if _, err := e.Get(ctx, "t", []byte("bad"), now); !errors.Is(err, errInjected) {
		t.Fatalf("Get of a faulty key: %v", err)
	}
	if it, err := e.Get(ctx, "t", []byte("a"), now); err != nil || string(it.Value) != "1" {
		t.Fatalf("Get of a sound key: %q, %v", it.Value, err)
	}
	var seen []string
	err := e.(engine.Scanner).Scan(ctx, "t", engine.Range{}, now, func(k []byte, _ engine.Item) bool {
		seen = append(seen, string(k))
		return true
	})
	if !errors.Is(err, errInjected) || strings.Join(seen, ",") != "a" {
		t.Fatalf("Scan over a faulty key: saw %q, err %v", seen, err)
	}
	if _, err := e.(engine.TableLister).Tables(ctx); !errors.Is(err, errInjected) {
		t.Fatalf("Tables: %v", err)
	}
	res, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{
		{Op: engine.OpGet, Table: "t", Key: []byte("a")},
		{Op: engine.OpGet, Table: "t", Key: []byte("bad")},
	}})
	if err != nil || res[0].Err != nil || !errors.Is(res[1].Err, errInjected) {
		t.Fatalf("OpGet in a batch: %+v, %v", res, err)
	}
	_, err = e.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{
		{Op: engine.OpSet, Table: "t", Key: []byte("a"), Value: []byte("x")},
		{Op: engine.OpCopy, Table: "t", Key: []byte("c"), Target: engine.Target{Table: "t", Key: []byte("bad2")}},
	}})
	if !errors.Is(err, errInjected) {
		t.Fatalf("a batch writing a faulty key: %v", err)
	}
	f.Fail(nil)
	if it, err := e.Get(ctx, "t", []byte("a"), now); err != nil || string(it.Value) != "1" {
		t.Fatalf("the failed batch was applied: %q, %v", it.Value, err)
	}
	if it, err := e.Get(ctx, "t", []byte("bad"), now); err != nil || string(it.Value) != "2" {
		t.Fatalf("healed Get: %q, %v", it.Value, err)
	}
}
