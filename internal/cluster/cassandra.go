package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// CassandraVersion is the Apache Cassandra release anykv's clusters, bench and tests run, from Maven Central's jars.
const CassandraVersion = "5.0.4"

// CassandraJars returns the directory holding cassandra-all and its runtime dependencies, fetching them with
// Maven into ~/.cache/anykv/cassandra-VERSION/lib the first time (later runs reuse it; scripts/test.sh fetches
// it ahead). The directory appears whole or not at all: Maven copies into a temporary one that is renamed.
func CassandraJars(ctx context.Context) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	lib := filepath.Join(cache, "anykv", "cassandra-"+CassandraVersion, "lib")
	if _, err := os.Stat(filepath.Join(lib, "cassandra-all-"+CassandraVersion+".jar")); err == nil {
		return lib, nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", fmt.Errorf("cassandra's jars are not in %s and maven is %w: install Debian package maven", lib, ErrNotInstalled)
	}
	if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(lib), "fetch-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	pom := `<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>anykv</groupId><artifactId>cassandra-jars</artifactId><version>1</version><packaging>pom</packaging>
<dependencies><dependency><groupId>org.apache.cassandra</groupId><artifactId>cassandra-all</artifactId>
<version>` + CassandraVersion + `</version></dependency></dependencies></project>`
	if err := os.WriteFile(filepath.Join(tmp, "pom.xml"), []byte(pom), 0o644); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mvn, "-q", "-B", "dependency:copy-dependencies", "-DincludeScope=runtime",
		"-DoutputDirectory="+filepath.Join(tmp, "lib"))
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cassandra: fetching jars with maven: %v: %s", err, lastLines(string(out), 15))
	}
	if err := os.Rename(filepath.Join(tmp, "lib"), lib); err != nil && !os.IsExist(err) {
		if _, serr := os.Stat(lib); serr != nil { // not a concurrent fetch that won
			return "", err
		}
	}
	return lib, nil
}

// CassandraNode is one node's configuration: where it listens and keeps its files, and how it finds the ring.
type CassandraNode struct {
	Dir     string // data, commit log, logs and cassandra.yaml
	Addr    string // listen and native (CQL) address, e.g. 127.0.0.2
	Native  int    // CQL port
	Storage int    // inter-node port
	Seed    string // host:port of the seed (the node itself for a single node)
	Token   string // its one token (num_tokens 1)
	Heap    [2]string
	// Timeout, if set, is the write and compare-and-set contention timeout (Cassandra's defaults: 2 s and 1 s;
	// a Paxos round cut short is an unknown outcome). A cluster uses 2 s for both: a round that a node killed
	// before its peers convict it holds up waits that long (the failover bench: 4.8 s without a successful
	// request at 5 s, 1.7 s at 2 s), and over several slots contention no longer needs the longer wait.
	Timeout string
	NoHints bool // hinted_handoff_enabled: false (Options.NoHints)
}

// YAML is the node's cassandra.yaml: everything in Dir, commitlog_sync batch (every acknowledged write waits
// for its commit log fsync, like the other targets' durable settings), Paxos v2, and RackInferringSnitch, which
// orders replicas nearest first (the node itself), so a read at ONE is served by the node the client asked.
func (n CassandraNode) YAML() string {
	return fmt.Sprintf(`cluster_name: anykv
num_tokens: 1
initial_token: %[6]s
auto_bootstrap: false
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
data_file_directories: [%[1]s/data]
commitlog_directory: %[1]s/commitlog
saved_caches_directory: %[1]s/saved_caches
hints_directory: %[1]s/hints
cdc_raw_directory: %[1]s/cdc
commitlog_sync: batch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "%[5]s"
listen_address: %[2]s
rpc_address: %[2]s
storage_port: %[4]d
native_transport_port: %[3]d
start_native_transport: true
endpoint_snitch: RackInferringSnitch
paxos_variant: v2
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
concurrent_reads: 8
concurrent_writes: 8
disk_access_mode: standard
hinted_handoff_enabled: %[7]t
`, n.Dir, n.Addr, n.Native, n.Storage, n.Seed, n.Token, !n.NoHints) + timeouts(n.Timeout)
}

func timeouts(d string) string {
	if d == "" {
		return ""
	}
	return "write_request_timeout: " + d + "\ncas_contention_timeout: " + d + "\n"
}

// Command writes the node's cassandra.yaml and returns the program and arguments that run it in the foreground
// (java, or setpriv in front of it as root: the JVM would mlockall its heap with CAP_IPC_LOCK, and a local
// server must not pin memory, so the capability is dropped for it and its children).
func (n CassandraNode) Command(java, lib string) (string, []string, error) {
	conf := filepath.Join(n.Dir, "cassandra.yaml")
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(conf, []byte(n.YAML()), 0o644); err != nil {
		return "", nil, err
	}
	// No JMX: -Dcassandra.jmx.local.port (0 picked a random port) opened it on 127.0.0.1 without authentication,
	// where any user of the machine could load native code into the node (DiagnosticCommand's JVMTI.agent_load).
	// Neither the bench nor anykv cluster uses nodetool.
	// ring_delay_ms bounds the startup shadow round: a restarted non-seed waits 2× it for a seed's gossip ack
	// and gives up ("Unable to gossip with any peers"). Idle, the ack takes 0.2–0.7 s; on a loaded CI machine
	// 100 ms (1 s in practice) failed a restart, so 5 s. Nodes with auto_bootstrap false never sleep for it.
	args := append([]string{"-Xms" + n.Heap[0], "-Xmx" + n.Heap[1], "-XX:+UseG1GC", "-Xss512k",
		"-Dcassandra.config=file://" + conf, "-Dcassandra-foreground=yes",
		"-Dcassandra.ring_delay_ms=5000", "-Dcassandra.skip_wait_for_gossip_to_settle=0",
		"-Dcassandra.storagedir=" + n.Dir, "-Dcassandra.logdir=" + filepath.Join(n.Dir, "logs")}, javaOpens...)
	args = append(args, CassandraJVMOptions()...)
	args = append(args, "-cp", filepath.Join(lib, "*"), "org.apache.cassandra.service.CassandraDaemon")
	if os.Geteuid() == 0 {
		if sp, err := exec.LookPath("setpriv"); err == nil {
			return sp, append([]string{"--inh-caps=-ipc_lock", "--bounding-set=-ipc_lock", java}, args...), nil
		}
	}
	return java, args, nil
}

// CassandraJVMOptionsEnv names the environment variable whose JVM options (separated by spaces) every Cassandra
// node gets after anykv's own. scripts/test.sh sets it to start-up options (the C1 compiler only, no bytecode
// verification) that halve the tests' cluster start-ups on two cores; benchmarks should leave it unset, as those
// options also slow the node's steady state.
const CassandraJVMOptionsEnv = "ANYKV_CASSANDRA_JVM_OPTS"

// CassandraJVMOptions returns the options of CassandraJVMOptionsEnv, none when it is unset.
func CassandraJVMOptions() []string { return strings.Fields(os.Getenv(CassandraJVMOptionsEnv)) }

// javaOpens are the module flags Cassandra's own launcher (conf/jvm17-server.options) gives Java 17.
var javaOpens = []string{
	"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
	"--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
	"--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-exports", "java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
	"--add-exports", "java.rmi/sun.rmi.registry=ALL-UNNAMED",
	"--add-exports", "java.rmi/sun.rmi.server=ALL-UNNAMED",
	"--add-exports", "java.sql/java.sql=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang.module=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.loader=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.reflect=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.math=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.module=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.util.jar=ALL-UNNAMED",
	"--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
	"--add-opens", "java.base/java.io=ALL-UNNAMED",
	"--add-opens", "java.base/java.nio=ALL-UNNAMED",
	"--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang=ALL-UNNAMED",
	"--add-opens", "java.base/java.util=ALL-UNNAMED",
	"--add-opens", "java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-opens", "java.base/java.util.concurrent.atomic=ALL-UNNAMED",
	"--add-opens", "java.base/java.net=ALL-UNNAMED",
}

// upCassandra starts n Cassandra nodes on 127.0.0.1, 127.0.0.2, ... (loopback aliases: Linux routes all of
// 127/8 to lo), each with the same ports and one evenly spaced token, node 1 the seed; node 1 first (the others
// need a seed to gossip with), then the rest together. It waits until every node sees every other one up and
// ready in its gossip. A node whose port another process took before it bound it exits: the cluster is then
// started again on new ports.
func upCassandra(n int, dir string, noHints bool) (*State, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("java %w: install Debian package openjdk-17-jre-headless", ErrNotInstalled)
	}
	lib, err := CassandraJars(context.Background())
	if err != nil {
		return nil, err
	}
	return retryOnTakenPort(dir, func() (*State, error) { return upCassandraOnce(java, lib, n, dir, noHints) })
}

// upCassandraOnce is one attempt of upCassandra, on ports picked now.
func upCassandraOnce(java, lib string, n int, dir string, noHints bool) (*State, error) {
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = "127.0.0." + strconv.Itoa(i+1)
	}
	ports, err := commonFreePorts(hosts, 2)
	if err != nil {
		return nil, err
	}
	native, storage := ports[0], ports[1]
	st := &State{Engine: "cassandra", Bin: java}
	var addrs []string
	for i, h := range hosts {
		name, data, err := memberDir(dir, i)
		if err != nil {
			return st, err
		}
		node := CassandraNode{Dir: data, Addr: h, Native: native, Storage: storage,
			Seed: fmt.Sprintf("%s:%d", hosts[0], storage), Token: token(i, n), Heap: [2]string{"256m", "512m"}, Timeout: "2000ms",
			NoHints: noHints}
		bin, args, err := node.Command(java, lib)
		if err != nil {
			return st, err
		}
		st.Bin = bin
		addr := net.JoinHostPort(h, strconv.Itoa(native))
		log := filepath.Join(dir, name+".log")
		st.Members = append(st.Members, Member{Name: name, Addr: addr, Args: args, Log: log})
		addrs = append(addrs, addr)
	}
	for i := range st.Members {
		m := &st.Members[i]
		if m.Pid, m.Start, err = spawn(st.Bin, m.Args, m.Log); err != nil {
			return st, err
		}
		if i == 0 { // the seed first, alone: once it answers CQL the others have someone to gossip with
			if err := waitCassandra(st, []int{0}, 1, 120*time.Second); err != nil {
				return st, err
			}
		}
	}
	st.URL = "cassandra://" + strings.Join(addrs, ",") + "/anykv"
	// Each member answers CQL, lists the others as peers, and every member gossips the same state of it, ready:
	// a cluster handed over before gossip converges still routes around a member the others think not ready.
	deadline := time.Now().Add(120 * time.Second)
	for i := range st.Members {
		if err := waitRejoined(st, i, time.Until(deadline)); err != nil {
			return st, err
		}
	}
	return st, nil
}

// token is node i's token of n: the Murmur3 range split evenly.
func token(i, n int) string {
	step := new(big.Int).Div(new(big.Int).Lsh(big.NewInt(1), 64), big.NewInt(int64(n)))
	t := new(big.Int).Add(new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 63)), new(big.Int).Mul(step, big.NewInt(int64(i))))
	return t.String()
}

// commonFreePorts returns k ports free on every one of hosts (each node of a Cassandra cluster uses the same).
func commonFreePorts(hosts []string, k int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < k; tries++ {
		if tries == 100 {
			return nil, errors.New("no port free on every loopback address")
		}
		first, err := net.Listen("tcp", net.JoinHostPort(hosts[0], "0"))
		if err != nil {
			return nil, err
		}
		ls = append(ls, first)
		port := first.Addr().(*net.TCPAddr).Port
		ok := true
		for _, h := range hosts[1:] {
			l, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(port)))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, l)
		}
		if ok {
			ports = append(ports, port)
		}
	}
	return ports, nil
}

// waitCassandra waits until each member in idx answers CQL from its own process (not another one that took its
// port: the seed, checked alone, would pass on any Cassandra) and lists the other members among the first n of
// st in system.peers (gossip has them in the ring, status normal): what nodetool status shows as UN.
func waitCassandra(st *State, idx []int, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, i := range idx {
		m := st.Members[i]
		if err := waitOwnListener(m, time.Until(deadline)); err != nil {
			return fmt.Errorf("cassandra node %w", err)
		}
		var err error
		for {
			if !alive(m.Pid) {
				return fmt.Errorf("cassandra node %w", exitedDuringStart(m))
			}
			if err = peersSeen(st, i, n); err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("cassandra node %s not ready after %s: %v", m.Name, timeout, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

// peersSeen connects to member i alone and checks that its system.peers lists the other members among the first n.
func peersSeen(st *State, i, n int) error {
	seen := map[string]bool{}
	err := withSession(st, i, func(s *gocql.Session) error {
		iter := s.Query("SELECT peer FROM system.peers").Iter()
		var peer net.IP
		for iter.Scan(&peer) {
			seen[peer.String()] = true
		}
		return iter.Close()
	})
	if err != nil {
		return err
	}
	for j, m := range st.Members[:n] {
		if h, _, _ := net.SplitHostPort(m.Addr); j != i && !seen[h] {
			return fmt.Errorf("%s does not list %s among its peers yet", st.Members[i].Name, m.Name)
		}
	}
	return nil
}

// logTail is the last n lines of the file at path.
func logTail(path string, n int) string {
	b, _ := os.ReadFile(path)
	return lastLines(string(b), n)
}

// waitRejoined waits until (re)started member i has joined: it answers CQL (waitCassandra), and every other
// member still running has this incarnation in its gossip state (gossipSeen). A node answering CQL may not yet
// be known to its peers as restarted; until they gossip with it they do not send it writes or hints.
func waitRejoined(st *State, i int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	if err := waitCassandra(st, []int{i}, len(st.Members), timeout); err != nil {
		return err
	}
	for {
		err := gossipSeen(st, i)
		if err == nil {
			return nil
		}
		if !alive(st.Members[i].Pid) {
			return fmt.Errorf("cassandra node %s exited after its restart; log %s:\n%s", st.Members[i].Name, st.Members[i].Log, logTail(st.Members[i].Log, 20))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cassandra node %s not rejoined after %s: %v", st.Members[i].Name, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// gossipSeen checks that member i and every other running member agree, in system_views.gossip_info, on member
// i's gossip generation (a node picks a new one at each start, so the peers have heard from this incarnation),
// with its status NORMAL and its CQL port ready.
func gossipSeen(st *State, i int) error {
	host, _, _ := net.SplitHostPort(st.Members[i].Addr)
	self, err := gossipOf(st, i, host)
	if err != nil {
		return err
	}
	for j, m := range st.Members {
		if j == i || !alive(m.Pid) {
			continue
		}
		g, err := gossipOf(st, j, host)
		if err != nil {
			return err
		}
		if g != self {
			return fmt.Errorf("%s sees %s as %+v, it is %+v", m.Name, st.Members[i].Name, g, self)
		}
	}
	if !strings.HasPrefix(self.status, "NORMAL") || self.ready != "true" {
		return fmt.Errorf("%s gossips status %q, rpc_ready %q", st.Members[i].Name, self.status, self.ready)
	}
	return nil
}

// gossipState is one endpoint's gossip as a node knows it.
type gossipState struct {
	generation int
	status     string
	ready      string // "true" once its CQL port serves (gossip_info's columns are text)
}

// gossipOf returns what member j's gossip says of the node at address host.
func gossipOf(st *State, j int, host string) (gossipState, error) {
	var g gossipState
	found := false
	err := withSession(st, j, func(s *gocql.Session) error {
		iter := s.Query("SELECT address, generation, status_with_port, rpc_ready FROM system_views.gossip_info").Iter()
		var addr net.IP
		var r gossipState
		for iter.Scan(&addr, &r.generation, &r.status, &r.ready) {
			if addr.String() == host {
				g, found = r, true
			}
		}
		return iter.Close()
	})
	if err == nil && !found {
		err = errors.New("not in its gossip")
	}
	if err != nil {
		return g, fmt.Errorf("%s's gossip of %s: %w", st.Members[j].Name, host, err)
	}
	return g, nil
}

// withSession runs f on a session connected to member i alone.
func withSession(st *State, i int, f func(*gocql.Session) error) error {
	host, port, _ := net.SplitHostPort(st.Members[i].Addr)
	c := gocql.NewCluster(host)
	c.Port, _ = strconv.Atoi(port)
	c.HostFilter = gocql.WhiteListHostFilter(host)
	c.DisableInitialHostLookup = true
	c.Timeout, c.ConnectTimeout = 2*time.Second, 2*time.Second
	c.Logger = gocql.NewLogger(gocql.LogLevelNone)
	s, err := c.CreateSession()
	if err != nil {
		return err
	}
	defer s.Close()
	return f(s)
}
