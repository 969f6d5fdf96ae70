package bench

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"anykv/internal/bench/cpuset"
	"anykv/internal/bench/deploy"
	"anykv/internal/bench/driver"
	"anykv/internal/bench/gen"
	"anykv/internal/bench/loadgen"
	"anykv/internal/bench/workload"
)

// options are the parsed command-line flags.
type options struct {
	workloads  []*workload.Workload
	records    int64
	operations int64
	threads    []int
	deploy     []string
	targets    []targetFlag
	html       string
	json       string
	csv        string
	seed       uint64
	valueSize  int
	duration   time.Duration
	rate       float64
	timeout    time.Duration
	baseline   string
	anykvBin   string
	mix        *mixOptions  // --workload mix
	kill       *killOptions // --kill: the failover load instead of workloads
	serverCPUs []int
	clientCPUs []int
}

type targetFlag struct{ name, url string }

// targetList is the repeatable --target flag: URL or name=URL.
type targetList []targetFlag

func (t *targetList) String() string { return "" }

func (t *targetList) Set(v string) error {
	name, raw := "", v
	if i := strings.Index(v, "="); i > 0 && !strings.Contains(v[:i], "://") {
		name, raw = v[:i], v[i+1:]
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return fmt.Errorf("%q is not a URL like resp://host:port", raw)
	}
	if name == "" {
		name = u.Scheme + ":" + u.Host
	}
	*t = append(*t, targetFlag{name: name, url: raw})
	return nil
}

// extraFlags are the flags newFlagSet parses as text for parse to check.
type extraFlags struct {
	mix                    mixFlags
	serverCPUs, clientCPUs string
	kill, killTarget       string
}

func newFlagSet(o *options, out io.Writer) (*flag.FlagSet, *string, *string, *string, *targetList, *extraFlags) {
	fs := flag.NewFlagSet("anykv bench", flag.ContinueOnError)
	fs.SetOutput(out)
	wl := fs.String("workload", "ycsb-a", "workloads to run, comma-separated (`NAMES`; \"ycsb\" = ycsb-a..f, \"all\")")
	fs.Int64Var(&o.records, "records", 1000, "records loaded before a run phase (YCSB recordcount; N for appscale and nosql-eval)")
	fs.Int64Var(&o.operations, "operations", 1000, "operations per run phase (YCSB operationcount; acdb, ratio-sweep, kv739)")
	th := fs.String("threads", "", "thread counts to run each workload at, comma-separated (`LIST`; default per workload: appscale 1,3,9, kv739 1, others 4)")
	dep := fs.String("deploy", "", "start these datastores locally and run against each in turn, comma-separated (`NAMES`: "+strings.Join(deploy.Names(), ",")+")")
	var targets targetList
	fs.Var(&targets, "target", "run against a running datastore, `[NAME=]URL` (repeatable; schemes: "+strings.Join(driver.Schemes, ", ")+")")
	fs.StringVar(&o.html, "html", "", "write a self-contained HTML report with plots to `FILE`")
	fs.StringVar(&o.json, "json", "", "write results as JSON to `FILE`")
	fs.StringVar(&o.csv, "csv", "", "write results as CSV to `FILE`")
	fs.Uint64Var(&o.seed, "seed", 1, "seed for every random choice (keys, operation mix, value sizes)")
	fs.IntVar(&o.valueSize, "value-size", 0, "value size in `BYTES` (default per workload: YCSB 1000, nosql-eval 1000, others 100; minimum 56, the check header, except for mix)")
	fs.DurationVar(&o.duration, "duration", 0, "cap on each phase's running time, e.g. 30s (0 = run every operation)")
	fs.Float64Var(&o.rate, "rate", 0, "open loop: send `R` requests/s per phase and measure latency from the intended send time (0 = closed loop)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "timeout of one operation (counted as Err)")
	fs.StringVar(&o.baseline, "baseline", "", "target the side-by-side ratios compare against (default: the first target)")
	fs.StringVar(&o.anykvBin, "anykv-bin", "", "anykv binary for --deploy anykv* (default: this program if named anykv, else bin/anykv, else anykv on PATH)")
	var x extraFlags
	x.mix.register(fs)
	fs.StringVar(&x.serverCPUs, "server-cpus", "", "pin deployed servers to these cores (`LIST`, e.g. 0 or 0-1; taskset -c); anykv gets GOMAXPROCS and memcached -t = their number")
	fs.StringVar(&x.clientCPUs, "client-cpus", "", "pin the bench itself to these cores (`LIST`) and set its GOMAXPROCS to their number")
	fs.StringVar(&x.kill, "kill", "", "failover run: kill (SIGKILL) a random node every D and restart it after down=D (`every=D[,down=D]`, down default every/2); runs its own load instead of --workload")
	fs.StringVar(&x.killTarget, "kill-target", "datastore", "with --kill: kill datastore nodes or anykv front ends (`datastore|front`)")
	return fs, wl, th, dep, &targets, &x
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, `usage: anykv bench [flags]

Runs the same workloads against several datastores, deployed locally with
--deploy or given with --target, and prints one comparison.

Examples:
  anykv bench --deploy redis,memcached,postgres,etcd --workload appscale --records 1000 --html out.html
  anykv bench --deploy anykv,anykv-memcache,redis,redis-nopersist,memcached --workload mix \
      --ratio 1:0,0:1,10:1 --pipeline 1,16 --connections 50 --keys 10000 --value-size 100 \
      --duration 10s --runs 3 --server-cpus 0 --client-cpus 1
  anykv bench --deploy etcd3,anykv+etcd3,redis-cluster,anykv+redis-cluster --kill every=10s
  anykv bench --deploy cassandra3,anykv+cassandra3 --kill every=20s,down=5s --duration 80s

Flags:`)
	fs.PrintDefaults()
	fmt.Fprintln(w, "\nWorkloads:")
	for _, w2 := range workload.All() {
		fmt.Fprintf(w, "  %-12s %s\n", w2.Name, w2.Summary)
	}
	fmt.Fprintf(w, "  %-12s %s\n", "mix", mixSummary)
	fmt.Fprintln(w, "\nDeployable datastores (--deploy):")
	for _, n := range deploy.Names() {
		fmt.Fprintf(w, "  %-16s %s\n", n, deploy.Describe(n))
	}
	fmt.Fprintln(w, `
Columns: Test (phase, or phase:op), Req/Sec, Millis (phase time), latency
percentiles 50% 90% 99% 99.5% 99.9%, Max and Mean in ms, Err (errors and
timeouts), Fail (wrong, stale, lost or phantom data), Thr (threads).
See docs/bench.md.`)
}

// parse parses args; it returns done=true with an exit code when the
// command should stop (help or a usage error).
func parse(args []string, stderr, stdout io.Writer) (o options, code int, done bool) {
	fs, wl, th, dep, targets, x := newFlagSet(&o, io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fs.SetOutput(stdout)
			usage(stdout, fs)
			return o, 0, true
		}
		fmt.Fprintf(stderr, "anykv bench: %v (see --help)\n", err)
		return o, 2, true
	}
	fail := func(format string, a ...any) (options, int, bool) {
		fmt.Fprintf(stderr, "anykv bench: "+format+" (see --help)\n", a...)
		return o, 2, true
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	var err error
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if x.kill != "" {
		if given["workload"] {
			return fail("--kill runs its own failover load: leave out --workload")
		}
		if len(*targets) > 0 {
			return fail("--kill kills what the bench deployed: use --deploy, not --target")
		}
		if o.kill, err = parseKill(x.kill, x.killTarget); err != nil {
			return fail("%v", err)
		}
	} else if given["kill-target"] {
		return fail("--kill-target applies with --kill only")
	}
	if w := strings.TrimSpace(*wl); o.kill != nil {
		// the failover load replaces the workloads
	} else if w != "mix" && slices.Contains(strings.Split(w, ","), "mix") {
		return fail("--workload mix runs alone: it drives its own load generator")
	} else if w == "mix" {
		// mix drives its own load generator, which has its own counterparts
		// of these (--connections, --keys, --duration) or none (--rate).
		for _, f := range []string{"rate", "threads", "records", "operations"} {
			if given[f] {
				return fail("--%s does not apply to --workload mix (it runs --connections for --duration over --keys, closed loop)", f)
			}
		}
		if o.mix, err = x.mix.parse(); err != nil {
			return fail("%v", err)
		}
		o.mixDefaults()
		c := loadgen.Config{Conns: o.mix.conns, Pipeline: 1, Gets: 1, Keys: o.mix.keys, KeyDist: o.mix.keyDist,
			ValueSize: o.valueSize, Duration: o.duration}
		if err := c.Validate(); err != nil {
			return fail("--workload mix: %v", err)
		}
	} else if o.workloads, err = workload.Expand(*wl); err != nil {
		return fail("%v", err)
	} else if set := x.mix.setIn(fs); set != "" {
		return fail("--%s applies to --workload mix only", set)
	}
	for _, c := range []struct {
		flag, val string
		dst       *[]int
	}{{"server-cpus", x.serverCPUs, &o.serverCPUs}, {"client-cpus", x.clientCPUs, &o.clientCPUs}} {
		if c.val == "" {
			continue
		}
		if *c.dst, err = cpuset.Parse(c.val); err != nil {
			return fail("--%s: %v", c.flag, err)
		}
	}
	if *th != "" {
		for _, s := range strings.Split(*th, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 1 || n > 4096 {
				return fail("--threads: %q is not a thread count", s)
			}
			o.threads = append(o.threads, n)
		}
	}
	seen := map[string]bool{}
	for _, d := range strings.Split(*dep, ",") {
		d = strings.TrimSpace(d)
		if d == "" {
			continue
		}
		if !deploy.Known(d) {
			return fail("--deploy: unknown datastore %q (known: %s)", d, strings.Join(deploy.Names(), ", "))
		}
		if seen[d] {
			return fail("--deploy: %s given twice", d)
		}
		seen[d] = true
		o.deploy = append(o.deploy, d)
	}
	for _, t := range *targets {
		if seen[t.name] {
			return fail("target name %q used twice; name targets with NAME=URL", t.name)
		}
		seen[t.name] = true
	}
	o.targets = *targets
	if len(o.deploy)+len(o.targets) == 0 {
		return fail("nothing to run against: give --deploy and/or --target")
	}
	if o.baseline != "" && !seen[o.baseline] {
		return fail("--baseline %q is not one of the targets", o.baseline)
	}
	if o.records < 1 || o.operations < 1 {
		return fail("--records and --operations must be positive")
	}
	if o.kill != nil {
		if o.rate > 0 {
			return fail("--kill runs a closed loop: leave out --rate")
		}
		o.killDefaults()
	}
	if o.valueSize < 0 || o.rate < 0 || o.duration < 0 || o.timeout <= 0 {
		return fail("--value-size, --rate and --duration must not be negative, --timeout must be positive")
	}
	if len(o.workloads) > 0 && o.valueSize > 0 && o.valueSize < gen.HeaderLen {
		return fail("--value-size %d is below the minimum of %d: every value starts with a %d-byte self-check header (key hash, write number, length, CRC)",
			o.valueSize, gen.HeaderLen, gen.HeaderLen)
	}
	return o, 0, false
}
