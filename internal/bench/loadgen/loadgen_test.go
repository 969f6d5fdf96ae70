package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func cfgFor(addr string, p Proto) Config {
	return Config{Addr: addr, Proto: p, Conns: 3, Pipeline: 7, Gets: 3, Sets: 1, Keys: 100,
		Prefix: "t:", ValueSize: 20, Duration: 150 * time.Millisecond, Timeout: 5 * time.Second, Seed: 1}
}

// TestCountsExactly checks that a load writes every key once and that a
// mixed run counts exactly the requests the server answered.
func TestCountsExactly(t *testing.T) {
	for _, p := range []Proto{RESP, Memcache} {
		t.Run(p.String(), func(t *testing.T) {
			f := startFake(t, p, nil)
			cfg := cfgFor(f.addr(), p)
			cfg.Load = true
			st, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			gets, sets, keys := f.counts()
			if st.Set.Ops != 100 || st.Get.Ops != 0 || sets != 100 || gets != 0 || keys != 100 {
				t.Fatalf("load: %d sets %d gets counted, server saw %d sets %d gets, %d keys; want 100 sets, 100 keys", st.Set.Ops, st.Get.Ops, sets, gets, keys)
			}
			cfg.Load = false
			st, err = Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			gets, sets, keys = f.counts()
			if st.Get.Ops != int64(gets) || st.Set.Ops != int64(sets-100) || keys != 100 {
				t.Errorf("run counted %d gets %d sets; server saw %d gets %d sets, has %d keys", st.Get.Ops, st.Set.Ops, gets, sets-100, keys)
			}
			if st.Get.Ops == 0 || st.Set.Ops == 0 {
				t.Errorf("ratio 3:1 ran %d gets, %d sets", st.Get.Ops, st.Set.Ops)
			}
			for _, k := range []Kind{st.Get, st.Set} {
				if k.Errs != 0 || k.Fails != 0 || k.Hist.Count() != k.Ops {
					t.Errorf("%+v: want no errors or fails and every request in the histogram; samples %q", k, st.Samples)
				}
			}
			rows := st.Results("fake", "mix", "3:1/p7", 3)
			if len(rows) != 3 || rows[0].Ops != st.Get.Ops+st.Set.Ops || rows[1].Op != "get" || rows[2].Op != "set" {
				t.Errorf("results rows %+v", rows)
			}
		})
	}
}

// TestKeyDistributions checks that zipfian concentrates requests on a few
// keys and uniform does not, over the whole key range.
func TestKeyDistributions(t *testing.T) {
	for _, dist := range []string{"uniform", "zipfian"} {
		f := startFake(t, RESP, nil)
		cfg := cfgFor(f.addr(), RESP)
		cfg.KeyDist = dist
		var top, total, keys int
		for runs := 0; total < 2000 && runs < 200; runs++ { // runs are timed: repeat until enough requests, however busy the machine
			if _, err := Run(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			top, total = 0, 0
			for _, n := range f.hits {
				top = max(top, n)
				total += n
			}
			keys = len(f.hits)
			f.mu.Unlock()
		}
		mean := float64(total) / 100
		t.Logf("%s: %d requests over %d keys, busiest key %d", dist, total, keys, top)
		switch {
		case total < 2000:
			t.Fatalf("%s: only %d requests", dist, total)
		case dist == "uniform" && (keys != 100 || float64(top) > 2*mean):
			t.Errorf("uniform: %d keys, busiest %d requests, mean %.0f", keys, top, mean)
		case dist == "zipfian" && float64(top) < 3*mean:
			t.Errorf("zipfian: busiest key %d requests, mean %.0f: not skewed", top, mean)
		}
	}
}

// TestWrongRepliesAreNotSuccesses runs GET-only and SET-only against fakes
// that answer wrongly and checks that no request counts as a success.
func TestWrongRepliesAreNotSuccesses(t *testing.T) {
	other := func(v string) string { // another key's value
		if v[0] == '9' {
			return "8" + v[1:]
		}
		return "9" + v[1:]
	}
	for _, c := range []struct {
		name   string
		p      Proto
		get    bool
		answer string // reply; "%v" is replaced by the stored value
		errs   bool   // counted as Err rather than Fail
	}{
		{"resp nil", RESP, true, "$-1\r\n", false},
		{"resp short", RESP, true, "$3\r\nabc\r\n", false},
		{"resp other value", RESP, true, "other", false},
		{"resp wrong type", RESP, true, ":1\r\n", false},
		{"resp garbage", RESP, true, "hello\r\n", false},
		{"resp set error", RESP, false, "-ERR no\r\n", true},
		{"resp set wrong", RESP, false, "+QUEUED\r\n", false},
		{"memcache miss", Memcache, true, "END\r\n", false},
		{"memcache other value", Memcache, true, "other", false},
		{"memcache garbage", Memcache, true, "VALUE\r\n", false},
		{"memcache set error", Memcache, false, "SERVER_ERROR out of memory\r\n", true},
		{"memcache not stored", Memcache, false, "NOT_STORED\r\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			good := correct(c.p)
			f := startFake(t, c.p, func(req request, store map[string]string) string {
				switch {
				case req.get != c.get || (req.get && store[req.key] == ""):
					return good(req, store)
				case c.answer != "other":
					return c.answer
				}
				wrong := map[string]string{req.key: other(store[req.key])}
				return good(req, wrong)
			})
			cfg := cfgFor(f.addr(), c.p)
			cfg.Load = true
			if _, err := Run(context.Background(), cfg); err != nil && c.get {
				t.Fatal(err)
			}
			cfg.Load = false
			cfg.Gets, cfg.Sets = map[bool]int{true: 1}[c.get], map[bool]int{false: 1}[c.get]
			st, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			k := st.Set
			if c.get {
				k = st.Get
			}
			if k.Ops == 0 || k.Errs+k.Fails != k.Ops {
				t.Errorf("%d requests, %d errs, %d fails: some wrong replies counted as successes", k.Ops, k.Errs, k.Fails)
			}
			if c.errs && k.Errs != k.Ops || !c.errs && k.Fails == 0 {
				t.Errorf("%d errs, %d fails of %d; want them counted as %s", k.Errs, k.Fails, k.Ops, map[bool]string{true: "Err", false: "Fail"}[c.errs])
			}
			if len(st.Samples) == 0 {
				t.Error("no sample describes the wrong replies")
			}
			t.Logf("%d ops, %d errs, %d fails; first: %s", k.Ops, k.Errs, k.Fails, st.Samples[0])
		})
	}
}

// TestNoAllocationPerRequest encodes and checks batches of requests and
// replies and counts heap allocations.
func TestNoAllocationPerRequest(t *testing.T) {
	for _, p := range []Proto{RESP, Memcache} {
		cd := newCodec(p, "k:", 1000, 100)
		cfg := Config{Gets: 1, Sets: 1, Keys: 1000, KeyDist: "zipfian"}
		c := &conn{cfg: &cfg, cd: cd, slots: make([]slot, 16), keys: chooser(cfg), rng: rand.New(rand.NewPCG(1, 1))}
		var replies bytes.Buffer
		good := correct(p)
		for i := 0; i < 16; i++ {
			v := cd.set[cd.setVal : cd.setVal+100]
			replies.WriteString(good(request{get: true, key: "k:000"}, map[string]string{"k:000": string(v)}))
		}
		src := bytes.NewReader(replies.Bytes())
		r := bufio.NewReaderSize(src, 64<<10)
		allocs := testing.AllocsPerRun(50, func() {
			if n := c.fill(); n != 16 {
				t.Fatalf("batch of %d", n)
			}
			src.Reset(replies.Bytes())
			r.Reset(src)
			for i := 0; i < 16; i++ {
				if o, msg, err := cd.read(r, true, 0); o != ok || err != nil {
					t.Fatalf("%s: reply %d: %v %s %v", p, i, o, msg, err)
				}
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per batch of 16", p, allocs)
		}
		if !strings.Contains(string(c.wbuf), "k:") {
			t.Errorf("%s: batch %q has no keys", p, c.wbuf)
		}
	}
}

func TestValidate(t *testing.T) {
	good := Config{Conns: 1, Pipeline: 1, Gets: 1, Keys: 10000, ValueSize: 100, Duration: time.Second}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.Conns = 0 },
		func(c *Config) { c.Pipeline = 0 },
		func(c *Config) { c.Gets, c.Sets = 0, 0 },
		func(c *Config) { c.Sets = -1 },
		func(c *Config) { c.ValueSize = 3 }, // keys 0..9999 need 4 digits
		func(c *Config) { c.Duration = 0 },
		func(c *Config) { c.KeyDist = "latest" },
	} {
		c := good
		bad(&c)
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
