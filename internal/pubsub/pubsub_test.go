package pubsub

import (
	"sync"
	"testing"

	"anykv/internal/glob"
)

type rec struct {
	mu  sync.Mutex
	got []string
}

func (r *rec) Deliver(pattern, channel string, msg []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, pattern+"|"+channel+"|"+string(msg))
}

func TestPublishReachesChannelsAndPatterns(t *testing.T) {
	b := New()
	a, p := &rec{}, &rec{}
	if !b.Subscribe("news", a) || b.Subscribe("news", a) {
		t.Fatal("subscribe twice")
	}
	b.PSubscribe("n*", glob.Compile([]byte("n*")), p)
	b.PSubscribe("x*", glob.Compile([]byte("x*")), p)
	if n := b.Publish("news", []byte("hi")); n != 2 {
		t.Fatalf("publish reached %d", n)
	}
	if n := b.Publish("other", []byte("no")); n != 0 {
		t.Fatalf("publish to nobody reached %d", n)
	}
	if len(a.got) != 1 || a.got[0] != "|news|hi" || len(p.got) != 1 || p.got[0] != "n*|news|hi" {
		t.Fatalf("a %v, p %v", a.got, p.got)
	}
	if b.NumSub("news") != 1 || b.NumPat() != 2 || len(b.Channels(nil)) != 1 || len(b.Channels([]byte("z*"))) != 0 {
		t.Fatal("introspection")
	}
	b.Unsubscribe("news", a)
	b.PUnsubscribe("n*", p)
	if n := b.Publish("news", []byte("late")); n != 0 || b.NumPat() != 1 || len(b.Channels(nil)) != 0 {
		t.Fatalf("after unsubscribing: %d", n)
	}
}
