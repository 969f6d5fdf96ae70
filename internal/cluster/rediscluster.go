package cluster

import (
	"context"
	"fmt"
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
// n/2 masters with one replica each when n is even and at least 6, else n masters without replicas. Each node
// keeps an append-only file, so a node killed and restarted before its replica took over comes back with its
// data rather than empty. It waits until every node reports cluster_state:ok.
func upRedisCluster(n int, dir string) (*State, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server %w: install Debian package redis-server", errNotInstalled)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, fmt.Errorf("redis-cli %w: install Debian package redis-tools", errNotInstalled)
	}
	if n < 3 {
		return nil, fmt.Errorf("a Redis Cluster needs at least 3 masters: --nodes 3 (no replicas) or 6 (3 masters, 3 replicas)")
	}
	replicas := 0
	if n >= 6 && n%2 == 0 {
		replicas = 1
	}
	ports, err := freePorts(n)
	if err != nil {
		return nil, err
	}
	st := &State{Engine: "redis-cluster", Bin: bin}
	var addrs []string
	for i, port := range ports {
		name := fmt.Sprintf("m%d", i+1)
		data, err := filepath.Abs(filepath.Join(dir, name))
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
		pid, err := spawn(bin, args, log)
		if err != nil {
			return st, err
		}
		st.Members = append(st.Members, Member{Name: name, Pid: pid, Addr: addr, Args: args, Log: log})
		addrs = append(addrs, addr)
	}
	for _, a := range addrs {
		if err := waitListening(a, 30*time.Second); err != nil {
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
	return st, waitRedisCluster(addrs, 60*time.Second)
}

// waitRedisCluster waits until every node answers CLUSTER INFO with cluster_state:ok.
func waitRedisCluster(addrs []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			info, err := c.ClusterInfo(ctx).Result()
			cancel()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
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

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
