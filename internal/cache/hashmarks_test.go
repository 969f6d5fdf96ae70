package cache

// Tests of the marks keyed by the slot's hash (95ac65f), from its review. Real collisions of a 64-bit seeded
// hash cannot be found, so these hand begin/end touches whose hashes collide on purpose, as touched would if
// hashOf collided.

import (
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

// hmTouch is the touch of SET table t key k at index i of a batch, with hash h.
func hmTouch(c *Cache, k string, h uint64, through int) touch {
	return touch{slot: slot("t", []byte(k)), hash: h, shard: shardOf(h), through: through}
}

// hmFill reads k through the cache so that it holds it (a write-through needs the key held at begin).
func hmFill(t *testing.T, c *Cache, k string) {
	t.Helper()
	c.Get(rvCtx, "t", []byte(k), 0)
	if _, ok := c.shards[shardOf(c.hashOf(slot("t", []byte(k))))].m.Get([]byte(slot("t", []byte(k)))); !ok {
		t.Fatalf("%s not filled", k)
	}
}

// hmApply applies muts to e as one batch.
func hmApply(t *testing.T, e engine.Engine, muts ...engine.Mutation) []engine.Result {
	res, err := e.Apply(rvCtx, &engine.Batch{Muts: muts})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestHashMarksControlWritesThrough: the setup writes through when nothing collides (else the tests below
// would pass for the wrong reason).
func TestHashMarksControlWritesThrough(t *testing.T) {
	e := memstore.New()
	c := rvNew(e, 64<<20)
	hmApply(t, e, rvSet("a", "0"))
	hmFill(t, c, "a")
	ts := []touch{hmTouch(c, "a", c.hashOf(slot("t", []byte("a"))), 0)}
	gens := c.begin(ts)
	res := hmApply(t, e, rvSet("a", "1"))
	c.end(ts, gens, res, nil)
	if c.writeThroughs.Load() != 1 {
		t.Fatalf("control: %d write-throughs, want 1", c.writeThroughs.Load())
	}
	rvNoMarks(t, c)
}

// TestHashMarksCollidingSlotsOfOneBatch: a batch writing two slots of one hash writes neither through, lifts
// the shared mark, and while it is in flight neither slot is filled.
func TestHashMarksCollidingSlotsOfOneBatch(t *testing.T) {
	for _, order := range [][2]string{{"a", "b"}, {"b", "a"}} {
		e := memstore.New()
		c := rvNew(e, 64<<20)
		hmApply(t, e, rvSet("a", "0"), rvSet("b", "0"))
		hmFill(t, c, order[0]) // the one the map holds (one entry per hash)
		h := c.hashOf(slot("t", []byte(order[0])))
		ts := []touch{hmTouch(c, order[0], h, 0), hmTouch(c, order[1], h, 1)}
		gens := c.begin(ts)
		sh := &c.shards[shardOf(h)]
		if !sh.busy(h) || sh.writing[h].n != 2 {
			t.Fatalf("%v: mark %+v while in flight", order, sh.writing[h])
		}
		c.Get(rvCtx, "t", []byte(order[0]), 0) // must not fill: its hash is marked
		if sh.m.Has([]byte(slot("t", []byte(order[0])))) {
			t.Fatalf("%v: filled while a write of its hash is in flight", order)
		}
		res := hmApply(t, e, rvSet(order[0], "1"), rvSet(order[1], "1"))
		c.end(ts, gens, res, nil)
		if n := c.writeThroughs.Load(); n != 0 {
			t.Fatalf("%v: %d write-throughs of two slots sharing a mark, want 0", order, n)
		}
		rvNoMarks(t, c)
		rvWant(t, c, e, order[0], "after")
	}
}

// TestHashMarksCollidingBatchesInterleaved: X writes a, Y writes b of the same hash; every interleaving of their
// begins and ends denies X's write-through (Y's count or Y's generation shows), and marks are lifted.
func TestHashMarksCollidingBatchesInterleaved(t *testing.T) {
	for _, seq := range []string{"XxYy", "XYxy", "XYyx", "YXxy", "YXyx", "YyXx"} {
		e := memstore.New()
		c := rvNew(e, 64<<20)
		hmApply(t, e, rvSet("a", "0"))
		hmFill(t, c, "a")
		h := c.hashOf(slot("t", []byte("a")))
		tx, ty := []touch{hmTouch(c, "a", h, 0)}, []touch{hmTouch(c, "b", h, 0)}
		var gx, gy []began
		wantWT := int64(0)
		if seq == "XxYy" || seq == "YyXx" { // X alone on its hash from begin to end
			wantWT = 1
		}
		for _, step := range seq {
			switch step {
			case 'X':
				gx = c.begin(tx)
			case 'Y':
				gy = c.begin(ty)
			case 'x':
				c.end(tx, gx, hmApply(t, e, rvSet("a", "1")), nil)
			case 'y':
				c.end(ty, gy, hmApply(t, e, rvSet("b", "1")), nil)
			}
		}
		if n := c.writeThroughs.Load(); n != wantWT {
			t.Errorf("%s: %d write-throughs, want %d", seq, n, wantWT)
		}
		rvNoMarks(t, c)
		rvWant(t, c, e, "a", seq)
	}
}

// TestHashMarksMapsAreSeededAsTheCache: every shard's maps hash a slot as the cache does, before and after a
// flush resets them (Reset keeps the seed), so entries written with the cache's hash are found by the map's own.
func TestHashMarksMapsAreSeededAsTheCache(t *testing.T) {
	e := memstore.New()
	c := rvNew(e, 64<<20)
	check := func(step string) {
		for i := 0; i < 2000; i++ {
			k := []byte{byte(i), byte(i >> 8), 'k'}
			s := slot("t", k)
			sh := &c.shards[shardOf(c.hashOf(s))]
			if sh.m.Hash([]byte(s)) != c.hashOf(s) || sh.calls.Hash([]byte(s)) != c.hashOf(s) || c.hashOfBytes([]byte(s)) != c.hashOf(s) {
				t.Fatalf("%s: shard maps hash %q otherwise than the cache", step, s)
			}
		}
	}
	check("new")
	hmApply(t, e, rvSet("a", "1"))
	hmFill(t, c, "a")
	<-rvGo(t, c, engine.Mutation{Op: engine.OpFlush, Table: "t"})
	check("after a flush")
	hmFill(t, c, "a")
	sh := &c.shards[shardOf(c.hashOf(slot("t", []byte("a"))))]
	if !sh.m.Has([]byte(slot("t", []byte("a")))) {
		t.Fatal("after a flush, an entry filled with the cache's hash is not found by the map's")
	}
}
