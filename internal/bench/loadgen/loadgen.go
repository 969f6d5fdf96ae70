// Package loadgen is the bench's high-throughput load generator, in the
// manner of memtier_benchmark: it speaks raw RESP and raw memcached text
// itself, one goroutine per connection writing a batch of up to Pipeline
// pre-encoded GETs and SETs and then reading their replies, with no
// allocation per request. Every reply is checked; errors and wrong values
// are counted, never taken as successes.
package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"anykv/internal/bench/gen"
	"anykv/internal/bench/hist"
	"anykv/internal/bench/workload"
)

// Config describes one run.
type Config struct {
	Addr      string // host:port
	Proto     Proto
	Conns     int // connections, one goroutine each
	Pipeline  int // requests written before their replies are read
	Gets      int // GET:SET ratio; both 0 is not allowed
	Sets      int
	Keys      int    // keys are numbers 0..Keys-1, chosen by KeyDist
	KeyDist   string // "uniform" (or "") or "zipfian" (YCSB's scrambled zipfian)
	Prefix    string // key prefix; a key is Prefix + zero-padded number
	ValueSize int    // at least the number of digits of Keys-1
	// Load makes the run write every key exactly once (SETs only, keys
	// split between connections) instead of running for Duration.
	Load     bool
	Duration time.Duration
	Timeout  time.Duration // per batch; default 10s
	Seed     uint64
}

// Kind is the measurement of one request kind.
type Kind struct {
	Ops   int64   // requests answered, whatever the answer
	Errs  int64   // error replies, timeouts and requests lost with a broken connection
	Fails int64   // wrong answers: misses of written keys, wrong sizes or bytes, unparseable replies
	Hist  *hist.H // latency of every answered request except Errs
}

// Stats is what a run measured.
type Stats struct {
	Get, Set Kind
	Elapsed  time.Duration
	Series   *hist.Series
	Samples  []string // the first few error and failure descriptions
}

// Validate checks a configuration.
func (c *Config) Validate() error {
	switch {
	case c.Conns < 1 || c.Pipeline < 1 || c.Keys < 1:
		return errors.New("connections, pipeline and keys must be positive")
	case c.Gets < 0 || c.Sets < 0 || c.Gets+c.Sets == 0:
		return errors.New("ratio GET:SET needs a positive side, e.g. 10:1, 1:0 or 0:1")
	case c.ValueSize < len(fmt.Sprint(c.Keys-1)) || c.ValueSize > 1<<20:
		return fmt.Errorf("value size %d must be between the key number's digits (%d) and 1 MiB", c.ValueSize, len(fmt.Sprint(c.Keys-1)))
	case c.KeyDist != "" && c.KeyDist != "uniform" && c.KeyDist != "zipfian":
		return fmt.Errorf("key distribution %q is not uniform or zipfian", c.KeyDist)
	case !c.Load && c.Duration <= 0:
		return errors.New("a run needs a duration")
	}
	return nil
}

// Run dials every connection, then runs them together until Duration has
// passed (or, for Load, until every key is written) and each connection
// has read the replies of the batch it sent. Latency of a request is
// measured from the moment its batch was written to the moment its reply
// was parsed. Cancelling ctx stops early; requests cut off by that are not
// counted.
func Run(ctx context.Context, cfg Config) (*Stats, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	cd := newCodec(cfg.Proto, cfg.Prefix, cfg.Keys, cfg.ValueSize)
	conns := make([]*conn, cfg.Conns)
	for i := range conns {
		nc, err := dial(ctx, cfg)
		if err != nil {
			for _, c := range conns[:i] {
				c.nc.Close()
			}
			return nil, err
		}
		conns[i] = &conn{cfg: &cfg, cd: cd, id: i, nc: nc, r: bufio.NewReaderSize(nc, readBuf(cfg.ValueSize)),
			rng: rand.New(rand.NewPCG(cfg.Seed, uint64(i))), keys: chooser(cfg), slots: make([]slot, cfg.Pipeline),
			get: Kind{Hist: hist.New()}, set: Kind{Hist: hist.New()}}
	}
	// Closing the connections unblocks reads and writes on cancellation.
	stop := context.AfterFunc(ctx, func() {
		for _, c := range conns {
			c.closeConn()
		}
	})
	defer stop()
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	var wg sync.WaitGroup
	for _, c := range conns {
		c.series = hist.NewSeries(start, 100*time.Millisecond)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.loop(ctx, deadline)
		}()
	}
	wg.Wait()
	st := &Stats{Elapsed: time.Since(start), Series: hist.NewSeries(start, 100*time.Millisecond),
		Get: Kind{Hist: hist.New()}, Set: Kind{Hist: hist.New()}}
	for _, c := range conns {
		c.closeConn()
		st.Get.add(&c.get)
		st.Set.add(&c.set)
		st.Series.Merge(c.series)
		for _, s := range c.samples {
			if len(st.Samples) < 5 {
				st.Samples = append(st.Samples, s)
			}
		}
	}
	return st, ctx.Err()
}

func (k *Kind) add(o *Kind) {
	k.Ops += o.Ops
	k.Errs += o.Errs
	k.Fails += o.Fails
	k.Hist.Merge(o.Hist)
}

// chooser returns a connection's own key chooser (choosers keep state).
func chooser(cfg Config) gen.Chooser {
	if cfg.KeyDist == "zipfian" {
		return gen.NewScrambledZipfian(0, int64(cfg.Keys-1))
	}
	return gen.Uniform{Min: 0, Max: int64(cfg.Keys - 1)}
}

func readBuf(valueSize int) int { return max(64<<10, 2*valueSize+512) }

func dial(ctx context.Context, cfg Config) (net.Conn, error) {
	d := net.Dialer{Timeout: cfg.Timeout}
	nc, err := d.DialContext(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return nc, nil
}

// slot is one request of the batch in flight.
type slot struct {
	get bool
	key int
}

// conn is one connection and its goroutine's measurements.
type conn struct {
	cfg      *Config
	cd       *codec
	id       int
	mu       sync.Mutex // guards nc against closeConn from the cancel hook
	nc       net.Conn
	r        *bufio.Reader
	wbuf     []byte
	rng      *rand.Rand
	keys     gen.Chooser
	slots    []slot
	nextLoad int // next key to write in a Load run
	get, set Kind
	series   *hist.Series
	samples  []string
}

func (c *conn) closeConn() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nc != nil {
		c.nc.Close()
	}
}

func (c *conn) sample(format string, args ...any) {
	if len(c.samples) < 5 {
		c.samples = append(c.samples, fmt.Sprintf(format, args...))
	}
}

// fill builds the next batch in wbuf and slots; it returns the batch size,
// 0 when a Load run has no keys left for this connection.
func (c *conn) fill() int {
	c.wbuf = c.wbuf[:0]
	n := 0
	for n < len(c.slots) {
		var s slot
		if c.cfg.Load {
			k := c.id + c.nextLoad*c.cfg.Conns
			if k >= c.cfg.Keys {
				break
			}
			c.nextLoad++
			s = slot{get: false, key: k}
		} else {
			s = slot{get: c.rng.IntN(c.cfg.Gets+c.cfg.Sets) < c.cfg.Gets, key: int(c.keys.Next(c.rng))}
		}
		if s.get {
			c.wbuf = c.cd.appendGet(c.wbuf, s.key)
		} else {
			c.wbuf = c.cd.appendSet(c.wbuf, s.key)
		}
		c.slots[n] = s
		n++
	}
	return n
}

func (c *conn) kind(s slot) *Kind {
	if s.get {
		return &c.get
	}
	return &c.set
}

// loop sends batches until the deadline (or, loading, until its keys are
// written), reconnecting after a broken or desynchronised stream.
func (c *conn) loop(ctx context.Context, deadline time.Time) {
	for ctx.Err() == nil && (c.cfg.Load || time.Now().Before(deadline)) {
		n := c.fill()
		if n == 0 {
			return
		}
		sent := time.Now()
		c.nc.SetDeadline(sent.Add(c.cfg.Timeout))
		got, err := 0, error(nil)
		if _, err = c.nc.Write(c.wbuf); err == nil {
			for got < n {
				s := c.slots[got]
				var o outcome
				var msg string
				o, msg, err = c.cd.read(c.r, s.get, s.key)
				if err != nil && !errors.Is(err, errDesync) {
					break // no reply: counted below
				}
				now := time.Now()
				k := c.kind(s)
				k.Ops++
				got++
				c.series.Add(now)
				switch o {
				case errd:
					k.Errs++
					c.sample("%s", msg)
					continue
				case fail:
					k.Fails++
					if msg == "" && err != nil {
						msg = err.Error()
					}
					c.sample("%s", msg)
				}
				k.Hist.Record(now.Sub(sent))
				if err != nil {
					break // desync: the rest of the batch cannot be read
				}
			}
		}
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return // interrupted: the cut-off requests are not counted
		}
		// The requests of the batch left without a reply are errors.
		for _, s := range c.slots[got:n] {
			k := c.kind(s)
			k.Ops++
			k.Errs++
		}
		if got < n {
			c.sample("%d requests without a reply: %v", n-got, err)
		}
		if !c.redial(ctx) {
			return
		}
	}
}

// redial replaces a broken connection; false means it could not.
func (c *conn) redial(ctx context.Context) bool {
	c.closeConn()
	nc, err := dial(ctx, *c.cfg)
	if err != nil {
		c.sample("reconnect: %v", err)
		return false
	}
	c.mu.Lock()
	c.nc = nc
	c.mu.Unlock()
	if ctx.Err() != nil {
		nc.Close()
		return false
	}
	c.r.Reset(nc)
	return true
}

// Results converts stats into report rows of workload w, phase phase: the
// phase total, then one row per request kind when both kinds ran.
func (s *Stats) Results(target, w, phase string, conns int) []*workload.Result {
	total := &workload.Result{Target: target, Workload: w, Phase: phase, Threads: conns,
		Elapsed: s.Elapsed, Hist: hist.New(), Series: s.Series, Samples: s.Samples}
	rows := []*workload.Result{total}
	for _, k := range []struct {
		name string
		k    *Kind
	}{{"get", &s.Get}, {"set", &s.Set}} {
		total.Ops += k.k.Ops
		total.Errs += k.k.Errs
		total.Fails += k.k.Fails
		total.Hist.Merge(k.k.Hist)
		rows = append(rows, &workload.Result{Target: target, Workload: w, Phase: phase, Op: k.name, Threads: conns,
			Ops: k.k.Ops, Errs: k.k.Errs, Fails: k.k.Fails, Elapsed: s.Elapsed, Hist: k.k.Hist})
	}
	if s.Get.Ops == 0 || s.Set.Ops == 0 {
		return rows[:1]
	}
	return rows
}
