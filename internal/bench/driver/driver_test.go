package driver_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"anykv/internal/bench/deploy"
	"anykv/internal/bench/driver"
)

// deployed starts the named server for the test (failing, not skipping,
// when it is not installed: CI installs every package) and opens a driver.
func deployed(t *testing.T, name string) driver.Driver {
	t.Helper()
	base, err := deploy.NewBaseDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, err := deploy.Start(ctx, name, deploy.Options{BaseDir: base})
	var ni *deploy.NotInstalledError
	if errors.As(err, &ni) {
		t.Fatalf("%s: %v (CI installs scripts/test-deps.txt)", name, err)
	}
	if err != nil {
		t.Fatalf("deploy %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop %s: %v", name, err)
		}
	})
	d, err := driver.Open(ctx, s.URL, driver.Options{Conns: 8, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("open %s: %v", s.URL, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// conformance checks the driver contract against a live server.
func conformance(t *testing.T, d driver.Driver, wantCaps driver.Caps) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if d.Caps() != wantCaps {
		t.Errorf("caps %v, want %v", d.Caps(), wantCaps)
	}
	if d.Settings() == "" {
		t.Error("empty settings")
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(d.Noop(ctx))
	if _, ok, err := d.Get(ctx, "t1", "absent"); err != nil || ok {
		t.Fatalf("get absent: ok=%v err=%v", ok, err)
	}
	must(d.Put(ctx, "t1", "k1", []byte("v1")))
	must(d.Put(ctx, "t2", "k1", []byte("other table")))
	if v, ok, err := d.Get(ctx, "t1", "k1"); err != nil || !ok || string(v) != "v1" {
		t.Fatalf("get k1: %q %v %v", v, ok, err)
	}
	must(d.Put(ctx, "t1", "k1", []byte("v2")))
	if v, _, _ := d.Get(ctx, "t1", "k1"); string(v) != "v2" {
		t.Fatalf("overwrite: got %q", v)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	must(d.Put(ctx, "t1", "big", big))
	if v, _, err := d.Get(ctx, "t1", "big"); err != nil || !bytes.Equal(v, big) {
		t.Fatalf("64 KiB value: %d bytes, %v", len(v), err)
	}
	if ok, err := d.Delete(ctx, "t1", "big"); err != nil || !ok {
		t.Fatalf("delete existing: %v %v", ok, err)
	}
	if ok, err := d.Delete(ctx, "t1", "big"); err != nil || ok {
		t.Fatalf("delete absent: %v %v", ok, err)
	}
	if _, ok, _ := d.Get(ctx, "t1", "big"); ok {
		t.Fatal("deleted key still readable")
	}
	if v, _, _ := d.Get(ctx, "t2", "k1"); string(v) != "other table" {
		t.Fatalf("tables not separate: %q", v)
	}

	// Concurrent writers on distinct keys.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				if err := d.Put(ctx, "scan", fmt.Sprintf("p%d-%02d", g, i), []byte("x")); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, k := range []string{"q*1", "q*2", "qz", "q?"} {
		must(d.Put(ctx, "scan", k, []byte("x")))
	}
	must(d.Put(ctx, "scan2", "p0-00", []byte("x")))

	if wantCaps.Has(driver.CapIncr) {
		c := d.(driver.Counter)
		for want := int64(1); want <= 2; want++ {
			if n, err := c.Incr(ctx, "ctr", "n"); err != nil || n != want {
				t.Fatalf("incr %d: %d, %v", want, n, err)
			}
		}
		if v, ok, err := d.Get(ctx, "ctr", "n"); err != nil || !ok || string(v) != "2" {
			t.Fatalf("counter after two increments: %q %v %v", v, ok, err)
		}
	}

	if !wantCaps.Has(driver.CapScan) {
		if _, err := d.Scan(ctx, "scan", "", 0); !errors.Is(err, driver.ErrUnsupported) {
			t.Errorf("scan on a driver without CapScan: %v", err)
		}
		if _, err := d.Count(ctx, "scan", ""); !errors.Is(err, driver.ErrUnsupported) {
			t.Errorf("count on a driver without CapCount: %v", err)
		}
		return
	}
	all, err := d.Scan(ctx, "scan", "", 0)
	must(err)
	if len(all) != 84 {
		t.Errorf("scan all: %d keys, want 84", len(all))
	}
	p3, err := d.Scan(ctx, "scan", "p3-", 0)
	must(err)
	sort.Strings(p3)
	if len(p3) != 10 || p3[0] != "p3-00" || p3[9] != "p3-09" {
		t.Errorf("scan p3-: %v", p3)
	}
	lim, err := d.Scan(ctx, "scan", "p", 7)
	must(err)
	if len(lim) != 7 {
		t.Errorf("scan limit 7: %d keys", len(lim))
	}
	for _, k := range lim {
		if !strings.HasPrefix(k, "p") {
			t.Errorf("scan p returned %q", k)
		}
	}
	glob, err := d.Scan(ctx, "scan", "q*", 0)
	must(err)
	sort.Strings(glob)
	if strings.Join(glob, ",") != "q*1,q*2" {
		t.Errorf("scan q*: %v (prefix must be literal)", glob)
	}
	if n, err := d.Count(ctx, "scan", "p"); err != nil || n != 80 {
		t.Errorf("count p: %d %v", n, err)
	}
	if n, err := d.Count(ctx, "scan", ""); err != nil || n != 84 {
		t.Errorf("count all: %d %v", n, err)
	}
	if n, err := d.Count(ctx, "nothing-here", ""); err != nil || n != 0 {
		t.Errorf("count empty table: %d %v", n, err)
	}
}

func TestRedis(t *testing.T) {
	t.Parallel()
	conformance(t, deployed(t, "redis"), driver.CapScan|driver.CapCount|driver.CapIncr)
}

func TestMemcached(t *testing.T) {
	t.Parallel()
	conformance(t, deployed(t, "memcached"), 0)
}

func TestEtcd(t *testing.T) {
	t.Parallel()
	conformance(t, deployed(t, "etcd"), driver.CapScan|driver.CapCount|driver.CapIncr)
}

func TestPostgres(t *testing.T) {
	t.Parallel()
	conformance(t, deployed(t, "postgres"), driver.CapScan|driver.CapCount|driver.CapIncr)
}

func TestMariaDB(t *testing.T) {
	t.Parallel()
	conformance(t, deployed(t, "mariadb"), driver.CapScan|driver.CapCount)
}

func TestCassandra(t *testing.T) {
	t.Parallel()
	conformance(t, deployed(t, "cassandra"), 0)
}

func TestOpenRejectsBadURLs(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{"ftp://x:1", "resp://", "://", "postgres://127.0.0.1:1/db?table=bad;name"} {
		if d, err := driver.Open(ctx, u, driver.Options{Timeout: time.Second}); err == nil {
			d.Close()
			t.Errorf("Open(%q) succeeded", u)
		}
	}
	// Nothing listens on port 1: Open must fail, not hang.
	start := time.Now()
	if d, err := driver.Open(ctx, "resp://127.0.0.1:1", driver.Options{Timeout: 2 * time.Second}); err == nil {
		d.Close()
		t.Error("open on a closed port succeeded")
	}
	if time.Since(start) > 10*time.Second {
		t.Error("open on a closed port took too long")
	}
}

// TestRESPSkipsAFrontEndThatDied: with two addresses, requests alternate; once one server is gone, the request
// that met it fails and the following ones go to the other.
func TestRESPSkipsAFrontEndThatDied(t *testing.T) {
	base := t.TempDir()
	ctx := context.Background()
	var urls []string
	var servers []*deploy.Server
	for range 2 {
		s, err := deploy.Start(ctx, "redis-nopersist", deploy.Options{BaseDir: base})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Stop() })
		servers = append(servers, s)
		urls = append(urls, strings.TrimPrefix(s.URL, "resp://"))
	}
	d, err := driver.Open(ctx, "resp://"+strings.Join(urls, ","), driver.Options{Conns: 2, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := servers[1].Stop(); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for i := range 10 {
		if err := d.Put(ctx, "t", fmt.Sprint(i), []byte("v")); err != nil {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d of 10 requests failed after one of two servers stopped, want 1", failed)
	}
}
