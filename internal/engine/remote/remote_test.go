package remote

import (
	"context"
	"fmt"
	"testing"

	"anykv/internal/engine"
)

func TestNet(t *testing.T) {
	put := func(tb, k, v string) engine.Write {
		return engine.Write{Table: tb, Key: []byte(k), Item: engine.Item{Value: []byte(v)}}
	}
	del := func(tb, k string) engine.Write { return engine.Write{Table: tb, Key: []byte(k), Delete: true} }
	flush := func(tb string) engine.Write { return engine.Write{Table: tb, Flush: true} }
	show := func(w Writes) string {
		s := fmt.Sprintf("all=%v flush=%v", w.FlushAll, w.Flush)
		for _, d := range w.Delete {
			s += fmt.Sprintf(" -%s/%s", d.Table, d.Key)
		}
		for _, p := range w.Put {
			s += fmt.Sprintf(" +%s/%s=%s", p.Table, p.Key, p.Item.Value)
		}
		return s
	}
	for _, c := range []struct {
		in   []engine.Write
		want string
	}{
		{[]engine.Write{put("a", "2", "x"), put("a", "1", "y"), put("a", "2", "z")}, "all=false flush=[] +a/1=y +a/2=z"},
		{[]engine.Write{put("a", "1", "x"), del("a", "1")}, "all=false flush=[] -a/1"},
		{[]engine.Write{put("a", "1", "x"), flush("a"), put("a", "2", "y"), del("a", "3"), put("b", "1", "z")},
			"all=false flush=[a] +a/2=y +b/1=z"},
		{[]engine.Write{put("a", "1", "x"), flush("b"), flush(""), del("c", "1"), put("d", "1", "y")},
			"all=true flush=[] +d/1=y"},
		{[]engine.Write{flush(""), flush("a")}, "all=true flush=[]"},
	} {
		if got := show(Net(c.in)); got != c.want {
			t.Errorf("Net(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}

// counterBackend hands out the counter's next values on every Read and advances it only at Commit, as the etcd
// and Cassandra backends do; it keeps items in a map.
type counterBackend struct {
	ctr   uint64
	items map[slotKey]engine.Item
	puts  []uint64 // versions of every committed put
}

func (c *counterBackend) Read(_ context.Context, slots []Slot, n int) ([]Stored, []uint64, bool, any, error) {
	out := make([]Stored, len(slots))
	for i, s := range slots {
		if it, ok := c.items[slotKey{s.Table, string(s.Key)}]; ok {
			out[i] = Stored{Item: it, Found: true, Stamp: it.Version}
		}
	}
	vs := make([]uint64, n)
	for i := range vs {
		vs[i] = c.ctr + uint64(i) + 1
	}
	return out, vs, true, nil, nil
}

func (c *counterBackend) Commit(_ context.Context, _ []Check, w *Writes, _ any) error {
	for _, p := range w.Put {
		c.items[slotKey{p.Table, string(p.Key)}] = p.Item
		c.puts = append(c.puts, p.Item.Version)
		c.ctr = max(c.ctr, p.Item.Version)
	}
	return nil
}

func (c *counterBackend) Get(_ context.Context, s Slot) (engine.Item, bool, error) {
	it, ok := c.items[slotKey{s.Table, string(s.Key)}]
	return it, ok, nil
}

func (c *counterBackend) Close() error { return nil }

// A collection op needs more versions than its batch reserved (the meta and the member): the extra ones must not
// repeat those already handed out, even from a backend whose counter moves only at commit.
func TestExtraVersionsAreFresh(t *testing.T) {
	b := &counterBackend{items: map[slotKey]engine.Item{}}
	e := New(b)
	m := engine.Mutation{Op: engine.OpMemberSet, Table: "t", Key: []byte("h"), Value: []byte("v"),
		Coll: engine.CollArgs{Kind: engine.KindHash, Member: []byte("f")}}
	set := engine.Mutation{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte("v")}
	if _, err := e.Apply(context.Background(), &engine.Batch{Now: 1, Muts: []engine.Mutation{set, m}}); err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for _, v := range b.puts {
		if seen[v] {
			t.Fatalf("version %d written twice in one batch: %v", v, b.puts)
		}
		seen[v] = true
	}
	if len(b.puts) < 3 {
		t.Fatalf("a SET and a new hash member wrote %d items, want 3", len(b.puts))
	}
}
