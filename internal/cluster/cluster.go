// Package cluster starts and stops local clusters of the distributed datastores anykv front ends can serve
// (etcd, Redis Cluster and Cassandra), for trying and testing anykv beyond one machine on one machine: `anykv cluster up` and
// `anykv cluster down`. Members run as detached processes on 127.0.0.1 ports; a state file in the cluster's
// directory records them, so `down` (another process) can stop them and remove everything.
package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"anykv/internal/procnet"
)

// Member is one process of a cluster.
type Member struct {
	Name string `json:"name"`
	Pid  int    `json:"pid"`
	// Start is the pid's start time when the member was started (field 22 of /proc/<pid>/stat, clock ticks
	// since boot): Down, Kill and Running act on the pid only while it still names that process, not another
	// one that was given the pid after the member died. 0 in a state file written before it was recorded: the
	// pid's command line is compared with the member's instead.
	Start uint64 `json:"start,omitempty"`
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

// Down stops every member of the cluster in dir and removes the directory. A member whose pid now names another
// process (the member died and the system gave its pid to a new process) is not signalled: skipped says which,
// one line each, for the caller to report.
func Down(dir string) (skipped []string, err error) {
	st, err := Load(dir)
	if err != nil {
		return nil, err
	}
	skipped = st.stop()
	return skipped, os.RemoveAll(dir)
}

// stop ends every member still running as started: SIGTERM, then SIGKILL after 5 s, all members at once (a
// Cassandra node may take the whole 5 s; one after another, a 3-node cluster took 15 s to stop). It returns a
// line for each member whose pid runs another process, which it leaves alone.
func (st *State) stop() (skipped []string) {
	notes := make([]string, len(st.Members))
	var wg sync.WaitGroup
	for i, m := range st.Members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			notes[i] = st.stopMember(m)
		}()
	}
	wg.Wait()
	for _, note := range notes {
		if note != "" {
			skipped = append(skipped, note)
		}
	}
	return skipped
}

// Kill ends member i at once (SIGKILL), as a crash would. It refuses if the member's pid runs another process.
func (st *State) Kill(i int) error {
	m := st.Members[i]
	p, note := st.process(m)
	if p == nil {
		if note == "" {
			return fmt.Errorf("%s (pid %d) is not running", m.Name, m.Pid)
		}
		return errors.New(note)
	}
	defer p.Release()
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	st.waitGone(m, 5*time.Second)
	return nil
}

// Restart starts member i again with its arguments and data, records its new pid in the state's directory (so
// Down stops it, whoever calls Down), and waits until it answers. The port the kill freed can be held for a
// moment by another process looking for a free one (procnet.FreePort binds and closes, and tests run side by
// side: a restart in CI met "Address already in use"), so a start that failed on it is tried a few more times.
func (st *State) Restart(i int) error {
	for attempt := 1; ; attempt++ {
		err := st.restartOnce(i)
		if !errors.Is(err, errPortTaken) || attempt == 5 {
			return err
		}
		time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
	}
}

// restartOnce is one try of Restart.
func (st *State) restartOnce(i int) error {
	m := &st.Members[i]
	pid, start, err := spawn(st.Bin, m.Args, m.Log)
	if err != nil {
		return err
	}
	m.Pid, m.Start = pid, start
	if st.dir != "" {
		if err := st.Save(st.dir); err != nil {
			return err
		}
	}
	if st.Engine == "cassandra" { // a JVM: slower to start, and ready once it is back in its peers' ring
		return waitRejoined(st, i, 120*time.Second)
	}
	if st.Engine == "redis-cluster" {
		return waitRedisNode(*m, 30*time.Second)
	}
	return waitOwnListener(*m, 30*time.Second)
}

// Save writes the state to dir.
func (st *State) Save(dir string) error {
	b, _ := json.MarshalIndent(st, "", "  ")
	return os.WriteFile(filepath.Join(dir, stateFile), b, 0o644)
}

// spawn starts bin detached (its own session: it outlives the command that started it) with output to log, and
// returns its pid and start time (Member.Start).
func spawn(bin string, args []string, log string) (pid int, start uint64, err error) {
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	attr := &os.ProcAttr{Files: []*os.File{nil, f, f}, Sys: &syscall.SysProcAttr{Setsid: true}}
	p, err := os.StartProcess(bin, append([]string{bin}, args...), attr)
	if err != nil {
		return 0, 0, err
	}
	pid = p.Pid
	// Read before anything can reap it: until then the pid is this child's, even if it already exited.
	start, _, err = procStat(pid)
	if err != nil {
		p.Kill()
		p.Wait()
		return 0, 0, fmt.Errorf("%s: reading its start time: %w", bin, err)
	}
	go p.Wait() // reap it if it dies while this process lives
	return pid, start, nil
}

// process returns member m's process, opened (a pidfd, so signals reach that process even if the pid is later
// reused) and then checked to be the member; or nil with an explanation if the pid runs another process, or nil
// and "" if nothing runs under the pid.
func (st *State) process(m Member) (*os.Process, string) {
	p, err := os.FindProcess(m.Pid)
	if err != nil {
		return nil, ""
	}
	if !alive(m.Pid) {
		p.Release()
		return nil, ""
	}
	if note := st.stranger(m); note != "" {
		p.Release()
		return nil, note
	}
	return p, ""
}

// stranger says why the process under m's pid is not the member started ("" if it is, or if nothing runs there).
func (st *State) stranger(m Member) string {
	start, _, err := procStat(m.Pid)
	if err != nil {
		return ""
	}
	if m.Start != 0 {
		if start == m.Start {
			return ""
		}
		return fmt.Sprintf("%s: pid %d now runs another process (%s, started at tick %d, not %d): the member "+
			"is gone and its pid was reused; not signalled", m.Name, m.Pid, cmdline(m.Pid), start, m.Start)
	}
	// A state file from before start times were recorded: the command line is what is left to compare, or, as
	// redis-server rewrites its own into its process title ("redis-server 127.0.0.1:PORT [cluster]"), the
	// executable and the member's address in that title.
	want := strings.Join(append([]string{st.Bin}, m.Args...), " ")
	if got := cmdline(m.Pid); got != want && !(sameExe(m.Pid, st.Bin) && slices.Contains(strings.Fields(got), m.Addr)) {
		return fmt.Sprintf("%s: pid %d now runs another process (%s): the member is gone and its pid was "+
			"reused; not signalled", m.Name, m.Pid, got)
	}
	return ""
}

// stopMember ends member m if its pid still runs it: SIGTERM, then SIGKILL after 5 s. It returns why it left
// the pid alone when the pid runs another process.
func (st *State) stopMember(m Member) string {
	p, note := st.process(m)
	if p == nil {
		return note
	}
	defer p.Release()
	p.Signal(syscall.SIGTERM)
	if !st.waitGone(m, 5*time.Second) {
		p.Signal(syscall.SIGKILL) // through the pidfd: never another process
		st.waitGone(m, 5*time.Second)
	}
	return ""
}

// waitGone polls until member m no longer runs (its pid is free, a zombie of this process, or another process's)
// or timeout passes.
func (st *State) waitGone(m Member, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !st.running(m) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return !st.running(m)
}

// running reports whether member m runs: its pid is alive and still the member's.
func (st *State) running(m Member) bool {
	return alive(m.Pid) && st.stranger(m) == ""
}

// Freeze stops process pid (SIGSTOP: a hung process, a cut-off machine) and returns once every thread of it has
// stopped. The kill only wakes one thread, which then stops the others: until that thread runs (milliseconds on a
// loaded machine), the rest keep serving, so an etcd member "stopped" that way still acked the leader's
// heartbeats and a linearizable read through the remaining member was answered. The caller resumes it with
// SIGCONT.
func Freeze(pid int, timeout time.Duration) error {
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		stopped, err := allStopped(pid)
		if err != nil || stopped {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d: not every thread stopped within %v of SIGSTOP", pid, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// allStopped reports whether every thread of pid is stopped (state T; t, Z and X count: traced, or gone).
func allStopped(pid int) (bool, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false, err
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		_, state, err := procStat(tid) // /proc/<tid>/stat is the thread's own
		if err != nil {
			continue // the thread ended
		}
		if !strings.ContainsRune("TtZX", rune(state)) {
			return false, nil
		}
	}
	return true, nil
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	_, state, err := procStat(pid)
	return err == nil && state != 'Z'
}

// procStat reads pid's start time (field 22 of /proc/<pid>/stat, clock ticks after boot) and state (field 3).
func procStat(pid int) (start uint64, state byte, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// "pid (comm) S ppid ...": comm may hold spaces and parentheses, so fields are counted after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3 (state), so field 22 is f[19]
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %d fields after the command name", pid, len(f))
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	return start, f[0][0], nil
}

// sameExe reports whether pid runs the executable bin.
func sameExe(pid int, bin string) bool {
	exe, err := os.Stat(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false
	}
	b, err := os.Stat(bin)
	return err == nil && os.SameFile(exe, b)
}

// cmdline is pid's command line, its arguments joined by spaces ("?" if unreadable).
func cmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"), " ")
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

// errPortTaken is the error of a member that exited during start-up because another process had bound its port
// after freePorts picked it (tests start clusters side by side): Up starts the cluster again on new ports.
var errPortTaken = errors.New("its port was taken by another process")

// waitOwnListener polls until member m's own process listens on m.Addr, so that what answers there is the
// member and not another process that bound the port before it could (a connection that succeeds proves
// nothing: the member then exits, and the port keeps answering). It fails when the member exits first
// (wrapping errPortTaken if its log says why) or timeout passes.
func waitOwnListener(m Member, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if !alive(m.Pid) {
			return exitedDuringStart(m)
		}
		c, err := net.DialTimeout("tcp", m.Addr, time.Second)
		if err == nil {
			c.Close()
			if procnet.Listens(m.Pid, m.Addr) {
				return nil
			}
			err = errors.New("another process listens there")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not listen on %s within %s: %w", m.Name, m.Addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// exitedDuringStart is the error of member m, which exited while it started: errPortTaken when its log says
// an address was in use.
func exitedDuringStart(m Member) error {
	tail := logTail(m.Log, 200) // a JVM logs a stack trace and its shutdown after the bind error
	if strings.Contains(strings.ToLower(tail), "address already in use") {
		return fmt.Errorf("%s (%s) exited: %w; log %s:\n%s", m.Name, m.Addr, errPortTaken, m.Log, lastLines(tail, 5))
	}
	return fmt.Errorf("%s (%s) exited during start-up; log %s:\n%s", m.Name, m.Addr, m.Log, lastLines(tail, 20))
}

// retryOnTakenPort runs up, which starts a cluster on ports it picks, until it fails for another reason than
// errPortTaken or has tried three times; between tries it stops what the try started and removes its members'
// directories under dir.
func retryOnTakenPort(dir string, up func() (*State, error)) (*State, error) {
	for attempt := 1; ; attempt++ {
		st, err := up()
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			return st, err
		}
		if st != nil {
			st.stop()
			for _, m := range st.Members {
				// The log too: the next try's member appends to it, and an old bind error would be read as its own.
				if err := errors.Join(os.RemoveAll(filepath.Join(dir, m.Name)), os.RemoveAll(m.Log)); err != nil {
					return nil, err
				}
			}
		}
	}
}

// pickPorts picks the ports of a Redis Cluster's nodes: freePorts, or a test's stand-in that hands out a port
// another process holds.
var pickPorts = freePorts

// freePorts returns n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var ports []int
	for len(ports) < n {
		p, err := procnet.FreePort() // below the ephemeral range: see FreePort
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// ErrNotInstalled is wrapped by the error of Up (and of CassandraJars) when a datastore's program is missing.
var ErrNotInstalled = errors.New("not installed")

// Running says "running" or "stopped" for member i: stopped if its pid is free or runs another process.
func (st *State) Running(i int) string {
	if st.running(st.Members[i]) {
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
