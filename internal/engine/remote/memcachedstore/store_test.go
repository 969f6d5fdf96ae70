package memcachedstore

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
	"anykv/internal/engine/remote/remotetest"
)

var ctx = context.Background()

// open starts a memcached for the test and opens the engine over it with prefix.
func open(t *testing.T, prefix string) (*Store, *memcache.Client) {
	t.Helper()
	addr := strings.TrimPrefix(remotetest.Start(t, "memcached"), "memcache://")
	s := remotetest.Open(t, Open, "memcached://"+addr+"?prefix="+prefix)
	t.Cleanup(func() { s.Close() })
	return s, memcache.New(addr)
}

func set(key string, val []byte) *engine.Batch {
	return &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte(key), Value: val}}}
}

// TestKeys: keys memcached cannot hold (long, binary, spaces) are mapped to legal keys and read back; an item
// stored under the mapped key for another key is an error, never taken for the item.
func TestKeys(t *testing.T) {
	s, mc := open(t, "k:")
	keys := []string{strings.Repeat("x", 300), "a b\r\n\x00\xff", "", strings.Repeat("y", 180)}
	for _, k := range keys {
		if _, err := s.Apply(ctx, set(k, []byte("v:"+k))); err != nil {
			t.Fatalf("set %q: %v", k, err)
		}
	}
	for _, k := range keys {
		it, err := s.Get(ctx, "t", []byte(k), 1)
		if err != nil || string(it.Value) != "v:"+k {
			t.Fatalf("get %q = %q, %v", k, it.Value, err)
		}
	}
	// Copy the long key's memcached item over another key's: that key must now fail to read, not answer.
	long := s.b.key(slotBytes(remote.Slot{Table: "t", Key: []byte(keys[0])}))
	other := s.b.key(slotBytes(remote.Slot{Table: "t", Key: []byte(keys[3])}))
	if !strings.HasPrefix(long, "k:h") || len(long) > maxKey || !strings.HasPrefix(other, "k:k") {
		t.Fatalf("mapped keys %q, %q", long, other)
	}
	mi, err := mc.Get(long)
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.Set(&memcache.Item{Key: other, Value: mi.Value}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "t", []byte(keys[3]), 1); !errors.Is(err, engine.ErrCorrupt) {
		t.Fatalf("get of a key holding another key's item: %v, want ErrCorrupt", err)
	}
}

// TestTooLarge: a value above the server's item size is refused with ErrTooLarge and the old value stays.
func TestTooLarge(t *testing.T) {
	s, _ := open(t, "big:")
	if _, err := s.Apply(ctx, set("k", []byte("old"))); err != nil {
		t.Fatal(err)
	}
	_, err := s.Apply(ctx, set("k", make([]byte, s.b.maxItem)))
	if !errors.Is(err, engine.ErrTooLarge) || !strings.Contains(err.Error(), "memcached") {
		t.Fatalf("set of %d bytes: %v, want ErrTooLarge naming memcached", s.b.maxItem, err)
	}
	if it, err := s.Get(ctx, "t", []byte("k"), 1); err != nil || string(it.Value) != "old" {
		t.Fatalf("after a refused set: %q, %v", it.Value, err)
	}
}

// TestCounterLost: versions keep growing after memcached lost the version counter (a restart or an eviction).
func TestCounterLost(t *testing.T) {
	s, mc := open(t, "ctr:")
	res, err := s.Apply(ctx, set("k", []byte("1")))
	if err != nil {
		t.Fatal(err)
	}
	before := res[0].New.Version
	if err := mc.Delete(s.b.counter); err != nil {
		t.Fatal(err)
	}
	res, err = s.Apply(ctx, set("k", []byte("2")))
	if err != nil {
		t.Fatal(err)
	}
	if after := res[0].New.Version; after <= before {
		t.Fatalf("version %d after the counter was lost, %d before", after, before)
	}
}

// TestExptime: memcached's exptime never ends before anykv's expiry; relative within 30 days, absolute beyond.
func TestExptime(t *testing.T) {
	now := time.Unix(1_700_000_000, 500_000_000)
	ms := now.UnixMilli()
	for _, c := range []struct {
		expires int64
		want    int32
	}{
		{0, 0},
		{ms + 1, 2},       // 1 ms: rounded up to a second, plus one
		{ms - 5000, 1},    // already past: the shortest exptime, never 0 (which would keep it forever)
		{ms + 10_000, 11}, // 10 s
		{ms + 30*86400*1000 - 2000, 30*86400 - 1},
		{ms + 40*86400*1000, int32((ms+40*86400*1000+999)/1000 + 60)}, // absolute past 30 days, rounded up
		{int64(1) << 50, 0}, // past 2038: beyond 32 bits, kept until deleted
	} {
		if got := exptime(c.expires, now); got != c.want {
			t.Errorf("exptime(%d) = %d, want %d", c.expires, got, c.want)
		}
	}
}

// TestCommitFaults: a commit whose answer was lost is reported, never retried; a write (or a delete, which is a
// cas of a tombstone) that meets a concurrent one is refused by memcached's cas and retried.
func TestCommitFaults(t *testing.T) {
	s, _ := open(t, "fault:")
	incr := &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpIncr, Table: "t", Key: []byte("n"), Incr: engine.IncrArgs{Delta: 1, Create: true}}}}
	value := func() string {
		it, err := s.Get(ctx, "t", []byte("n"), 1)
		if errors.Is(err, engine.ErrNotFound) {
			return "absent"
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(it.Value)
	}
	newEngine := func(b remote.Backend) *remote.Engine {
		e := remote.New(b)
		e.SingleItem = "memcached"
		return e
	}
	lost := &remotetest.Faulty{Backend: s.b, After: func(err error) error {
		if err != nil {
			return err
		}
		return errors.Join(remote.ErrUnknownOutcome, errors.New("connection reset after cas was sent"))
	}}
	if _, err := newEngine(lost).Apply(ctx, incr); !errors.Is(err, remote.ErrUnknownOutcome) || lost.Commits != 1 {
		t.Fatalf("lost answer: err %v after %d commits, want ErrUnknownOutcome after 1", err, lost.Commits)
	}
	if v := value(); v != "1" {
		t.Fatalf("after a lost answer n = %s, want 1 (applied once)", v)
	}
	racing := func(n int) {
		if n <= 2 {
			if _, err := s.Apply(ctx, set("n", []byte("10"))); err != nil {
				t.Error(err)
			}
		}
	}
	f := &remotetest.Faulty{Backend: s.b, Before: racing}
	res, err := newEngine(f).Apply(ctx, incr)
	if err != nil || f.Commits != 3 || string(res[0].New.Value) != "11" || value() != "11" {
		t.Fatalf("conflicts: %v after %d commits, result %+v, n = %s", err, f.Commits, res, value())
	}
	// DEL returns the value it deleted: a delete that raced a write must not delete the write unseen.
	del := &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpDelete, Table: "t", Key: []byte("n")}}}
	f = &remotetest.Faulty{Backend: s.b, Before: racing}
	res, err = newEngine(f).Apply(ctx, del)
	if err != nil || f.Commits != 3 || string(res[0].Old.Value) != "10" || value() != "absent" {
		t.Fatalf("delete with conflicts: %v after %d commits, result %+v, n = %s", err, f.Commits, res, value())
	}
}

// TestIdleConnectionsDeadAfterARestart: when memcached restarts, every idle connection of the engine's pool is
// dead; the next requests must not fail one per dead connection (they answered EOF, up to the pool's 64), since
// a read, or an increment of the version counter, can go again on a new connection.
func TestIdleConnectionsDeadAfterARestart(t *testing.T) {
	addr := strings.TrimPrefix(remotetest.Start(t, "memcached"), "memcache://")
	var mu sync.Mutex
	var open []net.Conn
	proxy := remotetest.Proxy(t, addr, func(client, server net.Conn) {
		mu.Lock()
		open = append(open, client, server)
		mu.Unlock()
		go io.Copy(server, client)
		io.Copy(client, server)
	})
	s := remotetest.Open(t, Open, "memcached://"+proxy+"?prefix=idle:")
	t.Cleanup(func() { s.Close() })
	var wg sync.WaitGroup // several connections at once, so the pool holds several idle ones
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Apply(ctx, set("k"+strconv.Itoa(i), []byte("v"))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	for _, c := range open { // what a restart does to the connections the pool keeps
		c.Close()
	}
	mu.Unlock()
	for i := range 8 {
		if _, err := s.Get(ctx, "t", []byte("k"+strconv.Itoa(i)), 1); err != nil {
			t.Errorf("read %d after the restart: %v", i, err)
		}
		if _, err := s.Apply(ctx, set("n"+strconv.Itoa(i), []byte("v"))); err != nil {
			t.Errorf("write %d after the restart: %v", i, err)
		}
	}
}
