package deploy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"anykv/internal/engine/remote/redact"
	"anykv/internal/procnet"
)

func init() {
	register(spec{name: "redis", pkg: "redis-server", summary: "redis-server --appendonly yes --appendfsync always --save \"\"",
		start: func(ctx context.Context, o Options, dir string) (*Server, error) {
			return startRedis(ctx, o, dir, true)
		}})
	register(spec{name: "redis-nopersist", pkg: "redis-server", summary: "redis-server --appendonly no --save \"\" (no persistence)",
		start: func(ctx context.Context, o Options, dir string) (*Server, error) {
			return startRedis(ctx, o, dir, false)
		}})
	register(spec{name: "memcached", pkg: "memcached", summary: "memcached -t 2 -U 0 -m 1024 (memory only)", start: startMemcached})
	register(spec{name: "etcd", pkg: "etcd-server", summary: "etcd single member, WAL fsync per commit", start: startEtcd})
	for _, v := range []struct{ name, variant, summary string }{
		{"anykv", "always", "anykv serve --fsync always, benchmarked over RESP"},
		{"anykv-interval", "interval", "anykv serve --fsync interval, over RESP"},
		{"anykv-never", "never", "anykv serve --fsync never, over RESP"},
		{"anykv-memory", "memory", "anykv serve --engine memory, over RESP"},
		{"anykv-http", "http", "anykv serve --fsync always, benchmarked over its HTTP/JSON API"},
		{"anykv-memcache", "memcache", "anykv serve --fsync always, benchmarked over the memcached protocol"},
	} {
		v := v
		register(spec{name: v.name, summary: v.summary,
			start: func(ctx context.Context, o Options, dir string) (*Server, error) {
				return startAnykv(ctx, o, dir, v.variant, "", false)
			}})
	}
}

func notInstalled(name, pkg string) error {
	return &NotInstalledError{Name: name, Hint: "install Debian package " + pkg}
}

func startRedis(ctx context.Context, o Options, dir string, persist bool) (*Server, error) {
	bin, ok := findBinary("redis-server")
	if !ok {
		return nil, notInstalled("redis", "redis-server")
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--dir", dir,
		"--daemonize", "no", "--save", "", "--logfile", "", "--protected-mode", "no"}
	settings := []string{"RDB snapshots off (--save \"\")"}
	if persist {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
		settings = append(settings, "AOF on, fsync before every write is acknowledged (--appendonly yes --appendfsync always)")
	} else {
		args = append(args, "--appendonly", "no")
		settings = append(settings, "no persistence (--appendonly no)")
	}
	p, err := startProc(bin, args, dir, logPath(dir, "redis"), nil, o.CPUs)
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("resp://127.0.0.1:%d", port)
	if err := waitReady(ctx, p, url, o.ReadyTimeout); err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	return &Server{URL: url, Pid: p.cmd.Process.Pid, Version: output(bin, "--version"), Settings: settings,
		stop: func() error { return p.stop(10 * time.Second) }}, nil
}

func startMemcached(ctx context.Context, o Options, dir string) (*Server, error) {
	bin, ok := findBinary("memcached")
	if !ok {
		return nil, notInstalled("memcached", "memcached")
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	threads := 2
	if len(o.CPUs) > 0 {
		threads = len(o.CPUs) // as many worker threads as cores it may use
	}
	args := []string{"-t", fmt.Sprint(threads), "-l", "127.0.0.1", "-p", fmt.Sprint(port), "-U", "0", "-m", "1024"}
	if os.Geteuid() == 0 {
		acct, err := unprivileged("memcache", "nobody")
		if err != nil {
			return nil, err
		}
		args = append(args, "-u", acct.name)
	}
	p, err := startProc(bin, args, dir, logPath(dir, "memcached"), nil, o.CPUs)
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("memcache://127.0.0.1:%d", port)
	if err := waitReady(ctx, p, url, o.ReadyTimeout); err != nil {
		return nil, fmt.Errorf("memcached: %w", err)
	}
	return &Server{URL: url, Pid: p.cmd.Process.Pid, Version: output(bin, "-V"),
		Settings: []string{"memory only: no persistence", fmt.Sprintf("worker threads: %d (-t %d), UDP off (-U 0), 1024 MB item memory (-m 1024); evictions show up as Fail", threads, threads)},
		stop:     func() error { return p.stop(10 * time.Second) }}, nil
}

func startEtcd(ctx context.Context, o Options, dir string) (*Server, error) {
	bin, ok := findBinary("etcd")
	if !ok {
		return nil, notInstalled("etcd", "etcd-server")
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	peer, err := freePort()
	if err != nil {
		return nil, err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", port)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	args := []string{"--name", "bench", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "bench=" + peerURL, "--initial-cluster-state", "new",
		"--log-level", "warn"}
	p, err := startProc(bin, args, dir, logPath(dir, "etcd"), nil, o.CPUs)
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("etcd://127.0.0.1:%d", port)
	if err := waitReady(ctx, p, url, o.ReadyTimeout); err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	return &Server{URL: url, Pid: p.cmd.Process.Pid, Version: output(bin, "--version"),
		Settings: []string{"single member, data dir on local disk", "WAL fsync before every commit is acknowledged (etcd default, --unsafe-no-fsync off)"},
		stop:     func() error { return p.stop(10 * time.Second) }}, nil
}

// FindAnykv locates the anykv binary: explicit if set; else this program
// when its base name is anykv; else bin/anykv under the working directory;
// else anykv on PATH.
func FindAnykv(explicit string) (string, error) {
	hint := "anykv binary not found: build it (go build -o bin/anykv ./cmd/anykv) or pass --anykv-bin PATH"
	if explicit != "" {
		if st, err := os.Stat(explicit); err != nil || st.IsDir() {
			return "", &NotInstalledError{Name: "anykv", Hint: fmt.Sprintf("anykv binary %s not found", explicit)}
		}
		return filepath.Abs(explicit)
	}
	if exe, err := os.Executable(); err == nil && filepath.Base(exe) == "anykv" {
		return exe, nil
	}
	if st, err := os.Stat(filepath.Join("bin", "anykv")); err == nil && !st.IsDir() {
		return filepath.Abs(filepath.Join("bin", "anykv"))
	}
	if p, err := exec.LookPath("anykv"); err == nil {
		return p, nil
	}
	return "", &NotInstalledError{Name: "anykv", Hint: hint}
}

// startAnykv runs `anykv serve --dir D --resp 127.0.0.1:P` with the
// variant's durability (always, interval, never, memory) and protocol (http
// and memcache use --fsync always and are benchmarked through that
// protocol). Listeners the bench does not use are switched off when the
// binary has them, so parallel deployments do not fight over default ports.
// startAnykv starts anykv for variant (always, interval, never, memory, http, memcache); with engineURL it
// serves a datastore (--engine URL), with its caches kept on when exclusive.
func startAnykv(ctx context.Context, o Options, dir, variant, engineURL string, exclusive bool) (*Server, error) {
	bin, err := FindAnykv(o.AnykvBin)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	help := helpText(bin, "serve", "--help")
	ports := map[string]int{}
	for _, proto := range []string{"resp", "http", "memcache"} {
		if ports[proto], err = freePort(); err != nil {
			return nil, err
		}
	}
	addr := func(proto string) string { return fmt.Sprintf("127.0.0.1:%d", ports[proto]) }
	args := []string{"serve", "--dir", data, "--resp", addr("resp")}
	proto := "resp"
	switch variant {
	case "http", "memcache":
		proto = variant
	}
	for _, extra := range []string{"http", "memcache"} {
		switch {
		case extra == proto:
			args = append(args, "--"+extra, addr(extra))
		case strings.Contains(help, "-"+extra+" "):
			args = append(args, "--"+extra, "")
		}
	}
	var settings, env []string
	switch {
	case engineURL != "":
		// In the environment, which only its owner reads: ps shows a command line, and with it the URL's
		// password (the mariadb and postgres targets' own), to every user of the machine.
		env = append(env, "ANYKV_ENGINE="+engineURL)
		settings = []string{"over " + redact.URL(engineURL) + " (--engine URL, as ANYKV_ENGINE): durability is the datastore's"}
		if exclusive {
			args = append(args, "--exclusive")
			settings = append(settings, "read and query caches on (--exclusive: the only writer of the datastore)")
		} else {
			settings = append(settings, "caches off (another front end may write the datastore)")
		}
	case variant == "memory":
		args = append(args, "--engine", "memory")
		settings = []string{"memory engine (--engine memory): no persistence"}
	case variant == "interval" || variant == "never":
		args = append(args, "--fsync", variant)
		settings = []string{fmt.Sprintf("--fsync %s: acknowledged writes may be lost on power failure", variant)}
	default:
		args = append(args, "--fsync", "always")
		settings = []string{"fsync before every write is acknowledged (--fsync always)"}
	}
	if len(o.CPUs) > 0 {
		// The Go runtime runs one P per allowed core; say so explicitly.
		env = append(env, fmt.Sprintf("GOMAXPROCS=%d", len(o.CPUs)))
		settings = append(settings, fmt.Sprintf("GOMAXPROCS=%d", len(o.CPUs)))
	}
	p, err := startProc(bin, args, dir, logPath(dir, "anykv"), nil, o.CPUs, env...)
	if err != nil {
		return nil, err
	}
	url := map[string]string{"resp": "resp://", "http": "http://", "memcache": "memcache://"}[proto] + addr(proto)
	if err := waitReady(ctx, p, url, o.ReadyTimeout); err != nil {
		return nil, fmt.Errorf("anykv: %w", err)
	}
	if engineURL == "" {
		settings = append(settings, "data directory on local disk")
	}
	settings = append(settings, "benchmarked over "+proto, "binary "+bin)
	n := &procNode{name: "anykv", p: p, addr: addr(proto)}
	return &Server{URL: url, Pid: p.cmd.Process.Pid, Version: output(bin, "--version"), Settings: settings,
		Fronts: []Node{n}, stop: func() error { return n.p.stop(10 * time.Second) }}, nil
}

// procNode is a server process the bench started, restarted with the same command.
type procNode struct {
	name string
	p    *proc
	addr string // host:port it listens on once ready
}

func (n *procNode) Name() string { return n.name }
func (n *procNode) Kill() error  { return n.p.kill() }

func (n *procNode) Restart(ctx context.Context) error {
	p, err := n.p.again()
	if err != nil {
		return err
	}
	n.p = p
	return waitListening(ctx, p, n.addr, 30*time.Second)
}

// waitListening polls addr until it accepts a TCP connection from p (its process group holds the listener, not
// another process that took the port while p was down), or p exits.
func waitListening(ctx context.Context, p *proc, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if p.exited() {
			return startFailure(p.logPath, p.err)
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			if procnet.GroupListens(p.cmd.Process.Pid, addr) {
				return nil
			}
			err = errors.New("another process listens there")
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s did not accept connections within %v: %w", addr, timeout, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}
