package redisstore_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/remote/redisstore"
	"anykv/internal/engine/remote/remotetest"
)

var prefixes atomic.Int64

func TestRedis(t *testing.T) {
	server := "redis://" + strings.TrimPrefix(remotetest.Start(t, "redis-nopersist"), "resp://")
	fresh := func(*testing.T) string { return fmt.Sprintf("%s/0?prefix=t%d:", server, prefixes.Add(1)) }
	remotetest.Suite(t, fresh, redisstore.Open, engine.CanScan|engine.CanTables|engine.CanSweep)
}
