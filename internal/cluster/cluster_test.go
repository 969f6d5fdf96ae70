package cluster

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"anykv/internal/procnet"
)

func needEtcd(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("etcd"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("etcd not installed")
		}
		t.Skip("etcd not installed (CI unset: skipping)")
	}
}

// needRedis returns redis-server's path, or fails (CI) or skips the test when it is not installed.
func needRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server not installed")
		}
		t.Skip("redis-server not installed (CI unset: skipping)")
	}
	return bin
}

// testEtcd starts a one-member etcd cluster in a temporary directory, stopped when the test ends.
func testEtcd(t *testing.T) (*State, string) {
	t.Helper()
	needEtcd(t)
	dir := filepath.Join(t.TempDir(), "c")
	st, err := Up("etcd", 1, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Down(dir) })
	return st, dir
}

// TestDownStopsARestartedMember: Restart records the member's new pid where Down reads it, so a cluster that
// lost and regained a member leaves nothing running after Down, whoever calls it (it used to stop the dead pid
// and leak the new process unless the caller remembered to Save).
func TestDownStopsARestartedMember(t *testing.T) {
	st, dir := testEtcd(t)
	if err := st.Kill(0); err != nil {
		t.Fatal(err)
	}
	if err := st.Restart(0); err != nil {
		t.Fatal(err)
	}
	if _, err := Down(dir); err != nil {
		t.Fatal(err)
	}
	if st.Running(0) == "running" {
		st.stopMember(st.Members[0])
		t.Fatalf("the restarted member (pid %d) still runs after Down", st.Members[0].Pid)
	}
}

// TestDownLeavesAReusedPidAlone: a member that died may have its pid handed to an unrelated process before
// `cluster down` runs. Down must stop the members still running and leave such a process alone, saying so. The
// reuse is staged: cluster.json gets, besides a real etcd member, two dead members whose pids are those of
// `sleep` processes, one recorded with a start time (not the sleep's), one as a state file written before start
// times were recorded (no start time: the command line is compared). Before the fix Down signalled every pid on
// file and killed both sleeps.
func TestDownLeavesAReusedPidAlone(t *testing.T) {
	st, dir := testEtcd(t)
	var sleeps []*exec.Cmd
	exited := map[int]chan error{}
	for range 2 {
		c := exec.Command("sleep", "60")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill() })
		ch := make(chan error, 1)
		go func() { ch <- c.Wait() }()
		sleeps, exited[c.Process.Pid] = append(sleeps, c), ch
	}
	real := st.Members[0]
	dead := real // a second member started as the first was, since gone, its pid now the first sleep's
	dead.Name, dead.Pid, dead.Start = "m2", sleeps[0].Process.Pid, real.Start+1
	old := real // a third, from a state file without start times
	old.Name, old.Pid, old.Start = "m3", sleeps[1].Process.Pid, 0
	st.Members = append(st.Members, dead, old)
	if err := st.Save(dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, stateFile)); !strings.Contains(string(b), `"start"`) {
		t.Fatalf("cluster.json records no start time: %s", b)
	}
	var saved State
	b, _ := os.ReadFile(filepath.Join(dir, stateFile))
	if err := json.Unmarshal(b, &saved); err != nil || saved.Members[0].Start == 0 {
		t.Fatalf("the real member's start time was not saved (%v): %s", err, b)
	}

	skipped, err := Down(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sleeps {
		select {
		case err := <-exited[s.Process.Pid]:
			t.Errorf("Down killed pid %d, an unrelated sleep on file as a member (%v)", s.Process.Pid, err)
		default:
		}
	}
	if st.Running(0) == "running" || alive(real.Pid) {
		syscall.Kill(real.Pid, syscall.SIGKILL)
		t.Errorf("the real member m1 (pid %d) still runs after Down", real.Pid)
	}
	if len(skipped) != 2 || !strings.Contains(skipped[0], "m2: pid") || !strings.Contains(skipped[1], "m3: pid") ||
		!strings.Contains(skipped[1], "sleep 60") {
		t.Errorf("Down should name m2 and m3 as skipped, got %q", skipped)
	}
	time.Sleep(100 * time.Millisecond) // a signal sent late would show now
	for _, s := range sleeps {
		if !alive(s.Process.Pid) {
			t.Errorf("sleep pid %d did not survive Down", s.Process.Pid)
		}
	}
}

// TestDownStopsALegacyRedisMember: a cluster.json written before start times were recorded is checked by command
// line, but redis-server rewrites its own (its process title, "redis-server 127.0.0.1:PORT [cluster]"), so a
// redis-cluster member on file without a start time was taken for another process: Down left it running, and
// removed the directory that recorded it.
func TestDownStopsALegacyRedisMember(t *testing.T) {
	bin := needRedis(t)
	dir := filepath.Join(t.TempDir(), "c")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ports[0])
	args := []string{"--port", port, "--bind", "127.0.0.1", "--dir", dir, "--cluster-enabled", "yes",
		"--save", "", "--protected-mode", "no", "--daemonize", "no"}
	pid, _, err := spawn(bin, args, filepath.Join(dir, "m1.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	addr := "127.0.0.1:" + port
	if err := waitListening(addr, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	st := &State{Engine: "redis-cluster", Bin: bin, Members: []Member{{Name: "m1", Pid: pid, Addr: addr, Args: args}}}
	if err := st.Save(dir); err != nil {
		t.Fatal(err)
	}
	if st.Running(0) != "running" {
		t.Errorf("status says the legacy member (pid %d, %q) is stopped", pid, cmdline(pid))
	}
	skipped, err := Down(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 0 || alive(pid) {
		t.Errorf("Down left the legacy member (pid %d, alive %v) running: skipped %q", pid, alive(pid), skipped)
	}
}

// TestEtcdMembersAreCheckedByIdentity: an etcd answering on a member's client port that is not that member of the
// cluster (a port another test's etcd took before the member could bind it) is caught, even when it has the
// member's name: Up used to hand out such a cluster, and a test that stopped the other members to cut member 0
// off read from a healthy cluster it never touched.
func TestEtcdMembersAreCheckedByIdentity(t *testing.T) {
	needEtcd(t)
	dir := filepath.Join(t.TempDir(), "a")
	a, err := Up("etcd", 2, dir, Options{})
	t.Cleanup(func() { Down(dir) })
	if err != nil {
		t.Fatal(err)
	}
	if err := checkEtcdMembers(a); err != nil {
		t.Fatalf("a cluster as started: %v", err)
	}
	b, _ := testEtcd(t) // its only member is also named m1
	swapped := *a
	swapped.Members = append([]Member(nil), a.Members...)
	swapped.Members[0].Addr = b.Members[0].Addr
	if err := checkEtcdMembers(&swapped); err == nil || !strings.Contains(err.Error(), "is of cluster") {
		t.Errorf("member m1 answered by another cluster's m1: %v", err)
	}
	swapped.Members[0], swapped.Members[1].Addr = a.Members[0], b.Members[0].Addr
	if err := checkEtcdMembers(&swapped); err == nil || !strings.Contains(err.Error(), `is member "m1", not m2`) {
		t.Errorf("member m2 answered by another cluster's m1: %v", err)
	}
}

// TestRedisClusterNodesAreItsOwn: a port another process took between the pick and the node's bind (here a
// fresh cluster-mode redis-server, as another test's cluster waiting for its own create) makes that node exit
// while the port answers: Up used to wait only for the port to answer and joined the stranger into the cluster,
// whose member then was a dead pid and someone else's server. Now each node's own process must listen on its
// port and bus port, and the cluster is started again on new ports.
func TestRedisClusterNodesAreItsOwn(t *testing.T) {
	bin := needRedis(t)
	sdir := filepath.Join(t.TempDir(), "stranger")
	if err := os.MkdirAll(sdir, 0o755); err != nil {
		t.Fatal(err)
	}
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	stranger := Member{Name: "stranger", Addr: "127.0.0.1:" + strconv.Itoa(ports[0]), Log: filepath.Join(sdir, "log")}
	args := []string{"--port", strconv.Itoa(ports[0]), "--bind", "127.0.0.1", "--dir", sdir, "--cluster-enabled", "yes",
		"--save", "", "--protected-mode", "no", "--daemonize", "no"}
	if stranger.Pid, _, err = spawn(bin, args, stranger.Log); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(stranger.Pid, syscall.SIGKILL) })
	if err := waitRedisNode(stranger, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	calls := 0
	pickPorts = func(n int) ([]int, error) {
		calls++
		p, err := freePorts(n)
		if calls == 1 && err == nil {
			p[0] = ports[0] // the first node's port is the stranger's by the time it binds
		}
		return p, err
	}
	t.Cleanup(func() { pickPorts = freePorts })
	dir := filepath.Join(t.TempDir(), "c")
	st, err := Up("redis-cluster", 3, dir, Options{})
	t.Cleanup(func() { Down(dir) })
	if err != nil {
		t.Fatalf("Up after a taken port (%d tries): %v", calls, err)
	}
	if calls != 2 {
		t.Errorf("ports picked %d times, want 2 (a second try after the taken port)", calls)
	}
	for _, m := range st.Members {
		if m.Addr == stranger.Addr || !alive(m.Pid) || !procnet.Listens(m.Pid, m.Addr) {
			t.Errorf("member %s on %s (pid %d, alive %v) is not what answers there", m.Name, m.Addr, m.Pid, alive(m.Pid))
		}
	}
	out, err := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", strconv.Itoa(ports[0]), "cluster", "nodes").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.TrimSpace(string(out)), "\n") + 1; n != 1 {
		t.Errorf("the stranger was joined into the cluster: it knows %d nodes:\n%s", n, out)
	}
}

// TestWaitOwnListenerIsNotFooled: a member whose address answers from another process is not taken as
// listening, and once it exits with a bind error in its log it is reported as having lost its port (Up then
// starts again on new ports): the check Cassandra's seed, probed alone, needs.
func TestWaitOwnListenerIsNotFooled(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // the other process's listener (this test's own)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	log := filepath.Join(t.TempDir(), "m1.log")
	if err := os.WriteFile(log, []byte("java.net.BindException: Address already in use\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pid, _, err := spawn("/bin/sleep", []string{"30"}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	m := Member{Name: "m1", Pid: pid, Addr: ln.Addr().String(), Log: log}
	if err := waitOwnListener(m, 300*time.Millisecond); err == nil || !strings.Contains(err.Error(), "another process listens") {
		t.Fatalf("a member whose port answers from another process: %v", err)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := waitOwnListener(m, 5*time.Second); !errors.Is(err, errPortTaken) {
		t.Fatalf("a member that exited with a bind error: %v, want errPortTaken", err)
	}
}

// TestRestartWaitsOutABriefHolderOfItsPort: a member restarted while another process holds its port for a
// moment (another test's probe for a free port) starts once the port is free, rather than failing at once.
func TestRestartWaitsOutABriefHolderOfItsPort(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	st := &State{Bin: python, Members: []Member{{Name: "m1", Addr: ln.Addr().String(), Log: filepath.Join(t.TempDir(), "m1.log"),
		Args: []string{"-m", "http.server", "--bind", "127.0.0.1", port}}}}
	// The holder lets go once the first start met it (its log says so), or after 3 s: a fixed 0.5 s was over
	// before python3 had even bound the port on a loaded CI machine.
	go func() {
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if b, _ := os.ReadFile(st.Members[0].Log); strings.Contains(strings.ToLower(string(b)), "address already in use") {
				break
			}
		}
		ln.Close()
	}()
	if err := st.Restart(0); err != nil {
		t.Fatalf("restart while the port was held: %v", err)
	}
	defer syscall.Kill(st.Members[0].Pid, syscall.SIGKILL)
	if b, _ := os.ReadFile(st.Members[0].Log); !strings.Contains(strings.ToLower(string(b)), "address already in use") {
		t.Errorf("the first start did not meet the held port; log:\n%s", b)
	}
}

// TestDownStopsMembersTogether: Down gives every member its 5 s after SIGTERM at the same time, so a cluster of
// members that ignore SIGTERM (as a Cassandra node may for the whole 5 s) stops in about 5 s, not 5 s a member.
// Three shells that trap SIGTERM stand for the members; one after another they took 15 s.
func TestDownStopsMembersTogether(t *testing.T) {
	dir := t.TempDir()
	st := &State{Engine: "etcd", Bin: "/bin/sh"}
	for i := range 3 {
		c := exec.Command("/bin/sh", "-c", "trap '' TERM; while :; do sleep 1; done")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill() })
		go c.Wait() // reap it, so that it does not stay a zombie counted as running
		start, _, err := procStat(c.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		st.Members = append(st.Members, Member{Name: "m" + strconv.Itoa(i+1), Pid: c.Process.Pid, Start: start})
	}
	if err := st.Save(dir); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	skipped, err := Down(dir)
	took := time.Since(began)
	if err != nil || len(skipped) != 0 {
		t.Fatalf("Down: %v, skipped %q", err, skipped)
	}
	for _, m := range st.Members {
		if alive(m.Pid) && st.stranger(m) == "" {
			t.Errorf("%s (pid %d) still runs after Down", m.Name, m.Pid)
		}
	}
	if took > 12*time.Second {
		t.Errorf("Down took %v for three members that ignore SIGTERM: one after another (3 × 5 s), not together", took)
	}
}
