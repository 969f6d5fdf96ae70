package deploy

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"anykv/internal/bench/driver"
	"anykv/internal/servertest"
)

// TestFrontEnds deploys anykv over a deployed datastore, with and without its caches: a value written through
// it is read back, the settings say which, and Stop leaves neither process listening.
func TestFrontEnds(t *testing.T) {
	t.Parallel()
	bin := servertest.Binary(t)
	for _, name := range []string{"anykv+redis", "anykv+redis+cache", "anykv+etcd", "anykv+postgres+cache", "anykv+postgres+cache+http", "anykv+mariadb", "anykv+cassandra", "anykv+memcached"} {
		t.Run(name, func(t *testing.T) {
			s, err := Start(context.Background(), name, Options{BaseDir: baseDir(t), AnykvBin: bin})
			if err != nil {
				if _, ok := err.(*NotInstalledError); ok && os.Getenv("CI") != "true" {
					t.Skip(err)
				}
				t.Fatalf("%s: %v", name, err)
			}
			d, err := driver.Open(context.Background(), s.URL, driver.Options{Conns: 2, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Put(context.Background(), "t", "k", []byte("through anykv")); err != nil {
				t.Fatal(err)
			}
			if v, ok, err := d.Get(context.Background(), "t", "k"); err != nil || !ok || string(v) != "through anykv" {
				t.Fatalf("get: %q %v %v", v, ok, err)
			}
			d.Close()
			settings := strings.Join(s.Settings, "; ")
			wantCache := strings.Contains(name, "+cache")
			if wantHTTP := strings.HasSuffix(name, "+http"); wantHTTP != strings.HasPrefix(s.URL, "http://") {
				t.Errorf("%s serves the bench at %s", name, s.URL)
			}
			if got := strings.Contains(settings, "caches on"); got != wantCache {
				t.Errorf("settings %q: caches on = %v, want %v", settings, got, wantCache)
			}
			if !strings.Contains(settings, "datastore: ") {
				t.Errorf("settings %q do not name the datastore", settings)
			}
			addr := addrOf(t, s.URL)
			if err := s.Stop(); err != nil {
				t.Errorf("stop: %v", err)
			}
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				t.Errorf("anykv still listening on %s after Stop", addr)
			}
		})
	}
}
