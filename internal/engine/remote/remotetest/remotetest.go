// Package remotetest starts real datastores for the remote engines' tests (through the bench's deploy package,
// so there is one way to start each server) and holds the test every remote engine shares: several front ends
// over one datastore racing increments and compare-and-set loops.
package remotetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/bench/deploy"
	"anykv/internal/cluster"
	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/remote"
)

// Faulty wraps an adapter's real backend for fault tests: Before runs ahead of each real commit (given the
// commit's number, from 1), After may replace its answer.
type Faulty struct {
	remote.Backend
	Commits int
	Before  func(n int)
	After   func(err error) error
}

// Commit implements remote.Backend around the real commit.
func (f *Faulty) Commit(ctx context.Context, checks []remote.Check, w *remote.Writes, tok any) error {
	f.Commits++
	if f.Before != nil {
		f.Before(f.Commits)
	}
	err := f.Backend.Commit(ctx, checks, w, tok)
	if f.After != nil {
		err = f.After(err)
	}
	return err
}

// Start starts the deploy target name (e.g. "postgres", "redis-nopersist", "etcd") on a free loopback port for
// the test and returns its URL. A server that cannot start fails the test when CI=true and skips it otherwise.
func Start(t *testing.T, name string) string {
	t.Helper()
	base, err := deploy.NewBaseDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	s, err := deploy.Start(context.Background(), name, deploy.Options{BaseDir: base})
	if err != nil {
		var ni *deploy.NotInstalledError
		msg := fmt.Sprintf("cannot start %s: %v", name, err)
		if errors.As(err, &ni) {
			msg = fmt.Sprintf("cannot start %s: %s", name, ni.Hint)
		}
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg + " (CI unset: skipping)")
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Logf("stop %s: %v", name, err)
		}
	})
	return s.URL
}

// StartCluster starts a local cluster of engine ("etcd", "redis-cluster") with n nodes through internal/cluster,
// removed when the test ends. A cluster that cannot start fails the test when CI=true and skips it otherwise.
func StartCluster(t *testing.T, engine string, n int) *cluster.State {
	t.Helper()
	dir := t.TempDir() + "/cluster"
	st, err := cluster.Up(engine, n, dir, cluster.Options{})
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot start a %s cluster: %v", engine, err)
		}
		t.Skipf("cannot start a %s cluster: %v (CI unset: skipping)", engine, err)
	}
	t.Cleanup(func() {
		skipped, err := cluster.Down(dir)
		if err != nil {
			t.Logf("cluster down: %v", err)
		}
		for _, s := range skipped {
			t.Logf("cluster down: %s", s)
		}
	})
	return st
}

// Proxy listens on a free loopback port and, for each connection accepted there, dials target and hands both
// connections to serve, which owns them: fault tests put it between an engine and its datastore to cut or
// delay what passes. It returns the proxy's address; the listener closes when the test ends.
func Proxy(t *testing.T, target string, serve func(client, server net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				s, err := net.Dial("tcp", target)
				if err != nil {
					c.Close()
					return
				}
				serve(c, s)
			}()
		}
	}()
	return ln.Addr().String()
}

// CutAnswer is a Proxy serve function that passes everything on until cut reports true for what the client sent
// (a chunk as read): the server's answer to that is not passed on, the client's connection is dropped instead and
// ran is told. The request ran, and the client cannot know: a commit whose answer was lost.
func CutAnswer(cut func(request []byte) bool, ran chan<- struct{}) func(client, server net.Conn) {
	return func(c, s net.Conn) {
		var cutting atomic.Bool
		go func() { // server to client: the answer to the cut request is dropped with the client's connection
			defer c.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				if err != nil {
					return
				}
				if cutting.Load() {
					ran <- struct{}{}
					return
				}
				if _, err := c.Write(buf[:n]); err != nil {
					return
				}
			}
		}()
		defer s.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			if cut(buf[:n]) {
				cutting.Store(true)
			}
			if _, err := s.Write(buf[:n]); err != nil {
				return
			}
		}
	}
}

// Stall is a proxy to target whose connections stop passing bytes, both ways, while Stalled is set (a stopped
// server process, a partition that drops packets): the client's connections stay open and get no answer.
type Stall struct {
	Addr    string
	Stalled atomic.Bool
}

// StartStall starts a Stall proxy to target.
func StartStall(t *testing.T, target string) *Stall {
	p := &Stall{}
	pass := func(dst, src net.Conn) {
		defer dst.Close()
		defer src.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if err != nil {
				return
			}
			for p.Stalled.Load() {
				time.Sleep(10 * time.Millisecond)
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
	}
	p.Addr = Proxy(t, target, func(c, s net.Conn) {
		go pass(c, s)
		pass(s, c)
	})
	return p
}

// Open opens the engine at url with an adapter's Open, failing the test if it cannot.
func Open[E engine.Engine](t *testing.T, open func(context.Context, string) (E, error), url string) E {
	t.Helper()
	e, err := open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Suite runs what every remote engine must pass: the conformance suite, declaring the abilities has, and
// RaceFrontEnds. fresh returns the URL of an empty namespace of the datastore (a new database, a key prefix) for
// each engine of the suite and for the race's two engines together.
func Suite[E engine.Engine](t *testing.T, fresh func(t *testing.T) string, open func(context.Context, string) (E, error),
	has engine.Ability) {
	t.Run("Conformance", func(t *testing.T) {
		enginetest.Run(t, func(t *testing.T) engine.Engine { return Open(t, open, fresh(t)) }, has)
	})
	t.Run("TwoFrontEnds", func(t *testing.T) {
		url := fresh(t)
		RaceFrontEnds(t, func(t *testing.T) engine.Engine { return Open(t, open, url) })
	})
}

// RaceFrontEnds opens two engines over one datastore (open is called twice) and has goroutines on each race
// INCR and compare-and-set increments on the same keys. Every acknowledged increment must be in the final
// counters: no lost update between front ends. An increment whose outcome is unknown (ErrUnknownOutcome: a
// Paxos round cut short under contention on a Cassandra cluster) may or may not be there, so each counter must
// lie between its acknowledged increments and those plus the unknown ones; most must be acknowledged.
func RaceFrontEnds(t *testing.T, open func(t *testing.T) engine.Engine) {
	a, b := open(t), open(t)
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	const now = int64(1_700_000_000_000)
	const perWorker = 40
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		incrs     int
		casOK     int
		unknown   = map[string]int{}
		firstErr  error
		recordErr = func(err error) {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
		// failed records err; it returns false (go on) for an unknown outcome of key, counted.
		failed = func(key string, err error) bool {
			if errors.Is(err, remote.ErrUnknownOutcome) {
				mu.Lock()
				unknown[key]++
				mu.Unlock()
				return false
			}
			recordErr(err)
			return true
		}
	)
	for w, e := range []engine.Engine{a, b, a, b} {
		wg.Add(2)
		go func() { // INCR
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				m := engine.Mutation{Op: engine.OpIncr, Table: "default", Key: []byte("ctr"), Incr: engine.IncrArgs{Delta: 1, Create: true}}
				if _, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{m}}); err != nil {
					if failed("ctr", fmt.Errorf("worker %d incr: %w", w, err)) {
						return
					}
					continue
				}
				mu.Lock()
				incrs++
				mu.Unlock()
			}
		}()
		go func() { // read, then compare-and-set value+1
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				var cur int64
				var ver uint64
				it, err := e.Get(ctx, "default", []byte("cas"), now)
				switch {
				case err == nil:
					cur, _ = engine.ParseInt(it.Value)
					ver = it.Version
				case !errors.Is(err, engine.ErrNotFound):
					recordErr(err)
					return
				}
				m := engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("cas"),
					Value: fmt.Appendf(nil, "%d", cur+1), Cond: engine.CondVersion, Version: ver}
				res, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{m}})
				if err != nil {
					if failed("cas", fmt.Errorf("worker %d cas: %w", w, err)) {
						return
					}
					continue
				}
				if res[0].Err == nil {
					mu.Lock()
					casOK++
					mu.Unlock()
				} else if !engine.IsConditionFailure(res[0].Err) {
					recordErr(res[0].Err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	for _, c := range []struct {
		key  string
		want int
	}{{"ctr", incrs}, {"cas", casOK}} {
		for _, e := range []engine.Engine{a, b} {
			it, err := e.Get(ctx, "default", []byte(c.key), now)
			if err != nil {
				t.Fatalf("get %s: %v", c.key, err)
			}
			got, _ := engine.ParseInt(it.Value)
			if got < int64(c.want) {
				t.Fatalf("%s = %d after %d acknowledged increments: lost updates", c.key, got, c.want)
			}
			if got > int64(c.want+unknown[c.key]) {
				t.Fatalf("%s = %d after %d acknowledged increments and %d of unknown outcome: increments applied twice",
					c.key, got, c.want, unknown[c.key])
			}
		}
	}
	if casOK == 0 {
		t.Fatal("no compare-and-set succeeded")
	}
	if u := unknown["ctr"] + unknown["cas"]; u > incrs+casOK {
		t.Fatalf("%d increments of unknown outcome, more than the %d acknowledged", u, incrs+casOK)
	}
	t.Logf("%d increments, %d of %d compare-and-sets succeeded; %d and %d of unknown outcome", incrs, casOK,
		4*perWorker, unknown["ctr"], unknown["cas"])
}

// StalledScans checks, over e opened through p with a short Timeout (a fraction of a second), that a scan, a
// table list and a sweep of a datastore that stops answering fail with the engine's timeout error once Timeout
// passes (not after the stall, nor with a truncated answer), that a caller's own cancellation is reported as
// the caller's, that the bound is per round trip (a scan of several pages with a slow consumer, longer than
// Timeout in all, succeeds), and that all work again once the datastore answers.
func StalledScans(t *testing.T, e engine.Engine, timeout time.Duration, p *Stall) {
	t.Helper()
	const now = int64(1_700_000_000_000)
	ctx := context.Background()
	sc, tl, sw := e.(engine.Scanner), e.(engine.TableLister), e.(engine.Sweeper)
	const items = 600 // three scan pages of 256
	for i := 0; i < items; i += 100 {
		var muts []engine.Mutation
		for j := i; j < i+100; j++ {
			k := fmt.Appendf(nil, "k%04d", j)
			muts = append(muts, engine.Mutation{Op: engine.OpSet, Table: "t", Key: k, Value: k})
		}
		muts = append(muts, engine.Mutation{Op: engine.OpSet, Table: "t", Key: fmt.Appendf(nil, "x%d", i),
			Value: []byte("v"), Expires: now + 1})
		if _, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: muts}); err != nil {
			t.Fatal(err)
		}
	}
	scan := func(ctx context.Context, slow time.Duration) (int, error) {
		n := 0
		err := sc.Scan(ctx, "t", engine.Range{Start: []byte("k"), End: []byte("l")}, now, func([]byte, engine.Item) bool {
			if n%256 == 0 {
				time.Sleep(slow)
			}
			n++
			return true
		})
		return n, err
	}
	start := time.Now()
	if n, err := scan(ctx, timeout*2/3); err != nil || n != items {
		t.Fatalf("a scan of %d items, slower than Timeout %v in all (%v) but not per page: %d items, %v", items,
			timeout, time.Since(start), n, err)
	}
	calls := []struct {
		name string
		call func(context.Context) error
	}{
		{"Scan", func(ctx context.Context) error { _, err := scan(ctx, 0); return err }},
		{"Tables", func(ctx context.Context) error { _, err := tl.Tables(ctx); return err }},
		{"Sweep", func(ctx context.Context) error { _, err := sw.Sweep(ctx, now+10, 100); return err }},
	}
	p.Stalled.Store(true)
	for _, c := range calls {
		start := time.Now()
		err := c.call(ctx)
		took := time.Since(start)
		if err == nil || took > timeout+2*time.Second {
			t.Fatalf("%s of a stalled datastore: %v after %v; want an error once Timeout %v passes", c.name, err, took, timeout)
		}
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not answer within") {
			t.Fatalf("%s of a stalled datastore: %v; want the engine's timeout error", c.name, err)
		}
		cctx, cancel := context.WithCancel(ctx)
		stop := time.AfterFunc(timeout/4, cancel)
		err = c.call(cctx)
		stop.Stop()
		cancel()
		if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "did not answer") {
			t.Fatalf("%s of a stalled datastore, cancelled by its caller: %v; want the caller's context.Canceled", c.name, err)
		}
	}
	p.Stalled.Store(false)
	deadline := time.Now().Add(20 * time.Second)
	for _, c := range calls {
		for err := c.call(ctx); err != nil; err = c.call(ctx) {
			if time.Now().After(deadline) {
				t.Fatalf("%s does not work again once the datastore answers: %v", c.name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
