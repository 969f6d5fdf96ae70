package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// CassandraVersion is the Apache Cassandra release the bench and the tests run, from Maven Central's jars.
const CassandraVersion = "5.0.4"

func init() {
	register(spec{name: "cassandra", pkg: "openjdk-17-jre-headless maven",
		summary: "Apache Cassandra " + CassandraVersion + " single node (Maven Central jars on the JDK), commitlog_sync batch",
		start:   startCassandra})
}

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
	mvn, ok := findBinary("mvn")
	if !ok {
		return "", notInstalled("cassandra", "maven")
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
	if err := runTool(ctx, 10*time.Minute, mvn, []string{"-q", "-B", "dependency:copy-dependencies",
		"-DincludeScope=runtime", "-DoutputDirectory=" + filepath.Join(tmp, "lib")}, tmp, filepath.Join(tmp, "mvn.log"), nil, nil); err != nil {
		return "", fmt.Errorf("cassandra: fetching jars: %w", err)
	}
	if err := os.Rename(filepath.Join(tmp, "lib"), lib); err != nil && !os.IsExist(err) {
		if _, serr := os.Stat(lib); serr != nil { // not a concurrent fetch that won
			return "", err
		}
	}
	return lib, nil
}

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

// cassandraYAML is a minimal single-node configuration: everything on 127.0.0.1 and in dir. commitlog_sync
// batch makes every acknowledged write wait for its commit log fsync, like the other targets' durable settings.
func cassandraYAML(dir string, native, storage int) string {
	return fmt.Sprintf(`cluster_name: anykv
num_tokens: 1
initial_token: 0
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
      - seeds: "127.0.0.1:%[3]d"
listen_address: 127.0.0.1
rpc_address: 127.0.0.1
storage_port: %[3]d
native_transport_port: %[2]d
start_native_transport: true
endpoint_snitch: SimpleSnitch
paxos_variant: v2
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
concurrent_reads: 8
concurrent_writes: 8
disk_access_mode: standard
`, dir, native, storage)
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
	conf := filepath.Join(dir, "cassandra.yaml")
	if err := os.WriteFile(conf, []byte(cassandraYAML(dir, native, storage)), 0o644); err != nil {
		return nil, err
	}
	args := append([]string{"-Xms512m", "-Xmx768m", "-XX:+UseG1GC", "-Xss512k",
		"-Dcassandra.config=file://" + conf, "-Dcassandra-foreground=yes",
		"-Dcassandra.ring_delay_ms=100", "-Dcassandra.skip_wait_for_gossip_to_settle=0",
		"-Dcassandra.storagedir=" + dir, "-Dcassandra.logdir=" + filepath.Join(dir, "logs"),
		"-Dcassandra.jmx.local.port=0"}, javaOpens...)
	args = append(args, "-cp", filepath.Join(lib, "*"), "org.apache.cassandra.service.CassandraDaemon")
	bin := java
	if os.Geteuid() == 0 {
		// As root the JVM would mlockall its heap (CAP_IPC_LOCK); a test server must not pin memory, so the
		// capability is dropped for it and its children.
		if sp, ok := findBinary("setpriv"); ok {
			args = append([]string{"--inh-caps=-ipc_lock", "--bounding-set=-ipc_lock", java}, args...)
			bin = sp
		}
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
		Settings: []string{
			"single node, commitlog_sync: batch (a write is acknowledged after its commit log fsync)",
			"paxos_variant: v2 (lightweight transactions), heap 512-768 MiB, no memory locking (CAP_IPC_LOCK dropped)",
		},
		stop: func() error { return p.stop(30 * time.Second) }}, nil
}
