package memcache

import (
	"slices"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

// TestReadsUseTheServerDefaultLevel: memcached has no way to ask for a level, so its reads (text get, meta mg)
// ask the engine for the server's --consistency.
func TestReadsUseTheServerDefaultLevel(t *testing.T) {
	for _, def := range []engine.Consistency{engine.Linearizable, engine.Serializable} {
		rec, e := enginetest.NewLevels(memstore.New())
		ts := startServerOver(t, e, func(_ *Options, ko *kv.Options) { ko.Consistency = def })
		cl := dial(t, ts.addr)
		cl.roundTrip([]byte("set k 0 0 1\r\nv\r\n"))
		rec.Asked()
		cl.roundTrip([]byte("get k\r\nmg k v\r\n"))
		want := "get " + def.String()
		if def == engine.Linearizable {
			want = "get none" // the default adds nothing to the context
		}
		// three reads: get, mg, and roundTrip's own sentinel mg
		if got := rec.Asked(); !slices.Equal(got, []string{want, want, want}) {
			t.Errorf("default %v: engine saw %v", def, got)
		}
	}
}
