package pebblestore

import (
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
)

// TestFailedWALSyncIsUnknownOutcome: a group whose WAL sync fails is in the memtable already, so it may yet be
// read and flushed, or lost with the process: its requests are told the outcome is unknown, never that nothing
// was applied (EXEC would say "discarded"), and the store refuses further writes.
func TestFailedWALSyncIsUnknownOutcome(t *testing.T) {
	gfs := newGateFS(vfs.NewMem())
	s := open(t, gfs, SyncAlways)
	mustApply(t, s, set("t", "a", "old"))
	fail := errors.New("injected: input/output error")
	gfs.fail.Store(&fail)
	_, err := s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", "a", "new")}})
	t.Logf("apply: %v", err)
	if !errors.Is(err, engine.ErrUnknownOutcome) {
		t.Errorf("the group whose WAL sync failed: %v, want an error of unknown outcome", err)
	}
	_, err = s.Apply(ctx, &engine.Batch{Now: now, Muts: []engine.Mutation{set("t", "b", "1")}})
	t.Logf("next apply: %v", err)
	if err == nil || errors.Is(err, engine.ErrUnknownOutcome) {
		t.Errorf("a write after the failed sync: %v, want a refusal (not applied)", err)
	}
}
