package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
// failover): it still happens, at most once per topoMiss; a master still not found takes its slot's shard's
// count, and a slot no online master covered the most any shard has.
func TestReplicaCountsMissIsNotARoundTripPerCommit(t *testing.T) {
	var reads atomic.Int32
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cc.Close()
	cc.AddHook(shardsHook{reads: &reads, shards: []redis.ClusterShard{{
		Slots: []redis.SlotRange{{Start: 0, End: 8191}}, // 8192-16383: no shard
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
	if n := r.replicas(ctx, cc, "127.0.0.1:7000", 100); n != 2 || reads.Load() != 0 {
		t.Fatalf("a known master: %d replicas after %d reads, want 2 after none", n, reads.Load())
	}
	for i := range 50 {
		if n := r.replicas(ctx, cc, "myhost:7000", 10000); n != 2 {
			t.Fatalf("commit %d on a master and slot not in the counts: %d replicas, want 2 (the most any shard has)", i, n)
		}
	}
	if n := reads.Load(); n > 2 {
		t.Errorf("50 commits on a master not in the counts read CLUSTER SHARDS %d times, each on its write path", n)
	} else if n == 0 {
		t.Errorf("a master not in the counts (after a failover) never had them read again")
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

// waitHook answers WAIT itself on a node client, as a master with have replicas does, recording how many
// replicas each node was asked for.
type waitHook struct {
	addr  string
	have  int64
	mu    *sync.Mutex
	asked map[string][]int64
}

func (h waitHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h waitHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h waitHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), "wait") {
			n, _ := cmd.Args()[1].(int)
			h.mu.Lock()
			h.asked[h.addr] = append(h.asked[h.addr], int64(n))
			h.mu.Unlock()
			cmd.(*redis.Cmd).SetVal(min(int64(n), h.have)) // every replica it has acknowledges
			return nil
		}
		return next(ctx, cmd)
	}
}

// TestReplicasAllWaitsForTheCommitsShard: with replicas=all, WAIT asked for the online replicas of the commit's
// master looked up by that master's address in CLUSTER SHARDS; a master announced at an address other than the one
// go-redis dials (a loopback-announced node dialled at the URL's host, a TLS-only node at its URL's port) was not
// found and was given the most any shard has, so with shards of unequal replica counts every commit on a smaller
// one waited for replicas it does not have and failed with ErrUnknownOutcome. A master not found by address now
// takes the count of the commit's hash slot's shard. Two shards, of 2 and 1 replicas, announced at addresses go-redis does not dial: a commit on
// each asks WAIT for its own shard's count.
func TestReplicasAllWaitsForTheCommitsShard(t *testing.T) {
	const dialA, dialB = "192.0.2.1:7000", "192.0.2.2:7003" // where go-redis dials the masters (CLUSTER SLOTS)
	var (
		reads atomic.Int32
		mu    sync.Mutex
		asked = map[string][]int64{}
	)
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
			return []redis.ClusterSlot{
				{Start: 0, End: 8191, Nodes: []redis.ClusterNode{{Addr: dialA}}},
				{Start: 8192, End: 16383, Nodes: []redis.ClusterNode{{Addr: dialB}}},
			}, nil
		},
		NewClient: func(opt *redis.Options) *redis.Client {
			c := redis.NewClient(opt)
			c.AddHook(waitHook{addr: opt.Addr, have: map[string]int64{dialA: 2, dialB: 1}[opt.Addr], mu: &mu, asked: asked})
			return c
		},
	})
	defer cc.Close()
	cc.AddHook(shardsHook{reads: &reads, shards: []redis.ClusterShard{ // as announced: other hosts and ports
		{Slots: []redis.SlotRange{{Start: 0, End: 8191}}, Nodes: []redis.Node{
			{Endpoint: "10.0.0.1", IP: "10.0.0.1", Port: 6379, Role: "master", Health: "online"},
			{Endpoint: "10.0.0.2", IP: "10.0.0.2", Port: 6379, Role: "replica", Health: "online"},
			{Endpoint: "10.0.0.3", IP: "10.0.0.3", Port: 6379, Role: "replica", Health: "online"},
		}},
		{Slots: []redis.SlotRange{{Start: 8192, End: 16383}}, Nodes: []redis.Node{
			{Endpoint: "10.0.0.4", IP: "10.0.0.4", Port: 6379, Role: "master", Health: "online"},
			{Endpoint: "10.0.0.5", IP: "10.0.0.5", Port: 6379, Role: "replica", Health: "online"},
			{Endpoint: "10.0.0.6", IP: "10.0.0.6", Port: 6379, Role: "replica", Health: "failed"},
		}},
	}})
	ctx := context.Background()
	c := &clusterSide{cc: cc, replicas: allReplicas, wait: time.Second}
	if err := c.check(ctx); err != nil {
		t.Fatal(err)
	}
	// A table on each shard, by the key a commit takes its master from (its index key, the script's last key),
	// placed by go-redis itself.
	l := layout{prefix: "p:", tagged: true}
	tables := map[string]string{}
	for i := 0; len(tables) < 2 && i < 1000; i++ {
		m, err := cc.MasterForKey(ctx, l.indexKey(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := tables[m.Options().Addr]; !ok {
			tables[m.Options().Addr] = fmt.Sprint(i)
		}
	}
	for _, tc := range []struct {
		dial string
		want int64
	}{{dialA, 2}, {dialB, 1}} {
		table, ok := tables[tc.dial]
		if !ok {
			t.Fatalf("no table of 1000 on the master dialled at %s", tc.dial)
		}
		conn, want, err := c.conn(ctx, l.indexKey(table))
		if err != nil {
			t.Fatal(err)
		}
		err = c.replicated(ctx, conn, want)
		conn.Close()
		mu.Lock()
		got := asked[tc.dial]
		mu.Unlock()
		if err != nil || len(got) != 1 || got[0] != tc.want {
			t.Errorf("a commit on table %s (master dialled at %s): WAIT asked for %v (%v), want WAIT %d: its shard's online replicas",
				table, tc.dial, got, err, tc.want)
		}
	}
}

// TestKeySlot: keySlot agrees with Redis's CLUSTER KEYSLOT, hash tags included.
func TestKeySlot(t *testing.T) {
	for key, want := range map[string]int{"foo": 12182, "bar": 5061, "{foo}bar": 12182, "x{bar}y": 5061} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, want)
		}
	}
}
