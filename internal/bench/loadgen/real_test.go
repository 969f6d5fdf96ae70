package loadgen

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"anykv/internal/bench/deploy"
)

var serverBinary = map[string]string{"redis-nopersist": "redis-server", "memcached": "memcached"}

// need fails the test when a server it runs is missing in CI and skips it
// elsewhere (scripts/test.sh installs them and sets ANYKV_BIN).
func need(t *testing.T, name string) {
	t.Helper()
	missing := ""
	if strings.HasPrefix(name, "anykv") {
		if os.Getenv("ANYKV_BIN") == "" {
			missing = "ANYKV_BIN is not set (scripts/test.sh sets it)"
		}
	} else if _, err := exec.LookPath(serverBinary[name]); err != nil {
		missing = err.Error()
	}
	switch {
	case missing == "":
	case os.Getenv("CI") != "":
		t.Fatalf("%s: %s", name, missing)
	default:
		t.Skipf("%s: %s", name, missing)
	}
}

// TestRealServers loads, writes and reads anykv (over RESP and memcached),
// redis and memcached and checks the counts against the servers' own.
func TestRealServers(t *testing.T) {
	const keys = 500
	for _, name := range []string{"anykv", "anykv-memcache", "redis-nopersist", "memcached"} {
		t.Run(name, func(t *testing.T) {
			need(t, name)
			base, err := deploy.NewBaseDir()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(base) })
			srv, err := deploy.Start(context.Background(), name, deploy.Options{BaseDir: base, AnykvBin: os.Getenv("ANYKV_BIN")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Stop() })
			scheme, addr, _ := strings.Cut(srv.URL, "://")
			p := RESP
			if scheme == "memcache" {
				p = Memcache
			}
			cfg := Config{Addr: addr, Proto: p, Conns: 4, Pipeline: 16, Sets: 1, Keys: keys, Prefix: "mix:",
				ValueSize: 100, Duration: 300 * time.Millisecond, Load: true, Seed: 1}
			run := func(what string) *Stats {
				st, err := Run(context.Background(), cfg)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				for _, k := range []Kind{st.Get, st.Set} {
					if k.Errs != 0 || k.Fails != 0 {
						t.Errorf("%s: %d errs, %d fails: %q", what, k.Errs, k.Fails, st.Samples)
					}
				}
				return st
			}
			if st := run("load"); st.Set.Ops != keys || st.Get.Ops != 0 {
				t.Errorf("load: %d sets, %d gets; want %d sets", st.Set.Ops, st.Get.Ops, keys)
			}
			cfg.Load = false
			sets := run("ratio 0:1").Set.Ops
			cfg.Gets, cfg.Sets = 1, 0
			// Every GET is checked: 100 bytes, the value written for its key.
			gets := run("ratio 1:0").Get.Ops
			if sets == 0 || gets == 0 {
				t.Fatalf("%d sets, %d gets", sets, gets)
			}
			if p != RESP {
				return
			}
			rc := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
			defer rc.Close()
			if n, err := rc.DBSize(context.Background()).Result(); err != nil || n != keys {
				t.Errorf("DBSIZE %d, %v; want %d", n, err, keys)
			}
			if v, err := rc.Get(context.Background(), "mix:123").Result(); err != nil || v != "123"+strings.Repeat("v", 97) {
				t.Errorf("GET mix:123 = %q, %v", v, err)
			}
			if !strings.HasPrefix(name, "redis") {
				return
			}
			info, err := rc.Info(context.Background(), "commandstats").Result()
			if err != nil {
				t.Fatal(err)
			}
			for cmd, want := range map[string]int64{"set": keys + sets, "get": gets + 1} {
				m := regexp.MustCompile(`cmdstat_` + cmd + `:calls=(\d+)`).FindStringSubmatch(info)
				if m == nil {
					t.Fatalf("no %s calls in %s", cmd, info)
				}
				if n, _ := strconv.ParseInt(m[1], 10, 64); n != want {
					t.Errorf("redis counted %d %s calls, the generator %d", n, cmd, want)
				}
			}
		})
	}
}
