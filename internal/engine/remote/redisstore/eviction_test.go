package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"anykv/internal/engine"
	"anykv/internal/engine/remote/redisstore"
	"anykv/internal/engine/remote/remotetest"
)

// TestEvictingRedisRefused: a Redis that evicts any key when its memory is full would lose acknowledged items
// and the version counter (versions would repeat), so Open refuses it; evicting only keys with a TTL, or an
// evicting policy without a memory limit, is served with a warning; noeviction is served quietly.
func TestEvictingRedisRefused(t *testing.T) {
	url := "redis://" + strings.TrimPrefix(remotetest.Start(t, "redis-nopersist"), "resp://") + "/0"
	ctx := context.Background()
	opt, _ := redis.ParseURL(url)
	admin := redis.NewClient(opt)
	defer admin.Close()
	for _, tc := range []struct {
		maxmemory, policy string
		refused, warned   bool
	}{
		{"3mb", "allkeys-lru", true, false},
		{"3mb", "allkeys-random", true, false},
		{"0", "allkeys-lfu", false, true},
		{"3mb", "volatile-lru", false, true},
		{"3mb", "noeviction", false, false},
	} {
		if err := admin.ConfigSet(ctx, "maxmemory", tc.maxmemory).Err(); err != nil {
			t.Fatal(err)
		}
		if err := admin.ConfigSet(ctx, "maxmemory-policy", tc.policy).Err(); err != nil {
			t.Fatal(err)
		}
		s, err := redisstore.Open(ctx, url)
		switch {
		case tc.refused:
			if err == nil || !strings.Contains(err.Error(), "noeviction") {
				s.Close()
				t.Fatalf("maxmemory %s, %s: Open = %v, want a refusal naming noeviction", tc.maxmemory, tc.policy, err)
			}
			continue
		case err != nil:
			t.Fatalf("maxmemory %s, %s: %v", tc.maxmemory, tc.policy, err)
		}
		if w := s.Warning(); (w != "") != tc.warned || tc.warned && !strings.Contains(w, tc.policy) {
			t.Errorf("maxmemory %s, %s: warning %q, want one: %v", tc.maxmemory, tc.policy, w, tc.warned)
		}
		s.Close()
	}
}

// TestForeignValueWritesNothing: a batch whose keys include one holding a foreign value (a string where anykv keeps
// a hash) fails before its first write; before, the commit script had written the keys before it, and reported
// failure.
func TestForeignValueWritesNothing(t *testing.T) {
	admin, s := underPrefix(t, "fv:")
	ctx := context.Background()
	if err := admin.Set(ctx, "fv:k:7:defaultb", "foreign", 0).Err(); err != nil {
		t.Fatal(err)
	}
	set := func(k string) engine.Mutation {
		return engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte(k), Value: []byte("1"), AnyKind: true,
			Set: engine.SetArgs{Blind: true}} // as MSET: no read before the write
	}
	if _, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{set("a"), set("b")}}); err == nil {
		t.Fatal("a batch writing over a foreign value succeeded")
	}
	if _, err := s.Get(ctx, "default", []byte("a"), 1); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("a, written before the foreign key in the failed batch: %v, want not found", err)
	}
	if v, _ := admin.Get(ctx, "fv:k:7:defaulta").Result(); v != "" {
		t.Fatalf("the failed batch left %q in Redis", v)
	}
}

// TestForeignIndexFlushAllWritesNothing: FLUSHALL checks every table's index before it deletes anything; with a
// foreign value where one table's index belongs it failed after flushing the tables before it.
func TestForeignIndexFlushAllWritesNothing(t *testing.T) {
	admin, s := underPrefix(t, "fa:")
	ctx := context.Background()
	for _, table := range []string{"db1", "db2", "db3"} {
		m := engine.Mutation{Op: engine.OpSet, Table: table, Key: []byte("k"), Value: []byte("v")}
		if _, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{m}}); err != nil {
			t.Fatal(err)
		}
	}
	admin.Del(ctx, "fa:i:3:db2")
	if err := admin.Set(ctx, "fa:i:3:db2", "foreign", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpFlush}}}); err == nil {
		t.Fatal("FLUSHALL over a foreign index succeeded")
	}
	for _, table := range []string{"db1", "db3"} {
		if _, err := s.Get(ctx, table, []byte("k"), 1); err != nil {
			t.Fatalf("%s/k after the refused FLUSHALL: %v, want it kept", table, err)
		}
	}
}

// underPrefix starts a Redis and returns a client of its own on it and the engine over key prefix p; both are
// closed when the test ends.
func underPrefix(t *testing.T, p string) (*redis.Client, *redisstore.Store) {
	addr := strings.TrimPrefix(remotetest.Start(t, "redis-nopersist"), "resp://")
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { admin.Close() })
	s, err := redisstore.Open(context.Background(), "redis://"+addr+"/0?prefix="+p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return admin, s
}
