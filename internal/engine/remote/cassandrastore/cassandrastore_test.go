package cassandrastore

import (
	"fmt"
	"sync/atomic"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/remote/remotetest"
)

var parts atomic.Int64

func TestCassandra(t *testing.T) {
	server := remotetest.Start(t, "cassandra")
	fresh := func(*testing.T) string { return fmt.Sprintf("%s/anykv_test?partition=t%d", server, parts.Add(1)) }
	remotetest.Suite(t, fresh, Open, engine.CanScan|engine.CanTables|engine.CanSweep)
}
