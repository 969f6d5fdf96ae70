package cassandrastore

import (
	"fmt"
	"sync/atomic"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/remote/remotetest"
)

var parts atomic.Int64

func open(t *testing.T, url string) *Store { return remotetest.Open(t, Open, url) }

// TestCassandra starts one Cassandra node for the package and runs everything against it, each engine in a
// partition of its own.
func TestCassandra(t *testing.T) {
	server := remotetest.Start(t, "cassandra")
	fresh := func(*testing.T) string { return fmt.Sprintf("%s/anykv_test?partition=t%d", server, parts.Add(1)) }
	remotetest.Suite(t, fresh, Open, engine.CanScan|engine.CanTables|engine.CanSweep)
	t.Run("CommitOutcomeUnknown", func(t *testing.T) { testCommitOutcomeUnknown(t, fresh(t)) })
	t.Run("LargeBatches", func(t *testing.T) { testLargeBatches(t, fresh(t)) })
	t.Run("StaleReadConflicts", func(t *testing.T) { testStaleReadConflicts(t, fresh(t)) })
	t.Run("SlotsDoNotCollide", func(t *testing.T) { testSlotsDoNotCollide(t, fresh(t)) })
	t.Run("FlushAroundAdjacentPuts", func(t *testing.T) { testFlushAroundAdjacentPuts(t, fresh(t)) })
	slotted := func(*testing.T) string {
		return fmt.Sprintf("%s/anykv_test?partition=t%d&slots=4", server, parts.Add(1))
	}
	t.Run("Slots", func(t *testing.T) {
		remotetest.Suite(t, slotted, Open, engine.CanScan|engine.CanTables|engine.CanSweep)
		t.Run("CrossSlot", func(t *testing.T) { testCrossSlot(t, slotted(t)) })
		t.Run("CountKept", func(t *testing.T) { testSlotCountKept(t, server) })
	})
}
