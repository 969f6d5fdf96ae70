package golibs

import (
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"

	"anykv/internal/servertest"
)

// TestRedsync: two clients contend for one redsync mutex: the second is refused while the first holds it, gets
// it once the first's expiry passes, and the first can then neither unlock nor extend it; Extend works for the
// holder.
func TestRedsync(t *testing.T) {
	addr := servertest.Start(t, servertest.Options{}).RESP
	pool := func() *redsync.Redsync {
		c := goredislib.NewClient(&goredislib.Options{Addr: addr})
		t.Cleanup(func() { c.Close() })
		return redsync.New(goredis.NewPool(c))
	}
	one, two := pool(), pool()
	first := one.NewMutex("res", redsync.WithExpiry(time.Second))
	if err := first.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := two.NewMutex("res", redsync.WithTries(1)).Lock(); err == nil {
		t.Fatal("a second client took a held lock")
	}
	if ok, err := first.Extend(); !ok || err != nil {
		t.Fatalf("extend: %v %v", ok, err)
	}
	if until := time.Until(first.Until()); until < 500*time.Millisecond {
		t.Fatalf("held for %v more after Extend", until)
	}
	second := two.NewMutex("res", redsync.WithExpiry(5*time.Second), redsync.WithTries(60),
		redsync.WithRetryDelay(50*time.Millisecond))
	start := time.Now()
	if err := second.Lock(); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 500*time.Millisecond {
		t.Errorf("got the lock after %v, before the holder's expiry", waited)
	}
	if ok, _ := first.Unlock(); ok {
		t.Error("the expired holder unlocked the new holder's lock")
	}
	if ok, _ := first.Extend(); ok {
		t.Error("the expired holder extended the new holder's lock")
	}
	if ok, err := second.Unlock(); !ok || err != nil {
		t.Fatalf("unlock: %v %v", ok, err)
	}
	if err := one.NewMutex("res", redsync.WithTries(1)).Lock(); err != nil {
		t.Fatalf("after unlock: %v", err)
	}
}
