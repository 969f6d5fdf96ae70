package kv_test

import (
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

// TestAnnotations checks that an annotation counts only for the item version it names, and that the sweep
// deletes the void ones (item rewritten, item gone) and keeps the live one.
func TestAnnotations(t *testing.T) {
	eng := memstore.New()
	s := kv.New(eng, kv.Options{SweepInterval: -1})
	defer s.Close()
	if _, err := s.Apply(ctx, []engine.Mutation{set("live", "1"), set("rewritten", "1"), set("gone", "1")}); err != nil {
		t.Fatal(err)
	}
	annotate := func(key string) {
		it, err := s.Get(ctx, "t", []byte(key))
		if err != nil {
			t.Fatal(err)
		}
		m := engine.Mutation{Op: engine.OpSet, Table: engine.MemberTable("t"), Key: engine.AnnotationKey([]byte(key)),
			Value: engine.AppendAnnotation(nil, it.Version, []byte("bits"))}
		if _, err := eng.Apply(ctx, &engine.Batch{Now: s.Now(), Muts: []engine.Mutation{m}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"live", "rewritten", "gone"} {
		annotate(k)
	}
	if _, err := s.Apply(ctx, []engine.Mutation{set("rewritten", "2"), {Op: engine.OpDelete, Table: "t", Key: []byte("gone")}}); err != nil {
		t.Fatal(err)
	}
	payload := func(key string) string {
		it, err := s.Get(ctx, "t", []byte(key))
		if err != nil {
			return "absent"
		}
		p, err := s.Annotation(ctx, "t", []byte(key), it, s.Now())
		if err != nil {
			t.Fatal(err)
		}
		return string(p)
	}
	if got := payload("live") + "," + payload("rewritten"); got != "bits," {
		t.Fatalf("annotations of live, rewritten = %q, want \"bits,\"", got)
	}
	count := func() int {
		n := 0
		eng.Scan(ctx, engine.MemberTable("t"), engine.Range{}, s.Now(), func([]byte, engine.Item) bool { n++; return true })
		return n
	}
	if n := count(); n != 3 {
		t.Fatalf("%d annotations before the sweep, want 3", n)
	}
	s.SweepOnce(ctx)
	if n := count(); n != 1 || payload("live") != "bits" {
		t.Fatalf("%d annotations after the sweep (live: %q), want only the live one", n, payload("live"))
	}
}
