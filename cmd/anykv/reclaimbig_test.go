package main

import (
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"anykv/internal/engine/remote/remotetest"
	"anykv/internal/servertest"
)

// TestReclaimOfLongMembersOverEtcd: the members of a deleted set whose members are long (64 KiB each) add up to
// more than etcd takes in one transaction (2 MiB by gRPC's limit); the reclaimer must delete them in smaller
// parts instead of retrying the same refused batch forever (a leak of every dead member after them).
func TestReclaimOfLongMembersOverEtcd(t *testing.T) {
	u := remotetest.Start(t, "etcd")
	s := servertest.Start(t, servertest.Options{Engine: u})
	c := client(t, s.RESP)
	for i := 0; i < 60; i++ {
		m := strings.Repeat(string(rune('A'+i%26)), 64<<10) + string(rune('a'+i/26))
		if err := c.SAdd(ctx, "big", m).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.SMembers(ctx, "big").Result(); err != nil || len(n) != 60 {
		t.Fatalf("SMEMBERS: %d members, %v", len(n), err)
	}
	if err := c.PExpire(ctx, "big", 50*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	ec, err := clientv3.New(clientv3.Config{Endpoints: []string{strings.TrimPrefix(u, "etcd://")}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := ec.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		long := 0
		for _, kv := range resp.Kvs {
			if len(kv.Key) > 64<<10 {
				long++
			}
		}
		if long == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d members of the expired set left after 10 s:\n%s", long, s.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
