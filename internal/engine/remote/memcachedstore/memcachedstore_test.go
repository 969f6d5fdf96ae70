package memcachedstore_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/remote/memcachedstore"
	"anykv/internal/engine/remote/remotetest"
)

var prefixes atomic.Int64

func TestMemcached(t *testing.T) {
	server := "memcached://" + strings.TrimPrefix(remotetest.Start(t, "memcached"), "memcache://")
	fresh := func(*testing.T) string { return fmt.Sprintf("%s?prefix=t%d:", server, prefixes.Add(1)) }
	remotetest.Suite(t, fresh, memcachedstore.Open, engine.SingleItem)
}
