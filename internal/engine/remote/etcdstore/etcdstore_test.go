package etcdstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/remote/etcdstore"
	"anykv/internal/engine/remote/remotetest"
)

var prefixes atomic.Int64

func open(t *testing.T, url string) engine.Engine {
	t.Helper()
	s, err := etcdstore.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// freshPrefix returns the server's URL with a key prefix no other test uses.
func freshPrefix(server string) string {
	return fmt.Sprintf("%s?prefix=t%d/", server, prefixes.Add(1))
}

func TestEtcd(t *testing.T) {
	server := remotetest.Start(t, "etcd")
	t.Run("Conformance", func(t *testing.T) {
		enginetest.Run(t, func(t *testing.T) engine.Engine { return open(t, freshPrefix(server)) }, engine.CanScan|engine.CanTables|engine.CanSweep)
	})
	t.Run("TwoFrontEnds", func(t *testing.T) {
		url := freshPrefix(server)
		remotetest.RaceFrontEnds(t, func(t *testing.T) engine.Engine { return open(t, url) })
	})
}
