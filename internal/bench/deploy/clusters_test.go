package deploy

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"anykv/internal/bench/driver"
	"anykv/internal/servertest"
)

// TestClusterTargetsRestartAndStop deploys the clustered targets --kill uses, kills and restarts one datastore
// member and one front end, checks that data written before is read back after, and that Stop leaves no
// process listening: not a member that was restarted (a new pid), nor a front end. Over Cassandra it also
// drives the cluster directly as the cassandra3 target does (all three hosts, replication factor 3): with a node
// down every key can still be written and read at QUORUM.
func TestClusterTargetsRestartAndStop(t *testing.T) {
	bin := servertest.Binary(t)
	ctx := context.Background()
	for _, name := range []string{"anykv+etcd3", "redis-cluster", "anykv+cassandra3"} {
		t.Run(name, func(t *testing.T) {
			if strings.Contains(name, "cassandra") {
				servertest.CassandraSlot(t)
			}
			began := time.Now()
			s, err := Start(ctx, name, Options{BaseDir: baseDir(t), AnykvBin: bin})
			if err != nil {
				if _, ok := err.(*NotInstalledError); ok && os.Getenv("CI") != "true" {
					t.Skip(err)
				}
				t.Fatalf("%s: %v", name, err)
			}
			defer s.Stop()
			t.Logf("%s up in %v", name, time.Since(began).Round(time.Second))
			var addrs []string
			for _, n := range s.Datastore {
				m := n.(*memberNode)
				addrs = append(addrs, m.st.Members[m.i].Addr)
			}
			for _, n := range s.Fronts {
				addrs = append(addrs, n.(*procNode).addr)
			}
			if want := map[string][2]int{"anykv+etcd3": {3, 2}, "redis-cluster": {6, 0}, "anykv+cassandra3": {3, 2}}[name]; len(s.Datastore) != want[0] || len(s.Fronts) != want[1] {
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
			var direct driver.Driver // over Cassandra: the cluster as cassandra3 drives it, opened with every node up
			if m, ok := s.Datastore[0].(*memberNode); ok && m.st.Engine == "cassandra" {
				// (gocql waits up to a minute for schema agreement after each CREATE while a node is down)
				if direct, err = driver.Open(ctx, strings.TrimSuffix(m.st.URL, "/anykv"), driver.Options{Conns: 2, Timeout: 10 * time.Second}); err != nil {
					t.Fatal(err)
				}
				defer direct.Close()
			}
			nodes := append([]Node{s.Datastore[len(s.Datastore)-1]}, s.Fronts...)
			for _, n := range nodes[:min(2, len(nodes))] {
				if err := n.Kill(); err != nil {
					t.Fatalf("kill %s: %v", n.Name(), err)
				}
				if _, ok := n.(*memberNode); ok && direct != nil {
					quorumWithANodeDown(t, direct)
					t.Logf("direct QUORUM writes with %s down done at %v", n.Name(), time.Since(began).Round(time.Second))
				}
				if err := n.Restart(ctx); err != nil {
					t.Fatalf("restart %s: %v", n.Name(), err)
				}
				t.Logf("%s killed and restarted at %v", n.Name(), time.Since(began).Round(time.Second))
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

// quorumWithANodeDown writes and reads 30 keys at QUORUM through d, the bench's Cassandra driver on every host
// (as the cassandra3 target drives it), while one node of three is down: each key's replicas are all three
// nodes (replication factor 3), so each must succeed, after at most a few tries while the driver learns that
// the node is gone. With one replica per key, the dead node's keys would fail every try.
func quorumWithANodeDown(t *testing.T, d driver.Driver) {
	t.Helper()
	ctx := context.Background()
	if !strings.Contains(d.Settings(), "replication factor 3") {
		t.Errorf("driver settings %q: want replication factor 3", d.Settings())
	}
	for i := range 30 {
		k := fmt.Sprintf("k%d", i)
		var err error
		for try := 0; try < 5; try++ {
			if err = d.Put(ctx, "t", k, []byte(k)); err == nil {
				var v []byte
				if v, _, err = d.Get(ctx, "t", k); err == nil && string(v) != k {
					t.Fatalf("%s read %q", k, v)
				}
			}
			if err == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("%s with one node down: %v", k, err)
		}
	}
}
