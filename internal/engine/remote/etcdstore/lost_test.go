package etcdstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
	"anykv/internal/engine/remote/etcdstore"
	"anykv/internal/engine/remote/remotetest"
)

// TestLostCommitAnswerIsUnknown: the connection drops after the commit's Txn was sent to etcd, before its answer
// came back: the client gets ErrUnknownOutcome, and the APPEND was applied at most once (not resent by the driver
// or retried). Whether it was applied depends on whether etcd had taken the request before the connection closed
// (the proxy cuts at the first bytes etcd sends after it, which may be an HTTP/2 frame of the connection's own).
func TestLostCommitAnswerIsUnknown(t *testing.T) {
	server := remotetest.Start(t, "etcd")
	u, err := neturl.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	ran := make(chan struct{}, 1)
	u.Host = remotetest.Proxy(t, u.Host, remotetest.CutAnswer(func(req []byte) bool {
		return bytes.Contains(req, []byte("UNIQUE")) && armed.CompareAndSwap(true, false)
	}, ran))
	u.RawQuery = fmt.Sprintf("prefix=t%d/", prefixes.Add(1))
	s := remotetest.Open(t, etcdstore.Open, u.String())
	defer s.Close()
	ctx := context.Background()
	app := func(v string) error {
		_, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpAppend, Table: "t",
			Key: []byte("k"), Value: []byte(v), Edit: engine.EditArgs{Create: true}}}})
		return err
	}
	if err := app("x"); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	err = app("UNIQUE")
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatalf("the commit never reached the proxy armed to cut it (Apply: %v)", err)
	}
	if !errors.Is(err, remote.ErrUnknownOutcome) {
		t.Errorf("a commit whose answer was lost answered %v, want ErrUnknownOutcome", err)
	}
	var it engine.Item
	for range 50 { // the client reconnects
		if it, err = s.Get(ctx, "t", []byte("k"), 1); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || string(it.Value) != "x" && string(it.Value) != "xUNIQUE" {
		t.Fatalf("k = %q (%v), want x or xUNIQUE: applied at most once", it.Value, err)
	}
}
