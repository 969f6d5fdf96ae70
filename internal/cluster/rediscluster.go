package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// NodeTimeout is the cluster-node-timeout of `cluster up --engine redis-cluster`: how long a master may be
// unreachable before its replica takes over (a failover takes about this plus an election).
const NodeTimeout = 1500 * time.Millisecond

// upRedisCluster starts n redis-server nodes in cluster mode and joins them with redis-cli --cluster create:
// 3 masters with n/3-1 replicas each (9 nodes: two replicas, so a shard that lost its master still has one to
// WAIT for). Each node
// keeps an append-only file, so a node killed and restarted before its replica took over comes back with its
// data rather than empty. It waits until every node reports cluster_state:ok. A node whose port another process
// took before it bound it exits, while the port answers as that process: the nodes are joined only once each
// one's own process listens, and the cluster is started again on new ports when one lost its port.
func upRedisCluster(n int, dir string) (*State, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server %w: install Debian package redis-server", ErrNotInstalled)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, fmt.Errorf("redis-cli %w: install Debian package redis-tools", ErrNotInstalled)
	}
	if n < 3 || n%3 != 0 {
		return nil, fmt.Errorf("--nodes %d: a Redis Cluster here is 3 masters with the same number of replicas each: --nodes 3, 6 or 9", n)
	}
	return retryOnTakenPort(dir, func() (*State, error) { return upRedisClusterOnce(bin, cli, n, dir) })
}

// upRedisClusterOnce is one attempt of upRedisCluster, on ports picked now.
func upRedisClusterOnce(bin, cli string, n int, dir string) (*State, error) {
	replicas := n/3 - 1
	ports, err := pickPorts(n)
	if err != nil {
		return nil, err
	}
	st := &State{Engine: "redis-cluster", Bin: bin}
	var addrs []string
	for i, port := range ports {
		name, data, err := memberDir(dir, i)
		if err != nil {
			return st, err
		}
		if err := os.MkdirAll(data, 0o755); err != nil {
			return st, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", data,
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.Itoa(int(NodeTimeout.Milliseconds())),
			"--cluster-require-full-coverage", "no", "--cluster-replica-validity-factor", "0",
			"--appendonly", "yes", "--save", "", "--protected-mode", "no", "--daemonize", "no"}
		log := filepath.Join(dir, name+".log")
		pid, start, err := spawn(bin, args, log)
		if err != nil {
			return st, err
		}
		st.Members = append(st.Members, Member{Name: name, Pid: pid, Start: start, Addr: addr, Args: args, Log: log})
		addrs = append(addrs, addr)
	}
	for _, m := range st.Members {
		if err := waitRedisNode(m, 30*time.Second); err != nil {
			return st, err
		}
	}
	create := append([]string{"--cluster", "create"}, addrs...)
	create = append(create, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command(cli, create...).CombinedOutput(); err != nil {
		return st, fmt.Errorf("redis-cli --cluster create: %v: %s", err, lastLines(string(out), 5))
	}
	st.URL = "redis-cluster://" + strings.Join(addrs, ",")
	if replicas == 0 {
		st.URL += "/?replicas=0"
	}
	return st, waitRedisCluster(addrs, replicas, 60*time.Second)
}

// waitRedisNode waits until member m's own process listens on its port and on its cluster bus port (10000
// above), which it binds next: a node that lost the bus port to another process exits after its port answered.
func waitRedisNode(m Member, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	host, port, err := net.SplitHostPort(m.Addr)
	if err != nil {
		return err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return err
	}
	bus := m
	bus.Addr = net.JoinHostPort(host, strconv.Itoa(p+10000))
	for _, m := range []Member{m, bus} {
		if err := waitOwnListener(m, time.Until(deadline)); err != nil {
			return fmt.Errorf("redis cluster node %w", err)
		}
	}
	return nil
}

// waitRedisCluster waits until every node answers CLUSTER INFO with cluster_state:ok and sees every slot range
// served by a master with its replicas.
func waitRedisCluster(addrs []string, replicas int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			info, err := c.ClusterInfo(ctx).Result()
			var shards []redis.ClusterShard
			if err == nil {
				shards, err = c.ClusterShards(ctx).Result()
			}
			cancel()
			if err == nil && strings.Contains(info, "cluster_state:ok") && complete(shards, replicas) {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				return fmt.Errorf("redis cluster node %s not ready after %s (%v)", a, timeout, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		c.Close()
	}
	return nil
}

// complete reports whether the shards' online masters serve all 16384 slots, each with replicas online
// replicas (CLUSTER SHARDS lists failed and loading nodes too).
func complete(shards []redis.ClusterShard, replicas int) bool {
	served := int64(0)
	for _, sh := range shards {
		online := map[string]int{}
		for _, n := range sh.Nodes {
			if n.Health == "online" {
				online[n.Role]++
			}
		}
		if online["master"] != 1 || online["replica"] != replicas {
			continue
		}
		for _, r := range sh.Slots {
			served += r.End - r.Start + 1
		}
	}
	return served == 16384
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
