package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"anykv/internal/cluster"
	"anykv/internal/collections"
	"anykv/internal/engine"
	"anykv/internal/engine/remote"
	"anykv/internal/engine/remote/redisstore"
	"anykv/internal/engine/remote/remotetest"
)

// TestRedisCluster runs the conformance suite and the two-front-end race over a 3-master Redis Cluster (no
// replicas, so replicas=0: no WAIT), each engine in a fresh key prefix.
func TestRedisCluster(t *testing.T) {
	st := remotetest.StartCluster(t, "redis-cluster", 3)
	fresh := func(*testing.T) string {
		return fmt.Sprintf("%s&prefix=c%d:", st.URL, prefixes.Add(1))
	}
	remotetest.Suite(t, fresh, redisstore.OpenCluster, engine.CanScan|engine.CanTables|engine.CanSweep)

	t.Run("Refusals", func(t *testing.T) {
		ctx := context.Background()
		if _, err := redisstore.OpenCluster(ctx, strings.Replace(st.URL, "replicas=0", "replicas=1", 1)); err == nil ||
			!strings.Contains(err.Error(), "replicas=0") {
			t.Fatalf("replicas=1 over a cluster without replicas: %v, want a refusal naming replicas=0", err)
		}
		if _, err := redisstore.OpenCluster(ctx, st.URL+"&prefix=a{b}"); err == nil {
			t.Fatal("a prefix with a hash tag was accepted")
		}
	})
}

// TestRedisClusterSlots: the tables of the suite land on more than one master (each table is one slot), which
// is what makes the engine shard.
func TestRedisClusterSlots(t *testing.T) {
	st := remotetest.StartCluster(t, "redis-cluster", 3)
	s := remotetest.Open(t, redisstore.OpenCluster, st.URL+"&prefix=slots:")
	defer s.Close()
	ctx := context.Background()
	for i := range 12 {
		m := engine.Mutation{Op: engine.OpSet, Table: fmt.Sprint(i), Key: []byte("k"), Value: []byte("v")}
		if _, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{m}}); err != nil {
			t.Fatal(err)
		}
	}
	busy := 0
	var sizes []int64
	for _, m := range st.Members { // 3 masters, no replicas
		c := redis.NewClient(&redis.Options{Addr: m.Addr})
		n, err := c.DBSize(ctx).Result()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, n)
		if n > 0 {
			busy++
		}
	}
	if busy < 2 {
		t.Fatalf("12 tables on %d of %d masters (keys per master %v)", busy, len(st.Members), sizes)
	}
	_, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{
		{Op: engine.OpSet, Table: "0", Key: []byte("a"), Value: []byte("1")},
		{Op: engine.OpSet, Table: "1", Key: []byte("a"), Value: []byte("1")}}})
	if !errors.Is(err, engine.ErrNotSupported) || !strings.Contains(err.Error(), "redis-cluster") {
		t.Fatalf("a batch over two tables: %v, want ErrNotSupported naming the engine", err)
	}
	if _, err := s.Get(ctx, "0", []byte("a"), 1); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("the refused batch left 0/a: %v", err)
	}
}

// TestRedisClusterWaitsForAReplica: with the replica of a table's master stopped (SIGSTOP), a write to that table
// is not acknowledged (ErrUnknownOutcome once WAIT times out), since a failover could lose it; once the replica
// runs again, writes are acknowledged.
func TestRedisClusterWaitsForAReplica(t *testing.T) {
	st := remotetest.StartCluster(t, "redis-cluster", 6)
	s := remotetest.Open(t, redisstore.OpenCluster, st.URL+"/?prefix=wait:&wait=300ms")
	defer s.Close()
	ctx := context.Background()
	set := &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte("v")}}}
	if _, err := s.Apply(ctx, set); err != nil {
		t.Fatal(err)
	}
	var replica *os.Process
	for _, m := range st.Members { // the replica of the master holding t's keys
		c := redis.NewClient(&redis.Options{Addr: m.Addr})
		r, err := c.Do(ctx, "role").Slice()
		n, _ := c.DBSize(ctx).Result()
		c.Close()
		if err == nil && r[0] == "slave" && n > 0 && replica == nil {
			if replica, err = os.FindProcess(m.Pid); err != nil {
				t.Fatal(err)
			}
		}
	}
	if replica == nil {
		t.Fatal("no replica holds the table's keys")
	}
	if err := cluster.Freeze(replica.Pid, 10*time.Second); err != nil { // every thread stopped: none acks the write
		t.Fatal(err)
	}
	_, err := s.Apply(ctx, set)
	replica.Signal(syscall.SIGCONT)
	if !errors.Is(err, remote.ErrUnknownOutcome) {
		t.Fatalf("a write no replica acknowledged: %v, want ErrUnknownOutcome", err)
	}
	if _, err := s.Apply(ctx, set); err != nil {
		t.Fatalf("after the replica resumed: %v", err)
	}
}

// TestRedisClusterWaitsForEveryReplica: with two replicas per master (`cluster up --nodes 9`), a write is
// acknowledged only once both have it. One replica of every master is stopped (SIGSTOP: it still counts as
// online in the cluster for cluster-node-timeout, 1.5 s, as a slow or partitioned replica does), so a write
// reaches one of two replicas: it must fail with ErrUnknownOutcome, since Redis could promote the other replica
// on failover and lose it. The engine used to WAIT for one replica and acknowledged it. With ?replicas=1 (the
// old behaviour, now asked for) it is acknowledged; once the replicas run again, writes are acknowledged.
func TestRedisClusterWaitsForEveryReplica(t *testing.T) {
	st := remotetest.StartCluster(t, "redis-cluster", 9)
	ctx := context.Background()
	s := remotetest.Open(t, redisstore.OpenCluster, st.URL+"/?prefix=waitall:&wait=300ms")
	defer s.Close()
	one := remotetest.Open(t, redisstore.OpenCluster, st.URL+"/?prefix=waitall:&wait=300ms&replicas=1")
	defer one.Close()
	set := func(k string) *engine.Batch {
		return &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte(k), Value: []byte("v")}}}
	}
	if _, err := s.Apply(ctx, set("a")); err != nil {
		t.Fatal(err)
	}
	stopped := map[string]*os.Process{} // master address -> one of its replicas
	for _, m := range st.Members {
		c := redis.NewClient(&redis.Options{Addr: m.Addr})
		r, err := c.Do(ctx, "role").Slice()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if r[0] != "slave" {
			continue
		}
		master := fmt.Sprintf("%v:%v", r[1], r[2])
		if stopped[master] != nil {
			continue
		}
		p, err := os.FindProcess(m.Pid)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Signal(syscall.SIGCONT) })
		if err := cluster.Freeze(p.Pid, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		stopped[master] = p
	}
	if len(stopped) != 3 {
		t.Fatalf("stopped a replica of %d masters, want 3", len(stopped))
	}
	_, err := s.Apply(ctx, set("b"))
	_, errOne := one.Apply(ctx, set("c"))
	for _, p := range stopped {
		p.Signal(syscall.SIGCONT)
	}
	if !errors.Is(err, remote.ErrUnknownOutcome) || !strings.Contains(err.Error(), "1 of 2 replicas") {
		t.Fatalf("a write one of the master's two replicas acknowledged: %v, want ErrUnknownOutcome (1 of 2 replicas)", err)
	}
	if errOne != nil {
		t.Fatalf("with ?replicas=1, a write one replica acknowledged: %v", errOne)
	}
	if _, err := s.Apply(ctx, set("d")); err != nil {
		t.Fatalf("after the replicas resumed: %v", err)
	}
}

// TestRedisClusterListsCollectionTables: a table whose first write is a collection's (a list: its meta item and
// its members, which sort in the table's member table) is listed. The commit listed only its first put's table,
// the member table, so the table was missing from Tables and the sweeper never visited it.
func TestRedisClusterListsCollectionTables(t *testing.T) {
	st := remotetest.StartCluster(t, "redis-cluster", 3)
	s := remotetest.Open(t, redisstore.OpenCluster, st.URL+"&prefix=colltables:")
	defer s.Close()
	ctx := context.Background()
	for _, table := range []string{"db1", "db2"} {
		m := collections.Push(table, []byte("l"), true, false, []byte("a"), []byte("b"))
		if _, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{m}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"db1", "db2"} {
		if !slices.Contains(got, want) {
			t.Fatalf("Tables = %q: %s, written only by a list push, is missing", got, want)
		}
	}
}

// readsThenWrites is a function for TestRedisClusterRefusesChecksOutsideTheSlot: it reads table "1" (a range when
// its argument is "range", else one key) and writes its own key in table "0".
func readsThenWrites(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	n := 0
	if string(args[0]) == "range" {
		if err := tx.Scan("1", engine.Range{}, func([]byte, engine.Item) bool { n++; return true }); err != nil {
			return engine.Result{}, err
		}
	} else if _, ok, err := tx.Get("1", []byte("x")); err != nil {
		return engine.Result{}, err
	} else if ok {
		n++
	}
	tx.Put(tx.Table(), tx.Key(), engine.Item{Value: fmt.Appendf(nil, "%d", n), Version: tx.NextVersion()})
	return engine.Result{}, nil
}

func init() { engine.RegisterFunc("test.readsThenWrites", readsThenWrites) }

// TestRedisClusterRefusesChecksOutsideTheSlot: a batch that writes table "0" after reading table "1" (a script
// that SELECTed the other database to read it) cannot have its read checked by a commit script, which runs in
// table 0's slot: it is refused with CROSSSLOT, nothing written, whether it read one key or a range (a range
// read was once left unchecked, so the batch committed on a read another front end may have changed).
func TestRedisClusterRefusesChecksOutsideTheSlot(t *testing.T) {
	st := remotetest.StartCluster(t, "redis-cluster", 3)
	s := remotetest.Open(t, redisstore.OpenCluster, st.URL+"&prefix=outside:")
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "1", Key: []byte("x"), Value: []byte("v")}}}); err != nil {
		t.Fatal(err)
	}
	for _, read := range []string{"range", "key"} {
		m := engine.Mutation{Op: engine.OpCall, Table: "0", Key: []byte("k-" + read),
			Call: engine.CallArgs{Name: "test.readsThenWrites", Args: [][]byte{[]byte(read)}}}
		_, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{m}})
		if !errors.Is(err, engine.ErrCrossSlot) {
			t.Errorf("a %s read of table 1 before a write of table 0: %v, want ErrCrossSlot", read, err)
		}
		if it, err := s.Get(ctx, "0", m.Key, 1); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("after the refused %s read: table 0 holds %q (%v)", read, it.Value, err)
		}
	}
}
