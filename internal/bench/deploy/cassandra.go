package deploy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"anykv/internal/cluster"
)

// CassandraVersion is the Apache Cassandra release the bench and the tests run, from Maven Central's jars.
const CassandraVersion = cluster.CassandraVersion

func init() {
	register(spec{name: "cassandra", pkg: "openjdk-17-jre-headless maven",
		summary: "Apache Cassandra " + CassandraVersion + " single node (Maven Central jars on the JDK), commitlog_sync batch",
		start:   startCassandra})
}

// CassandraJars returns the directory of Cassandra's jars, fetched with Maven the first time
// (cluster.CassandraJars); without Maven it is a *NotInstalledError.
func CassandraJars(ctx context.Context) (string, error) {
	lib, err := cluster.CassandraJars(ctx)
	if errors.Is(err, cluster.ErrNotInstalled) {
		return "", notInstalled("cassandra", "maven")
	}
	return lib, err
}

func startCassandra(ctx context.Context, o Options, dir string) (*Server, error) {
	java, ok := findBinary("java")
	if !ok {
		return nil, notInstalled("cassandra", "openjdk-17-jre-headless")
	}
	lib, err := CassandraJars(ctx)
	if err != nil {
		return nil, err
	}
	native, err := freePort()
	if err != nil {
		return nil, err
	}
	storage, err := freePort()
	if err != nil {
		return nil, err
	}
	// One node, its own seed; heap 512-768 MiB. Writes and lightweight transactions get 5 s (Cassandra's defaults:
	// 2 s and 1 s): on a 2-core machine shared with the load, a CAS once timed out ("received 0 of 1 required
	// responses") under the tests of other packages.
	node := cluster.CassandraNode{Dir: dir, Addr: "127.0.0.1", Native: native, Storage: storage,
		Seed: fmt.Sprintf("127.0.0.1:%d", storage), Token: "0", Heap: [2]string{"512m", "768m"}, Timeout: "5000ms"}
	bin, args, err := node.Command(java, lib)
	if err != nil {
		return nil, err
	}
	p, err := startProc(bin, args, dir, logPath(dir, "cassandra"), nil, o.CPUs)
	if err != nil {
		return nil, err
	}
	// A JVM on a busy 2-core machine may need more than the usual minute.
	url := fmt.Sprintf("cassandra://127.0.0.1:%d", native)
	if err := waitReady(ctx, p, url, max(o.ReadyTimeout, 120*time.Second)); err != nil {
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	return &Server{URL: url, Pid: p.cmd.Process.Pid, Version: "Apache Cassandra " + CassandraVersion,
		Settings: append([]string{
			"single node, commitlog_sync: batch (a write is acknowledged after its commit log fsync)",
			"paxos_variant: v2 (lightweight transactions), heap 512-768 MiB, no memory locking (CAP_IPC_LOCK dropped)",
		}, extraJVMOptions()...),
		stop: func() error { return p.stop(30 * time.Second) }}, nil
}

// extraJVMOptions is the settings line that names the JVM options cluster.CassandraJVMOptionsEnv added, if any:
// a table of figures must say when its Cassandra ran with start-up options that slow it.
func extraJVMOptions() []string {
	opts := cluster.CassandraJVMOptions()
	if len(opts) == 0 {
		return nil
	}
	return []string{"extra JVM options from " + cluster.CassandraJVMOptionsEnv + ": " + strings.Join(opts, " ")}
}
