package main

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/cluster"
	"anykv/internal/lincheck"
	"anykv/internal/servertest"
)

// casScript writes ARGV[2] if the key holds ARGV[1] (absent when ARGV[1] is ""): a compare-and-set on the value,
// atomic because a script runs as one engine batch.
const casScript = `local v = redis.call('GET', KEYS[1])
if (v == false and ARGV[1] == '') or v == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 end
return 0`

// TestEtcdClusterIsLinearizable: clients read, write and compare-and-set a few keys through two anykv front ends
// over a 3-member etcd cluster while members are killed with SIGKILL and restarted, one at a time; the history
// of what the clients saw must be linearizable (porcupine, internal/lincheck). The negative control runs the
// same recording against a front end whose item cache is on (--exclusive) while the other front end writes:
// the stale read that cache serves must be caught, or the check proves nothing.
func TestEtcdClusterIsLinearizable(t *testing.T) {
	needEtcd(t)
	dir := filepath.Join(t.TempDir(), "cluster")
	st, err := cluster.Up("etcd", 3, dir, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.Down(dir) })
	fronts := []*servertest.Server{servertest.Start(t, servertest.Options{Engine: st.URL}),
		servertest.Start(t, servertest.Options{Engine: st.URL})}

	t.Run("members killed", func(t *testing.T) {
		linearizableUnderKills(t, st, fronts, []int{0, 1, 2}, 150, nil, nil)
	})

	t.Run("negative control: a stale cache is caught", func(t *testing.T) {
		cached := servertest.Start(t, servertest.Options{Engine: st.URL, Args: []string{"--exclusive"}})
		a, b := client(t, cached.RESP), client(t, fronts[0].RESP)
		h := lincheck.NewHistory()
		record := func(id int, c *goredis.Client, in lincheck.Input) string { return recordOp(t, h, id, c, in) }
		record(1, b, lincheck.Input{Kind: lincheck.Put, Key: "stale", Value: "v0"})
		record(0, a, lincheck.Input{Kind: lincheck.Get, Key: "stale"}) // now in a's cache
		record(1, b, lincheck.Input{Kind: lincheck.Put, Key: "stale", Value: "v1"})
		if got := record(0, a, lincheck.Input{Kind: lincheck.Get, Key: "stale"}); got != "v0" {
			t.Fatalf("the cached front end read %q: the control produced no stale read to catch", got)
		}
		if err := h.Check(time.Minute, ""); err == nil {
			t.Fatal("a history with a stale read passed the linearizability check")
		}
	})
}

// linearizableUnderKills runs six clients reading, writing and compare-and-setting three keys through fronts
// while each member in kills is killed with SIGKILL and restarted in turn, perPhase operations apart (the other
// members keep a quorum), and checks that the history is linearizable. down and up, when not nil, run right
// after each kill and each restart.
func linearizableUnderKills(t *testing.T, st *cluster.State, fronts []*servertest.Server, kills []int, perPhase int,
	down, up func(i int)) {
	h := lincheck.NewHistory()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		c := goredis.NewClient(&goredis.Options{Addr: fronts[w%len(fronts)].RESP, MaxRetries: -1, PoolSize: 1,
			DialTimeout: time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second})
		t.Cleanup(func() { c.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			registerClient(c, w, h, &stop)
		}()
	}
	waitOps := func(n int) {
		deadline := time.Now().Add(30 * time.Second)
		for h.Len() < n && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, i := range kills {
		waitOps(h.Len() + perPhase)
		if err := st.Kill(i); err != nil {
			t.Fatal(err)
		}
		if down != nil {
			down(i)
		}
		waitOps(h.Len() + perPhase)
		if err := st.Restart(i); err != nil {
			t.Fatal(err)
		}
		if up != nil {
			up(i)
		}
	}
	waitOps(h.Len() + perPhase)
	stop.Store(true)
	wg.Wait()
	t.Logf("%d operations recorded", h.Len())
	if want := perPhase * 2 * len(kills); h.Len() < want {
		t.Fatalf("only %d operations completed across the kills, want %d", h.Len(), want)
	}
	if err := h.Check(2*time.Minute, vizPath(t)); err != nil {
		t.Fatal(err)
	}
}

// recordOp sends one operation through c as client id, records it in h and returns the value read; an error
// fails the test.
func recordOp(t *testing.T, h *lincheck.History, id int, c *goredis.Client, in lincheck.Input) string {
	t.Helper()
	call := h.Call()
	out, err := do(c, in)
	h.Done(id, in, call, out, err)
	if err != nil {
		t.Fatalf("%+v: %v", in, err)
	}
	return out.Value
}

// registerClient runs random reads, writes and compare-and-sets of three keys until stop, recording each.
func registerClient(c *goredis.Client, id int, h *lincheck.History, stop *atomic.Bool) {
	rng := rand.New(rand.NewSource(int64(id)))
	last := map[string]string{} // what this client last read of each key: its CAS's expectation
	for i := 0; !stop.Load(); i++ {
		in := lincheck.Input{Key: fmt.Sprintf("reg%d", rng.Intn(3)), Value: fmt.Sprintf("c%d-%d", id, i)}
		switch r := rng.Intn(10); {
		case r < 4:
			in.Kind = lincheck.Get
		case r < 7:
			in.Kind = lincheck.Put
		default:
			in.Kind, in.Expect = lincheck.CAS, last[in.Key]
		}
		call := h.Call()
		out, err := do(c, in)
		h.Done(id, in, call, out, err)
		if err == nil && in.Kind == lincheck.Get {
			last[in.Key] = out.Value
		}
	}
}

// do sends one operation.
func do(c *goredis.Client, in lincheck.Input) (lincheck.Output, error) {
	switch in.Kind {
	case lincheck.Get:
		v, err := c.Get(ctx, in.Key).Result()
		if errors.Is(err, goredis.Nil) {
			return lincheck.Output{}, nil
		}
		return lincheck.Output{Value: v}, err
	case lincheck.Put:
		return lincheck.Output{}, c.Set(ctx, in.Key, in.Value, 0).Err()
	}
	n, err := c.Eval(ctx, casScript, []string{in.Key}, in.Expect, in.Value).Int()
	return lincheck.Output{OK: n == 1}, err
}

// vizPath is where a failed check leaves porcupine's picture of the history: a file that outlives the test.
func vizPath(t *testing.T) string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("anykv-lincheck-%s-%d.html", filepath.Base(t.Name()), os.Getpid()))
}
