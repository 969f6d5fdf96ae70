package servertest

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestCassandraSlotExcludes: while a test holds the slot, another holder (here a second open of the lock file,
// as another test binary would make) cannot take it, and once the test ends it can. TMPDIR points at a
// directory of this test's own, so the Cassandra tests of other packages running meanwhile do not interfere.
func TestCassandraSlotExcludes(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	path := filepath.Join(os.TempDir(), "anykv-test-cassandra-cluster.lock")
	try := func() error {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	t.Run("held", func(t *testing.T) {
		CassandraSlot(t)
		if err := try(); !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Fatalf("a second holder while the slot is held: %v, want EWOULDBLOCK", err)
		}
	})
	if err := try(); err != nil {
		t.Fatalf("the slot after its holder ended: %v", err)
	}
}
