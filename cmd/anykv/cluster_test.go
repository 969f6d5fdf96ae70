package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/cluster"
	"anykv/internal/servertest"
)

// TestEtcdClusterLosesNoAcknowledgedWrite: two anykv front ends serve a 3-member etcd cluster started by
// `anykv cluster up`; clients write through both while one member is killed with SIGKILL and later restarted.
// Every acknowledged write is then readable through either front end, and `anykv cluster down` leaves no member
// running.
func TestEtcdClusterLosesNoAcknowledgedWrite(t *testing.T) {
	needEtcd(t)
	dir := filepath.Join(t.TempDir(), "cluster")
	out, err := exec.Command(servertest.Binary(t), "cluster", "up", "--engine", "etcd", "--nodes", "3", "--dir", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("cluster up: %v: %s", err, out)
	}
	st, err := cluster.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.Down(dir) })
	if !strings.Contains(string(out), "--engine "+st.URL) {
		t.Fatalf("cluster up did not print the URL %s: %s", st.URL, out)
	}
	fronts := []*servertest.Server{servertest.Start(t, servertest.Options{Engine: st.URL}),
		servertest.Start(t, servertest.Options{Engine: st.URL})}

	var mu sync.Mutex
	acked := map[string]string{}
	var failed, n atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		c := client(t, fronts[w%2].RESP)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				k, v := fmt.Sprintf("w%d:%d", w, i), fmt.Sprintf("v%d-%d", w, i)
				if err := c.Set(ctx, k, v, 0).Err(); err != nil {
					failed.Add(1) // surfaced to the client: not acknowledged
					continue
				}
				mu.Lock()
				acked[k] = v
				mu.Unlock()
				n.Add(1)
			}
		}()
	}
	waitFor := func(target int64) {
		deadline := time.Now().Add(30 * time.Second)
		for n.Load() < target {
			if time.Now().After(deadline) {
				t.Fatalf("only %d writes acknowledged", n.Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor(200)
	if err := st.Kill(0); err != nil {
		t.Fatal(err)
	}
	waitFor(n.Load() + 200) // the two remaining members keep a quorum
	if err := st.Restart(0); err != nil {
		t.Fatal(err)
	}
	waitFor(n.Load() + 200)
	stop.Store(true)
	wg.Wait()
	t.Logf("%d writes acknowledged, %d failed with an error across the kill", len(acked), failed.Load())

	for _, f := range fronts {
		c := client(t, f.RESP)
		for k, v := range acked {
			if got, err := c.Get(ctx, k).Result(); err != nil || got != v {
				t.Fatalf("%s through %s: %q, %v; want %q", k, f.RESP, got, err, v)
			}
		}
	}
	if err := st.Save(dir); err != nil { // Restart changed the member's pid
		t.Fatal(err)
	}
	if out, err := exec.Command(servertest.Binary(t), "cluster", "down", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("cluster down: %v: %s", err, out)
	}
	for _, m := range st.Members {
		if cluster.Running(m.Pid) == "running" {
			t.Errorf("%s (pid %d) still running after cluster down", m.Name, m.Pid)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cluster directory left behind: %v", err)
	}
}
