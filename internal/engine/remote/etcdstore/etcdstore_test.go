package etcdstore_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/remote/etcdstore"
	"anykv/internal/engine/remote/remotetest"
)

var prefixes atomic.Int64

func TestEtcd(t *testing.T) {
	server := remotetest.Start(t, "etcd")
	fresh := func(*testing.T) string { return fmt.Sprintf("%s?prefix=t%d/", server, prefixes.Add(1)) }
	remotetest.Suite(t, fresh, etcdstore.Open, engine.CanScan|engine.CanTables|engine.CanSweep)
}
