package deploy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"anykv/internal/cluster"
)

// Clustered targets for the failover evaluation (--kill): a 3-member etcd cluster, a Redis Cluster of 3 masters
// and 3 replicas (or 6) and a 3-node Cassandra cluster started by internal/cluster (as `anykv cluster up`),
// driven directly, and anykv front ends over each.
func init() {
	for _, c := range []struct {
		name, engine, bin, pkg, summary string
		nodes, fronts                   int
	}{
		{"etcd3", "etcd", "etcd", "etcd-server", "3-member etcd cluster (anykv cluster up --engine etcd --nodes 3), driven over all endpoints", 3, 0},
		{"redis-cluster", "redis-cluster", "redis-server", "redis-server", "Redis Cluster, 3 masters + 3 replicas (anykv cluster up --engine redis-cluster --nodes 6), go-redis ClusterClient", 6, 0},
		{"anykv+etcd3", "etcd", "etcd", "etcd-server", "two anykv front ends over a 3-member etcd cluster, over RESP (round robin over the front ends)", 3, 2},
		{"anykv+redis-cluster", "redis-cluster", "redis-server", "redis-server", "two anykv front ends over a Redis Cluster of 3 masters + 3 replicas, over RESP (round robin)", 6, 2},
		{"redis-cluster9", "redis-cluster", "redis-server", "redis-server", "Redis Cluster, 3 masters + 6 replicas (anykv cluster up --engine redis-cluster --nodes 9), go-redis ClusterClient", 9, 0},
		{"anykv+redis-cluster9", "redis-cluster", "redis-server", "redis-server", "two anykv front ends over a Redis Cluster of 3 masters + 6 replicas (writes go on through one failure: WAIT 1 still finds a replica), over RESP (round robin)", 9, 2},
		{"cassandra3", "cassandra", "java", "openjdk-17-jre-headless maven", "Apache Cassandra " + CassandraVersion + " 3-node cluster (anykv cluster up --engine cassandra --nodes 3), replication factor 3, gocql over all nodes, QUORUM reads and writes", 3, 0},
		{"anykv+cassandra3", "cassandra", "java", "openjdk-17-jre-headless maven", "two anykv front ends over a 3-node Cassandra cluster (rf=3, QUORUM reads, SERIAL lightweight-transaction writes, 16 slots), over RESP (round robin)", 3, 2},
	} {
		register(spec{name: c.name, pkg: c.pkg, summary: c.summary,
			start: func(ctx context.Context, o Options, dir string) (*Server, error) {
				if _, ok := findBinary(c.bin); !ok {
					return nil, notInstalled(c.name, c.pkg)
				}
				return startCluster(ctx, o, dir, c.engine, c.nodes, c.fronts)
			}})
	}
}

// startCluster starts a cluster of engine with n members in dir/cluster and, with fronts > 0, that many anykv
// front ends over it (caches off), whose RESP addresses make the target URL.
func startCluster(ctx context.Context, o Options, dir, engine string, n, fronts int) (*Server, error) {
	cdir := filepath.Join(dir, "cluster")
	st, err := cluster.Up(engine, n, cdir, cluster.Options{})
	if errors.Is(err, cluster.ErrNotInstalled) {
		return nil, &NotInstalledError{Name: engine, Hint: err.Error()}
	}
	if err != nil {
		return nil, err
	}
	stopCluster := func() error {
		if err := st.Save(cdir); err != nil { // Down stops the pids on file; restarts changed them
			return err
		}
		_, err := cluster.Down(cdir) // a member whose pid was reused is gone already
		return err
	}
	s := &Server{URL: st.URL, Pid: st.Members[0].Pid, stop: stopCluster}
	for i := range st.Members {
		s.Datastore = append(s.Datastore, &memberNode{st: st, i: i})
	}
	engineURL := st.URL
	switch engine {
	case "etcd":
		s.Version = output(st.Bin, "--version")
		s.Settings = []string{fmt.Sprintf("%d etcd members on 127.0.0.1 (Raft; a write is acknowledged once a majority has it in its fsynced WAL)", n)}
	case "cassandra":
		// Direct: the bench's keyspace (anykv_bench, replication factor 3), not the front ends'. Through anykv:
		// QUORUM reads and SERIAL writes committed at QUORUM, the levels under which an acknowledged write is safe.
		s.URL = strings.TrimSuffix(st.URL, "/anykv")
		engineURL = st.URL + "?rf=3&read=quorum&slots=16"
		s.Version = "Apache Cassandra " + CassandraVersion
		s.Settings = []string{fmt.Sprintf("%d Cassandra nodes on 127.0.0.1-127.0.0.%d, replication factor 3, commitlog_sync batch, paxos_variant v2, write and CAS timeouts 2 s, heap 256-512 MiB; a restarted node counts as down until it answers CQL and its peers gossip its new generation", n, n)}
		s.Settings = append(s.Settings, extraJVMOptions()...)
	default:
		s.Version = output(st.Bin, "--version")
		s.Settings = []string{fmt.Sprintf("%d redis-server nodes in cluster mode, %d masters with %d replica(s) each, cluster-node-timeout %v, appendonly yes (appendfsync everysec), cluster-require-full-coverage no; replication is asynchronous",
			n, 3, n/3-1, cluster.NodeTimeout)}
	}
	if len(o.CPUs) > 0 {
		s.Settings = append(s.Settings, "cluster members not pinned (started detached by internal/cluster)")
	}
	if fronts == 0 {
		return s, nil
	}
	var addrs []string
	for i := range fronts {
		fdir := filepath.Join(dir, fmt.Sprintf("front%d", i+1))
		if err := os.Mkdir(fdir, 0o755); err != nil {
			s.stop()
			return nil, err
		}
		f, err := startAnykv(ctx, o, fdir, "always", engineURL, false)
		if err != nil {
			s.stop()
			return nil, err
		}
		stopRest := s.stop
		s.stop = func() error {
			err := f.stop()
			if rerr := stopRest(); err == nil {
				err = rerr
			}
			return err
		}
		for _, fn := range f.Fronts {
			fn.(*procNode).name = fmt.Sprintf("anykv%d", i+1)
		}
		s.Fronts = append(s.Fronts, f.Fronts...)
		addrs = append(addrs, strings.TrimPrefix(f.URL, "resp://"))
		if i == 0 {
			s.Version, s.Pid = f.Version, f.Pid
			s.Settings = append(f.Settings, "datastore: "+s.Settings[0])
		}
	}
	s.Settings = append(s.Settings, fmt.Sprintf("%d front ends, each anykv serve --engine %s", fronts, engineURL))
	s.URL = "resp://" + strings.Join(addrs, ",")
	return s, nil
}

// memberNode is member i of a cluster started by internal/cluster.
type memberNode struct {
	st *cluster.State
	i  int
}

func (m *memberNode) Name() string                  { return m.st.Members[m.i].Name }
func (m *memberNode) Kill() error                   { return m.st.Kill(m.i) }
func (m *memberNode) Restart(context.Context) error { return m.st.Restart(m.i) }
