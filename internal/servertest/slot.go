package servertest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// CassandraSlot lets one test at a time, across the test binaries `go test ./...` runs in parallel, hold a
// 3-node Cassandra cluster: three JVMs form in 20-40 s on two idle cores, but three such clusters forming at
// once (cmd/anykv, internal/cluster and internal/bench/deploy each start one) starved each other past their
// two-minute limit in CI. It blocks until the slot is free (an exclusive flock on a file in the temp
// directory) and frees it when the test ends; a process that dies frees it too.
func CassandraSlot(t testing.TB) {
	t.Helper()
	path := filepath.Join(os.TempDir(), "anykv-test-cassandra-cluster.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatalf("cassandra slot: %v", err)
	}
	began := time.Now()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("cassandra slot: %v", err)
	}
	if waited := time.Since(began); waited > time.Second {
		t.Logf("waited %v for another test's Cassandra cluster to go", waited.Round(time.Second))
	}
	t.Cleanup(func() { f.Close() }) // closing the descriptor releases the lock
}
