package deploy

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"anykv/internal/bench/driver"
	"anykv/internal/servertest"
)

// TestClusterTargetsRestartAndStop deploys the clustered targets --kill uses, kills and restarts one datastore
// member and one front end, checks that data written before is read back after, and that Stop leaves no
// process listening: not a member that was restarted (a new pid), nor a front end.
func TestClusterTargetsRestartAndStop(t *testing.T) {
	bin := servertest.Binary(t)
	ctx := context.Background()
	for _, name := range []string{"anykv+etcd3", "redis-cluster"} {
		t.Run(name, func(t *testing.T) {
			s, err := Start(ctx, name, Options{BaseDir: baseDir(t), AnykvBin: bin})
			if err != nil {
				if _, ok := err.(*NotInstalledError); ok && os.Getenv("CI") != "true" {
					t.Skip(err)
				}
				t.Fatalf("%s: %v", name, err)
			}
			defer s.Stop()
			var addrs []string
			for _, n := range s.Datastore {
				m := n.(*memberNode)
				addrs = append(addrs, m.st.Members[m.i].Addr)
			}
			for _, n := range s.Fronts {
				addrs = append(addrs, n.(*procNode).addr)
			}
			if want := map[string][2]int{"anykv+etcd3": {3, 2}, "redis-cluster": {6, 0}}[name]; len(s.Datastore) != want[0] || len(s.Fronts) != want[1] {
				t.Fatalf("%d datastore nodes and %d front ends, want %v", len(s.Datastore), len(s.Fronts), want)
			}
			d, err := driver.Open(ctx, s.URL, driver.Options{Conns: 2, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := d.Put(ctx, "t", "k", []byte("before")); err != nil {
				t.Fatal(err)
			}
			nodes := append([]Node{s.Datastore[len(s.Datastore)-1]}, s.Fronts...)
			for _, n := range nodes[:min(2, len(nodes))] {
				if err := n.Kill(); err != nil {
					t.Fatalf("kill %s: %v", n.Name(), err)
				}
				if err := n.Restart(ctx); err != nil {
					t.Fatalf("restart %s: %v", n.Name(), err)
				}
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				v, ok, err := d.Get(ctx, "t", "k")
				if err == nil && ok && string(v) == "before" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after restarts: %q %v %v", v, ok, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err := s.Stop(); err != nil {
				t.Errorf("stop: %v", err)
			}
			for _, a := range addrs {
				if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
					c.Close()
					t.Errorf("%s still listening after Stop", a)
				}
			}
		})
	}
}
