package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// upEtcd starts an etcd cluster of n members (Raft: it stays available while a majority runs) and waits until
// it has a leader and answers a linearizable read. The ports are free when picked, but another process may bind
// one before its member does (tests start clusters side by side): that member exits, a majority may still form
// (and another process may answer on the port), so a cluster with a member gone, or whose port answers as
// another etcd, is started again on new ports.
func upEtcd(n int, dir string) (*State, error) {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return nil, fmt.Errorf("etcd %w: install Debian package etcd-server", ErrNotInstalled)
	}
	for attempt := 1; ; attempt++ {
		st, err := upEtcdOnce(bin, n, dir)
		if err != nil {
			return st, err
		}
		if err := checkEtcdMembers(st); err == nil || attempt == 3 {
			return st, err
		}
		st.stop()
		for _, m := range st.Members {
			if err := os.RemoveAll(filepath.Join(dir, m.Name)); err != nil {
				return nil, err
			}
		}
	}
}

// checkEtcdMembers returns an error unless each member's process runs and the etcd answering on its client
// port is that member, of one cluster. A port taken by another process between freePorts and the member's bind
// (another test's etcd, say) makes the member exit, while the port keeps answering, perhaps as a healthy
// cluster of its own: a test that stops members to cut one off would then read from a cluster it never touched.
func checkEtcdMembers(st *State) error {
	var cluster uint64
	for i, m := range st.Members {
		if !alive(m.Pid) {
			return fmt.Errorf("etcd member %s exited", m.Name)
		}
		name, id, err := etcdIdentity(m.Addr, 10*time.Second)
		if err != nil {
			return err
		}
		if name != m.Name {
			return fmt.Errorf("etcd on %s is member %q, not %s", m.Addr, name, m.Name)
		}
		if i > 0 && id != cluster {
			return fmt.Errorf("etcd on %s (%s) is of cluster %x, %s's of cluster %x", m.Addr, m.Name, id, st.Members[0].Name, cluster)
		}
		cluster = id
	}
	return nil
}

// etcdIdentity asks the etcd on addr alone for its member name and cluster ID, retrying until timeout.
func etcdIdentity(addr string, timeout time.Duration) (name string, cluster uint64, err error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 2 * time.Second})
	if err != nil {
		return "", 0, err
	}
	defer c.Close()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var s *clientv3.StatusResponse
		var l *clientv3.MemberListResponse
		if s, err = c.Status(ctx, addr); err == nil {
			l, err = c.MemberList(ctx, clientv3.WithSerializable())
		}
		cancel()
		if err == nil {
			for _, m := range l.Members {
				if m.ID == s.Header.MemberId {
					return m.Name, s.Header.ClusterId, nil
				}
			}
			return "", s.Header.ClusterId, fmt.Errorf("etcd on %s: member %x not in its member list", addr, s.Header.MemberId)
		}
		if time.Now().After(deadline) {
			return "", 0, fmt.Errorf("etcd on %s: %w", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// upEtcdOnce is one attempt of upEtcd, on ports picked now.
func upEtcdOnce(bin string, n int, dir string) (*State, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	st := &State{Engine: "etcd", Bin: bin}
	var initial, clients []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i+1, ports[2*i+1]))
		clients = append(clients, fmt.Sprintf("127.0.0.1:%d", ports[2*i]))
	}
	for i := range n {
		name := fmt.Sprintf("m%d", i+1)
		client, peer := "http://"+clients[i], fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		args := []string{"--name", name, "--data-dir", filepath.Join(dir, name),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", filepath.Base(dir), "--log-level", "warn"}
		log := filepath.Join(dir, name+".log")
		pid, start, err := spawn(bin, args, log)
		if err != nil {
			return st, err
		}
		st.Members = append(st.Members, Member{Name: name, Pid: pid, Start: start, Addr: clients[i], Args: args, Log: log})
	}
	st.URL = "etcd://" + strings.Join(clients, ",")
	return st, waitEtcd(clients, 60*time.Second)
}

// waitEtcd waits until the cluster answers a linearizable read (which needs a leader and a quorum).
func waitEtcd(endpoints []string, timeout time.Duration) error {
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := c.Get(ctx, "anykv-cluster-probe")
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd cluster not ready after %s: %w", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
