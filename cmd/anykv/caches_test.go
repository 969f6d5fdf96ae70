package main

import (
	"strconv"
	"strings"
	"testing"

	"anykv/internal/engine/remote/remotetest"
	"anykv/internal/servertest"
)

// infoField reads one field of INFO's persistence section (where the engine's and the caches' figures are);
// -1 when absent.
func infoField(t *testing.T, addr, name string) int64 {
	t.Helper()
	info, err := client(t, addr).Info(ctx, "persistence").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

// readTwice sets k, reads it three times and asks DBSIZE twice, checking the answers.
func readTwice(t *testing.T, addr string) {
	t.Helper()
	c := client(t, addr)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
			t.Fatalf("GET = %q, %v", v, err)
		}
	}
	for i := 0; i < 2; i++ {
		if n, err := c.DBSize(ctx).Result(); err != nil || n != 1 {
			t.Fatalf("DBSIZE = %d, %v", n, err)
		}
	}
}

// TestCachesOnByDefaultOffOverADatastore: the embedded engine serves repeated reads and counts from the caches;
// over a datastore URL they are off (another front end may write it) unless --exclusive; INFO shows which.
func TestCachesOnByDefaultOffOverADatastore(t *testing.T) {
	local := servertest.Start(t, servertest.Options{})
	readTwice(t, local.RESP)
	// A SET of a key the cache never held is not written through: the first GET fills, the other two hit.
	if h := infoField(t, local.RESP, "engine_cache_hits"); h < 2 {
		t.Fatalf("pebble: %d item cache hits, want 2 (three GETs after a SET: a miss that fills, two hits)", h)
	}
	if h := infoField(t, local.RESP, "engine_query_cache_hits"); h != 1 {
		t.Fatalf("pebble: %d query cache hits, want 1 (the second DBSIZE)", h)
	}
	if err := client(t, local.RESP).Set(ctx, "k2", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := client(t, local.RESP).DBSize(ctx).Result(); err != nil || n != 2 {
		t.Fatalf("DBSIZE after a write = %d, %v", n, err)
	}

	url := "redis" + strings.TrimPrefix(remotetest.Start(t, "redis-nopersist"), "resp") // redis://127.0.0.1:port
	shared := servertest.Start(t, servertest.Options{Engine: url + "/0?prefix=shared:", Args: []string{"--log-level", "info"}})
	readTwice(t, shared.RESP)
	if h := infoField(t, shared.RESP, "engine_cache_hits"); h != -1 {
		t.Fatalf("over a shared datastore the item cache answered (%d hits)", h)
	}
	if h := infoField(t, shared.RESP, "engine_query_cache_fills"); h != 0 {
		t.Fatalf("over a shared datastore the query cache stored %d answers", h)
	}
	if !strings.Contains(shared.Output(), "caches are off over a datastore URL") {
		t.Fatalf("the server did not say the caches are off:\n%s", shared.Output())
	}

	sole := servertest.Start(t, servertest.Options{Engine: url + "/0?prefix=sole:", Args: []string{"--exclusive"}})
	readTwice(t, sole.RESP)
	if h := infoField(t, sole.RESP, "engine_cache_hits"); h < 2 {
		t.Fatalf("--exclusive: %d item cache hits, want 2", h)
	}
	if h := infoField(t, sole.RESP, "engine_query_cache_hits"); h != 1 {
		t.Fatalf("--exclusive: %d query cache hits, want 1", h)
	}
}
