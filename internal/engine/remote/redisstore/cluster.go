package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
)

// ClusterStore is the Redis Cluster engine (redis-cluster://): the Redis engine's items, scripts and scans with
// every key of a table (and of its collections' members) in one hash slot ({prefix+len:table}), since Redis Cluster runs a script within one slot
// only. A batch is atomic within its table; a batch spanning tables, or FLUSHALL, is refused. The cost: one
// table is one shard, so a table's load and size are bounded by one master.
//
// Reads and scans go through go-redis's ClusterClient, which follows MOVED/ASK and failovers. A commit runs on
// one connection to its slot's master and, unless replicas=0, is followed on that connection by WAIT: Redis
// replicates asynchronously, so a failover may promote a replica that lacks a write the master acknowledged. By
// default (replicas=all) WAIT asks for every online replica of that master (CLUSTER SHARDS, at least one), so
// whichever replica a failover promotes has the write; replicas=N asks for N. A commit the master refused for being in the wrong place
// (MOVED, CLUSTERDOWN, ...) ran nowhere and is retried from the read; one whose answer was lost, or that no
// replica acknowledged in time, is reported as ErrUnknownOutcome. Versions come from a counter in its own slot,
// reserved with INCRBY and WAIT alike, so a failover never hands out a version twice.
type ClusterStore struct {
	*Store
}

var (
	_ engine.Engine      = (*ClusterStore)(nil)
	_ engine.Scanner     = (*ClusterStore)(nil)
	_ engine.TableScoped = (*ClusterStore)(nil)
	_ engine.ReadLeveler = (*ClusterStore)(nil)
)

// clusterSide is what a backend over Redis Cluster does differently.
type clusterSide struct {
	cc       *redis.ClusterClient
	replicas int           // WAIT for this many replicas after each write; 0: do not wait; allReplicas: every online one
	wait     time.Duration // WAIT's timeout
	topo     replicaCounts // with allReplicas: each slot's master's online replicas
	counter  string        // the version counter's key
	listed   sync.Map      // tables this process has added to the tables set
}

// allReplicas is clusterSide.replicas for replicas=all: WAIT for every online replica of the commit's master.
const allReplicas = -1

// topoEvery is how old the replica counts of replicas=all may get before they are read again (in the
// background: a commit uses the counts it has).
const topoEvery = time.Second

// topoMiss is how often a commit on a slot the replica counts do not cover (no online master served it at the last
// read) may read them again on its write path: a master elected since (after a failover) is found at once, but a slot
// that stays uncovered does not cost a CLUSTER SHARDS per commit.
const topoMiss = 100 * time.Millisecond

// OpenCluster connects to the Redis Cluster at rawURL (redis-cluster://[user:pw@]h1:p1,h2:p2/ with optional
// prefix=P, replicas=all|N (default all) and wait=D (default 1s) query parameters) and returns the engine once
// the cluster answers. It refuses a cluster whose shards have fewer than N replicas (with all: none), since their
// WAIT could never succeed.
func OpenCluster(ctx context.Context, rawURL string) (*ClusterStore, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", remote.ErrBadURL, err)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%w: want redis-cluster://host:port[,host:port...]", remote.ErrBadURL)
	}
	prefix := takePrefix(u)
	if strings.ContainsAny(prefix, "{}") {
		return nil, fmt.Errorf("%w: a redis-cluster prefix may not hold { or }: they make hash tags", remote.ErrBadURL)
	}
	side := &clusterSide{replicas: allReplicas, wait: time.Second}
	for k, v := range u.Query() {
		switch k {
		case "replicas":
			if v[0] == "all" {
				side.replicas = allReplicas
				break
			}
			side.replicas, err = strconv.Atoi(v[0])
			if err == nil && side.replicas < 0 {
				err = errors.New("negative (all, or a count)")
			}
		case "wait":
			side.wait, err = time.ParseDuration(v[0])
		default:
			err = errors.New("unknown parameter (prefix, replicas, wait)")
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s=%s: %v", remote.ErrBadURL, k, v[0], err)
		}
	}
	addrs := strings.Split(u.Host, ",")
	if err := reachable(ctx, "tcp", addrs[0]); err != nil {
		return nil, err
	}
	// Maintenance notifications are a Redis Enterprise feature; go-redis's fallback from them when the server
	// refuses the handshake races (go test -race) with the connections commits take.
	// ContextTimeoutEnabled: the engine's Timeout bounds each request (as in Open).
	opt := &redis.ClusterOptions{Addrs: addrs, MaxRedirects: 8, ContextTimeoutEnabled: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}}
	if u.User != nil {
		opt.Username = u.User.Username()
		opt.Password, _ = u.User.Password()
	}
	side.cc = redis.NewClusterClient(opt)
	ro := *opt
	ro.ReadOnly, ro.RouteByLatency = true, true
	side.counter = "{" + prefix + "}version"
	b := &backend{c: side.cc, ro: redis.NewClusterClient(&ro), layout: layout{prefix: prefix, tagged: true}, cl: side}
	if err := side.check(ctx); err != nil {
		b.Close()
		return nil, err
	}
	var mu sync.Mutex
	var warnings []string
	err = side.cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		w, err := checkEviction(ctx, m, m.Options().Addr)
		mu.Lock()
		if w != "" {
			warnings = append(warnings, w)
		}
		mu.Unlock()
		return err
	})
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("redis-cluster: %w", err)
	}
	s := &ClusterStore{Store: newStore(b)}
	s.warning = strings.Join(warnings, "; ")
	return s, nil
}

// check makes sure every slot is served and has the replicas WAIT will ask for.
func (c *clusterSide) check(ctx context.Context) error {
	shards, err := c.cc.ClusterShards(ctx).Result()
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown subcommand") {
		return fmt.Errorf("redis-cluster: needs Redis 7.0 or later (CLUSTER SHARDS): %w", err)
	}
	if err != nil {
		return fmt.Errorf("redis-cluster: %w", err)
	}
	served, replicas := SlotCoverage(shards)
	if want := max(c.replicas, 1); c.replicas != 0 && replicas < want {
		return fmt.Errorf("redis-cluster: some slots have %d replicas, and each commit waits for %d (WAIT): "+
			"add replicas, or accept losing acknowledged writes on failover with ?replicas=0", replicas, want)
	}
	c.topo.set(shards)
	if served != 16384 {
		return fmt.Errorf("redis-cluster: %d of 16384 hash slots are served", served)
	}
	return nil
}

// Apply implements engine.Engine, refusing a batch that spans tables (engine.TableScoped).
func (s *ClusterStore) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	if err := oneTable(b); err != nil {
		return nil, err
	}
	return s.Store.Apply(ctx, b)
}

// TableScoped implements engine.TableScoped.
func (s *ClusterStore) TableScoped() {}

// ReadLevels implements engine.ReadLeveler: linearizable reads from the masters, serializable ones from the
// replicas (go-redis ReadOnly with RouteByLatency: the nearest node of the slot, master or replica).
func (s *ClusterStore) ReadLevels() []engine.Consistency {
	return []engine.Consistency{engine.Linearizable, engine.Serializable}
}

// oneTable refuses a batch whose mutations name two tables, or that flushes every table.
func oneTable(b *engine.Batch) error {
	first, second, all := engine.Span(b.Muts)
	switch {
	case all:
		return fmt.Errorf("redis-cluster engine: %w: flushing every table at once (each table is its own hash slot; flush them one by one)", engine.ErrNotSupported)
	case second != "":
		return fmt.Errorf("redis-cluster engine: %w: a batch over tables %q and %q (each table is one hash slot, and a batch is atomic within one table only)",
			engine.ErrNotSupported, first, second)
	}
	return nil
}

// read is Backend.Read in a cluster: the items in one script on their table's slot and, alongside, n versions
// from the counter's slot.
func (c *clusterSide) read(ctx context.Context, keys []string, n int) ([]remote.Stored, []uint64, bool, any, error) {
	var (
		wg       sync.WaitGroup
		versions []uint64
		verr     error
		items    []remote.Stored
		err      error
	)
	if n > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			versions, verr = c.reserve(ctx, n)
		}()
	}
	if len(keys) > 0 {
		var v []any
		if v, err = readScript.Run(ctx, c.cc, keys, 0).Slice(); err == nil {
			items, err = decodeAll(keys, v)
		}
	}
	wg.Wait()
	if err = errors.Join(err, verr); err != nil {
		return nil, nil, false, nil, err
	}
	return items, versions, true, nil, nil
}

// reserveScript takes ARGV[1] versions from the counter KEYS[1] (versionLua).
var reserveScript = redis.NewScript(versionLua + `return reserve(KEYS[1], tonumber(ARGV[1]))`)

// reserve takes n versions from the counter on its master and waits until a replica has the increment.
func (c *clusterSide) reserve(ctx context.Context, n int) ([]uint64, error) {
	key := c.counter
	conn, want, err := c.conn(ctx, key)
	if err != nil {
		return nil, c.again(ctx, err)
	}
	defer conn.Close()
	last, err := reserveScript.Run(ctx, conn, []string{key}, n).Int64()
	if err != nil {
		return nil, c.again(ctx, err) // a lost increment only skips versions: safe to retry
	}
	if err := c.replicated(ctx, conn, want); err != nil {
		return nil, fmt.Errorf("redis-cluster: version counter: %w", err)
	}
	return reserved(last, n), nil
}

// commit is Backend.Commit in a cluster: the commit script on one connection to the master of the batch's slot
// (keys' last is the table's index), then WAIT on that connection.
func (c *clusterSide) commit(ctx context.Context, b *backend, w *remote.Writes, keys []string, args []any) error {
	for i := range w.Put { // every table put to: a collection's batch puts to its table and its member table
		if err := c.list(ctx, b, w.Put[i].Table); err != nil {
			return err
		}
	}
	conn, want, err := c.conn(ctx, keys[len(keys)-1])
	if err != nil {
		return c.again(ctx, err)
	}
	defer conn.Close()
	ok, err := commitScript.Run(ctx, conn, keys, args...).Int()
	if err != nil && refused(err) {
		return c.again(ctx, err)
	}
	if err := commitOutcome(ok, err); err != nil {
		return err
	}
	return c.replicated(ctx, conn, want)
}

// conn is one connection to the master of key's slot (no retries: a commit must not be sent twice) and how many
// replicas WAIT asks for after a write on it, decided before the write.
func (c *clusterSide) conn(ctx context.Context, key string) (*redis.Conn, int, error) {
	m, err := c.cc.MasterForKey(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	want := c.replicas
	if want == allReplicas {
		// At least one: a shard without an online replica is one failure from losing what it holds, so its
		// writes are not acknowledged (WAIT 1 times out), as with replicas=1.
		want = max(c.topo.replicas(ctx, c.cc, m.Options().Addr, keySlot(key)), 1)
	}
	return m.Conn(), want, nil
}

// keySlot is Redis Cluster's hash slot of key: CRC16 (XMODEM) of its hash tag (engine.HashTag), mod 16384, as
// go-redis computes it to pick the master MasterForKey returns.
func keySlot(key string) int {
	var crc uint16
	for _, b := range engine.HashTag([]byte(key)) {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc % 16384)
}

// refused reports whether err says a command was not executed: the node no longer serves the slot or the
// cluster is down (the state is reloaded and the batch retried), or the node could not be dialled.
func refused(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	if !isServerError(err) {
		return false
	}
	for _, p := range []string{"MOVED ", "ASK ", "TRYAGAIN", "CLUSTERDOWN", "LOADING", "READONLY", "MASTERDOWN"} {
		if strings.HasPrefix(err.Error(), p) {
			return true
		}
	}
	return false
}

// again turns an error after which nothing was applied into a conflict, which remote.Engine retries from the
// read (with backoff, through a failover), after asking the client to reload the slot map.
func (c *clusterSide) again(ctx context.Context, err error) error {
	if ctx.Err() != nil || !refused(err) && !isNetError(err) {
		return err
	}
	c.cc.ReloadState(ctx)
	return fmt.Errorf("redis-cluster: %w: %v", remote.ErrConflict, err)
}

func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "EOF")
}

// replicated waits until want replicas have every write made on conn (WAIT), or its timeout passes.
func (c *clusterSide) replicated(ctx context.Context, conn *redis.Conn, want int) error {
	if want == 0 {
		return nil
	}
	n, err := conn.Do(ctx, "wait", want, c.wait.Milliseconds()).Int()
	if err == nil && n >= want {
		return nil
	}
	if err == nil {
		err = fmt.Errorf("%d of %d replicas acknowledged within %s", n, want, c.wait)
	}
	return fmt.Errorf("redis-cluster: %w: applied on the master, not known to be on the replicas asked for (a failover may lose it): %v",
		remote.ErrUnknownOutcome, err)
}

// replicaCounts is how many online replicas each master has, from CLUSTER SHARDS, read again in the background
// once older than topoEvery: by the master's address, and by hash slot for a master whose address is not among
// them. The addresses CLUSTER SHARDS gives need not be the ones go-redis dials (a node announced on a loopback
// address is dialled at the URL's host, a TLS-only node at the URL's port); such a master was given the most any
// shard has, so on a shard with fewer replicas WAIT never succeeded.
type replicaCounts struct {
	mu         sync.Mutex
	byAddr     map[string]int // a master's address (as CLUSTER SHARDS gives it) -> its online replicas
	bySlot     []int32        // 16384 entries (nil before the first read): the slot's shard's online replicas, -1: no online master serves it
	most       int            // the most any shard has: for a master in neither
	at         time.Time
	refreshing bool
	missed     time.Time // the last read for a master not in byAddr
}

// set records the counts of shards.
func (r *replicaCounts) set(shards []redis.ClusterShard) {
	m, slots, most := map[string]int{}, make([]int32, 16384), 0
	for i := range slots {
		slots[i] = -1
	}
	for _, sh := range shards {
		var masters []string
		replicas := 0
		for _, n := range sh.Nodes {
			switch {
			case n.Health != "online": // failed: cannot be elected until it is back; loading: syncing
			case n.Role == "master":
				port := strconv.FormatInt(n.Port, 10)
				for _, h := range []string{n.Endpoint, n.IP, n.Hostname} {
					if h != "" {
						masters = append(masters, net.JoinHostPort(h, port))
					}
				}
			case n.Role == "replica":
				replicas++
			}
		}
		for _, a := range masters {
			m[a] = replicas
		}
		most = max(most, replicas)
		if len(masters) == 0 { // failing over: read again when a commit gets there
			continue
		}
		for _, sr := range sh.Slots {
			for i := max(sr.Start, 0); i <= min(sr.End, 16383); i++ {
				slots[i] = int32(replicas)
			}
		}
	}
	r.mu.Lock()
	r.byAddr, r.bySlot, r.most, r.at = m, slots, most, time.Now()
	r.mu.Unlock()
}

// count is slot's entry, and whether a shard with an online master covers it; r.mu is held.
func (r *replicaCounts) count(slot int) (int, bool) {
	if slot < 0 || slot >= len(r.bySlot) || r.bySlot[slot] < 0 {
		return 0, false
	}
	return int(r.bySlot[slot]), true
}

// replicas returns the online replicas of the master at addr, which serves slot. Counts older than topoEvery are
// read again in the background; a master not in them (new since, after a failover, or announced at another
// address than go-redis dials) has them read again at once (at most once per topoMiss), and if it is still
// missing it is taken to have its slot's shard's replicas, or, for a slot no online master covered, as many as
// the shard with the most.
func (r *replicaCounts) replicas(ctx context.Context, cc *redis.ClusterClient, addr string, slot int) int {
	r.mu.Lock()
	n, ok := r.byAddr[addr]
	stale := time.Since(r.at) > topoEvery
	start := ok && stale && !r.refreshing
	if start {
		r.refreshing = true
	}
	lookup := !ok && time.Since(r.missed) > topoMiss
	if lookup {
		r.missed = time.Now()
	}
	r.mu.Unlock()
	refresh := func(ctx context.Context) {
		if shards, err := cc.ClusterShards(ctx).Result(); err == nil {
			r.set(shards)
		}
	}
	if start {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			refresh(ctx)
			cancel()
			r.mu.Lock()
			r.refreshing = false
			r.mu.Unlock()
		}()
	}
	if ok {
		return n
	}
	if lookup {
		refresh(ctx)
		r.mu.Lock()
		r.missed = time.Now()
		r.mu.Unlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok = r.byAddr[addr]; ok {
		return n
	}
	if n, ok = r.count(slot); ok {
		return n
	}
	return r.most
}

// list adds table t to the tables set before its first write from this process. The set is in its own slot,
// so it cannot change with the batch: a table stays listed once it was, and tables filters out empty ones.
func (c *clusterSide) list(ctx context.Context, b *backend, t string) error {
	if _, ok := c.listed.Load(t); ok {
		return nil
	}
	if err := c.cc.SAdd(ctx, b.global("tables"), t).Err(); err != nil {
		return err
	}
	c.listed.Store(t, true)
	return nil
}

// tables lists the tables of the tables set whose index holds a key, each round trip bounded by e's Timeout.
func (c *clusterSide) tables(ctx context.Context, e *remote.Engine, b *backend) ([]string, error) {
	names, err := remote.Call(ctx, e, func(ctx context.Context) ([]string, error) {
		return c.cc.SMembers(ctx, b.global("tables")).Result()
	})
	if err != nil {
		return nil, err
	}
	cmds := make([]*redis.IntCmd, len(names))
	if err := e.RoundTrip(ctx, func(ctx context.Context) error {
		_, err := c.cc.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, t := range names {
				cmds[i] = p.Exists(ctx, b.indexKey(t))
			}
			return nil
		})
		return err
	}); err != nil {
		return nil, err
	}
	var out []string
	for i, t := range names {
		if cmds[i].Val() > 0 {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out, nil
}

// SlotCoverage reads CLUSTER SHARDS: how many of the 16384 hash slots an online master serves, and the fewest
// online replicas any of those shards has.
func SlotCoverage(shards []redis.ClusterShard) (served, minReplicas int) {
	minReplicas = -1
	for _, sh := range shards {
		master, replicas := false, 0
		for _, n := range sh.Nodes {
			switch {
			case n.Health != "online":
			case n.Role == "master":
				master = true
			case n.Role == "replica":
				replicas++
			}
		}
		if !master || len(sh.Slots) == 0 {
			continue
		}
		for _, r := range sh.Slots {
			served += int(r.End - r.Start + 1)
		}
		if minReplicas < 0 || replicas < minReplicas {
			minReplicas = replicas
		}
	}
	return served, max(minReplicas, 0)
}
