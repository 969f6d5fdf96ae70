// Package cluster starts and stops local clusters of the distributed datastores anykv front ends can serve
// (etcd, Redis Cluster and Cassandra), for trying and testing anykv beyond one machine on one machine: `anykv cluster up` and
// `anykv cluster down`. Members run as detached processes on 127.0.0.1 ports; a state file in the cluster's
// directory records them, so `down` (another process) can stop them and remove everything.
package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Member is one process of a cluster.
type Member struct {
	Name string `json:"name"`
	Pid  int    `json:"pid"`
	// Addr is the member's client address (host:port).
	Addr string `json:"addr"`
	// Args restart the member as it was started (Restart).
	Args []string `json:"args"`
	Log  string   `json:"log"`
}

// State is what a running cluster leaves in its directory.
type State struct {
	Engine  string   `json:"engine"`
	URL     string   `json:"url"` // the --engine URL of anykv front ends
	Bin     string   `json:"bin"`
	Members []Member `json:"members"`
	dir     string   // where the state is kept (Up, Load): Restart writes the new pid there at once
}

const stateFile = "cluster.json"

// Options are the settings of Up beyond the engine, the member count and the directory.
type Options struct {
	// NoHints turns Cassandra's hinted handoff off: a node that was down stays stale until a read repairs it,
	// which is what a test of reads at ONE needs to see deterministically. Other engines ignore it.
	NoHints bool
}

// Up starts a cluster of engine with n members in dir (created; it must not hold a running cluster) and returns
// its state once every member answers. On failure, whatever started is stopped.
func Up(engine string, n int, dir string, opt Options) (*State, error) {
	if n < 1 {
		return nil, fmt.Errorf("--nodes must be at least 1")
	}
	if _, err := os.Stat(filepath.Join(dir, stateFile)); err == nil {
		return nil, fmt.Errorf("%s already holds a cluster: run anykv cluster down --dir %s first", dir, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var st *State
	var err error
	switch engine {
	case "etcd":
		st, err = upEtcd(n, dir)
	case "redis-cluster":
		st, err = upRedisCluster(n, dir)
	case "cassandra":
		st, err = upCassandra(n, dir, opt.NoHints)
	default:
		return nil, fmt.Errorf("--engine %q: anykv cluster up starts etcd, redis-cluster and cassandra clusters", engine)
	}
	if err != nil {
		if st != nil {
			st.stop()
		}
		return nil, err
	}
	st.dir = dir
	if err := st.Save(dir); err != nil {
		st.stop()
		return nil, err
	}
	return st, nil
}

// Load reads the state of the cluster in dir.
func Load(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, fmt.Errorf("no cluster in %s: %w", dir, err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	st.dir = dir
	return &st, nil
}

// Down stops every member of the cluster in dir and removes the directory.
func Down(dir string) error {
	st, err := Load(dir)
	if err != nil {
		return err
	}
	st.stop()
	return os.RemoveAll(dir)
}

// stop ends every member: SIGTERM, then SIGKILL after 5 s.
func (st *State) stop() {
	for _, m := range st.Members {
		stopPid(m.Pid)
	}
}

// Kill ends member i at once (SIGKILL), as a crash would.
func (st *State) Kill(i int) error {
	p, err := os.FindProcess(st.Members[i].Pid)
	if err != nil {
		return err
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	waitGone(st.Members[i].Pid, 5*time.Second)
	return nil
}

// Restart starts member i again with its arguments and data, records its new pid in the state's directory (so
// Down stops it, whoever calls Down), and waits until it answers.
func (st *State) Restart(i int) error {
	m := &st.Members[i]
	pid, err := spawn(st.Bin, m.Args, m.Log)
	if err != nil {
		return err
	}
	m.Pid = pid
	if st.dir != "" {
		if err := st.Save(st.dir); err != nil {
			return err
		}
	}
	if st.Engine == "cassandra" { // a JVM: slower to start, and ready once it is back in its peers' ring
		return waitRejoined(st, i, 120*time.Second)
	}
	return waitListening(m.Addr, 30*time.Second)
}

// Save writes the state to dir.
func (st *State) Save(dir string) error {
	b, _ := json.MarshalIndent(st, "", "  ")
	return os.WriteFile(filepath.Join(dir, stateFile), b, 0o644)
}

// spawn starts bin detached (its own session: it outlives the command that started it) with output to log.
func spawn(bin string, args []string, log string) (int, error) {
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	attr := &os.ProcAttr{Files: []*os.File{nil, f, f}, Sys: &syscall.SysProcAttr{Setsid: true}}
	p, err := os.StartProcess(bin, append([]string{bin}, args...), attr)
	if err != nil {
		return 0, err
	}
	pid := p.Pid
	go p.Wait() // reap it if it dies while this process lives
	return pid, nil
}

func stopPid(pid int) {
	p, err := os.FindProcess(pid)
	if err != nil || p.Signal(syscall.Signal(0)) != nil {
		return
	}
	p.Signal(syscall.SIGTERM)
	if !waitGone(pid, 5*time.Second) {
		p.Signal(syscall.SIGKILL)
		waitGone(pid, 5*time.Second)
	}
}

// waitGone polls until pid no longer exists (or is a zombie of this process) or timeout passes.
func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return !alive(pid)
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	for i := len(b) - 1; i > 0; i-- {
		if b[i] == ')' && i+2 < len(b) {
			return b[i+2] != 'Z'
		}
	}
	return true
}

// waitListening polls addr until it accepts a connection.
func waitListening(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer within %s: %w", addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePorts returns n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ErrNotInstalled is wrapped by the error of Up (and of CassandraJars) when a datastore's program is missing.
var ErrNotInstalled = errors.New("not installed")

// Running says "running" or "stopped" for a member's pid.
func Running(pid int) string {
	if alive(pid) {
		return "running"
	}
	return "stopped"
}

// memberDir names member i (m1, m2, ...) and returns the absolute path of its data directory under dir.
func memberDir(dir string, i int) (string, string, error) {
	name := fmt.Sprintf("m%d", i+1)
	data, err := filepath.Abs(filepath.Join(dir, name))
	return name, data, err
}
