package redisstore

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// shardsHook answers CLUSTER SHARDS itself, counting the calls, so replicaCounts runs without a cluster.
type shardsHook struct {
	shards []redis.ClusterShard
	reads  *atomic.Int32
}

func (h shardsHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h shardsHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h shardsHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if c, ok := cmd.(*redis.ClusterShardsCmd); ok {
			h.reads.Add(1)
			c.SetVal(h.shards)
			return nil
		}
		return next(ctx, cmd)
	}
}

// TestReplicaCountsMissIsNotARoundTripPerCommit: a master whose address is not among CLUSTER SHARDS' (go-redis
// dials a node announced on a loopback address at the host the URL names, and a TLS-only node at the URL's port,
// so the two need not agree) had the counts read again at once by every commit on it: a CLUSTER SHARDS round trip
// on the write path of each commit, forever. The immediate read is for a master new since the last read (after a
// failover); it is done at most once per topoMiss, and commits in between take the most any shard has.
func TestReplicaCountsMissIsNotARoundTripPerCommit(t *testing.T) {
	var reads atomic.Int32
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cc.Close()
	cc.AddHook(shardsHook{reads: &reads, shards: []redis.ClusterShard{{
		Slots: []redis.SlotRange{{Start: 0, End: 16383}},
		Nodes: []redis.Node{
			{IP: "127.0.0.1", Port: 7000, Role: "master", Health: "online"},
			{IP: "127.0.0.1", Port: 7001, Role: "replica", Health: "online"},
			{IP: "127.0.0.1", Port: 7002, Role: "replica", Health: "online"},
		}}}})
	var r replicaCounts
	ctx := context.Background()
	shards, err := cc.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	r.set(shards)
	reads.Store(0)
	if n := r.replicas(ctx, cc, "127.0.0.1:7000"); n != 2 || reads.Load() != 0 {
		t.Fatalf("a known master: %d replicas after %d reads, want 2 after none", n, reads.Load())
	}
	for i := range 50 {
		if n := r.replicas(ctx, cc, "myhost:7000"); n != 2 {
			t.Fatalf("commit %d on a master not in the counts: %d replicas, want 2 (the most any shard has)", i, n)
		}
	}
	if n := reads.Load(); n > 2 {
		t.Errorf("50 commits on a master not in the counts read CLUSTER SHARDS %d times, each on its write path", n)
	}
}

// TestCheckNamesTheRedisVersion: CLUSTER SHARDS, which Open needs (slot coverage, replica counts), is Redis 7.0's;
// Redis 6.x answers it with "unknown subcommand", which Open passed on as is. It now says what is needed.
func TestCheckNamesTheRedisVersion(t *testing.T) {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cc.Close()
	cc.AddHook(refuseShards{})
	err := (&clusterSide{cc: cc, replicas: allReplicas}).check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "Redis 7.0") || !strings.Contains(err.Error(), "Unknown subcommand") {
		t.Fatalf("check against a Redis 6 cluster: %v, want an error naming Redis 7.0 and Redis's answer", err)
	}
}

// refuseShards answers CLUSTER SHARDS as Redis 6.2 does.
type refuseShards struct{}

func (refuseShards) DialHook(next redis.DialHook) redis.DialHook { return next }
func (refuseShards) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (refuseShards) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if _, ok := cmd.(*redis.ClusterShardsCmd); ok {
			return errors.New("ERR Unknown subcommand or wrong number of arguments for 'shards'. Try CLUSTER HELP.")
		}
		return next(ctx, cmd)
	}
}
