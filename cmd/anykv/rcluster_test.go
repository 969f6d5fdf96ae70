package main

import (
	"fmt"
	"os"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/servertest"
)

// TestRedisClusterFailoverLosesNoAcknowledgedWrite: two anykv front ends serve a Redis Cluster of 3 masters and
// 3 replicas started by `anykv cluster up`; clients write into four databases (tables, so slots on different
// masters) while the master holding most keys is killed with SIGKILL. Its replica takes over; the killed node,
// restarted, rejoins as a replica. Every acknowledged write is then readable through both front ends: anykv
// acknowledges a write once WAIT says a replica has it, since Redis replicates asynchronously.
func TestRedisClusterFailoverLosesNoAcknowledgedWrite(t *testing.T) {
	needBin(t, "redis-server")
	st, _, _ := clusterUp(t, "redis-cluster", 6)
	fronts := []*servertest.Server{servertest.Start(t, servertest.Options{Engine: st.URL}),
		servertest.Start(t, servertest.Options{Engine: st.URL})}

	load := startLoad(t, fronts, 4)
	load.waitFor(t, 200)
	victim, most := -1, int64(-1)
	for i, m := range st.Members {
		if role(t, m.Addr) != "master" {
			continue
		}
		c := goredis.NewClient(&goredis.Options{Addr: m.Addr})
		n, err := c.DBSize(ctx).Result()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if n > most {
			victim, most = i, n
		}
	}
	var replica int
	for i, m := range st.Members {
		if role(t, m.Addr) == "slave" && masterOf(t, m.Addr) == st.Members[victim].Addr {
			replica = i
		}
	}
	if err := st.Kill(victim); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for role(t, st.Members[replica].Addr) != "master" { // failover: node timeout, then an election
		if time.Now().After(deadline) {
			t.Fatalf("%s did not take over from %s", st.Members[replica].Name, st.Members[victim].Name)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The promoted master has no replica to WAIT for until the killed node is back: writes to its slots fail.
	if err := st.Restart(victim); err != nil {
		t.Fatal(err)
	}
	for role(t, st.Members[victim].Addr) != "slave" { // it learns it was failed over and follows the new master
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(st.Members[victim].Log)
			t.Fatalf("%s restarted but is not a replica: %s", st.Members[victim].Name, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	load.waitFor(t, load.n.Load()+200)
	load.finish(t, fronts)
}

// masterOf is the address of the master a replica follows.
func masterOf(t *testing.T, addr string) string {
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	r, err := c.Do(ctx, "role").Slice()
	if err != nil || len(r) < 3 {
		t.Fatalf("ROLE of %s: %v %v", addr, r, err)
	}
	return fmt.Sprintf("%v:%v", r[1], r[2])
}

// role is a Redis node's ROLE ("master", "slave"), or "" if it does not answer.
func role(t *testing.T, addr string) string {
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	r, err := c.Do(ctx, "role").Slice()
	if err != nil || len(r) == 0 {
		return ""
	}
	s, _ := r[0].(string)
	return s
}
