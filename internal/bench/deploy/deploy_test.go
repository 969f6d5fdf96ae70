package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"anykv/internal/bench/cpuset"
	"anykv/internal/procnet"
)

func baseDir(t *testing.T) string {
	t.Helper()
	d, err := NewBaseDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func addrOf(t *testing.T, url string) string {
	t.Helper()
	_, rest, ok := strings.Cut(url, "://")
	if !ok {
		t.Fatalf("bad url %q", url)
	}
	host, _, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(host, "@"); i >= 0 {
		host = host[i+1:]
	}
	return host
}

func TestStopTearsDown(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"redis", "redis-nopersist"} {
		s, err := Start(context.Background(), name, Options{BaseDir: baseDir(t)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(s.Settings) == 0 || s.Version == "" || s.Name != name {
			t.Errorf("%s: server %+v lacks settings or version", name, s)
		}
		addr := addrOf(t, s.URL)
		if c, err := net.Dial("tcp", addr); err != nil {
			t.Fatalf("%s not listening: %v", name, err)
		} else {
			c.Close()
		}
		if err := s.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
		if err := s.Stop(); err != nil {
			t.Errorf("second stop: %v", err)
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still listening on %s after Stop", name, addr)
		}
		if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
			t.Errorf("%s: data dir %s left behind", name, s.Dir)
		}
	}
}

func TestCancelDuringStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	base := baseDir(t)
	if s, err := Start(ctx, "etcd", Options{BaseDir: base}); err == nil {
		s.Stop()
		t.Fatal("start with a cancelled context succeeded")
	}
	// Nothing may be left running or on disk.
	entries, _ := os.ReadDir(base)
	if len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}

func TestUnknownAndMissing(t *testing.T) {
	if _, err := Start(context.Background(), "oracle", Options{BaseDir: t.TempDir()}); err == nil ||
		!strings.Contains(err.Error(), "unknown deployment") {
		t.Errorf("unknown: %v", err)
	}
	_, err := Start(context.Background(), "anykv", Options{BaseDir: baseDir(t), AnykvBin: "/nonexistent/anykv"})
	var ni *NotInstalledError
	if !errors.As(err, &ni) || !strings.HasPrefix(err.Error(), "skipped: ") {
		t.Errorf("missing anykv binary: %v", err)
	}
	if got := notInstalled("redis", "redis-server").Error(); got != "skipped: install Debian package redis-server" {
		t.Errorf("message %q", got)
	}
	for _, n := range []string{"anykv", "anykv-interval", "anykv-never", "anykv-memory", "redis", "redis-nopersist", "memcached", "postgres", "etcd", "mariadb"} {
		if !Known(n) || Describe(n) == "" {
			t.Errorf("%s not registered", n)
		}
	}
}

func TestFindAnykvSearchOrder(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("PATH", dir+"/nothing")
	if _, err := FindAnykv(""); err == nil {
		t.Fatal("found an anykv where there is none")
	}
	os.MkdirAll("bin", 0o755)
	os.WriteFile("bin/anykv", []byte("#!/bin/sh\n"), 0o755)
	got, err := FindAnykv("")
	if err != nil || got != filepath.Join(dir, "bin", "anykv") {
		t.Errorf("bin/anykv: %q %v", got, err)
	}
	if got, err := FindAnykv("bin/anykv"); err != nil || !filepath.IsAbs(got) {
		t.Errorf("explicit: %q %v", got, err)
	}
}

// A stand-in anykv that records its arguments and environment and serves
// RESP by running redis-server, so the anykv deployment plumbing is tested without the
// real binary.
const fakeAnykv = `#!/bin/sh
echo "$@" > "$(dirname "$0")/args.$$"
env > "$(dirname "$0")/env.$$"
[ "$1" = serve ] || exit 2
shift
[ "$1" = --help ] && { echo "  -http string"; echo "  -memcache string"; exit 0; }
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2;;
    --resp) port=${2##*:}; shift 2;;
    --memcache) mc=${2##*:}; shift 2;;
    --http) web=${2##*:}; shift 2;;
    *) shift;;
  esac
done
[ -n "$mc" ] && exec memcached -p "$mc" -l 127.0.0.1 -U 0 -u nobody
[ -n "$web" ] && cd "$dir" && exec python3 -m http.server "$web" --bind 127.0.0.1
exec redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly no
`

func TestAnykvVariants(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server missing: install Debian package redis-server")
	}
	bindir := t.TempDir()
	bin := filepath.Join(bindir, "anykv")
	if err := os.WriteFile(bin, []byte(fakeAnykv), 0o755); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"anykv":          "--http  --memcache  --fsync always",
		"anykv-interval": "--fsync interval",
		"anykv-never":    "--fsync never",
		"anykv-memory":   "--engine memory",
		"anykv-memcache": "--memcache 127.0.0.1:",
		"anykv-http":     "--http 127.0.0.1:",
	}
	scheme := map[string]string{"anykv-memcache": "memcache://", "anykv-http": "http://"}
	for name, flag := range want {
		s, err := Start(context.Background(), name, Options{BaseDir: baseDir(t), AnykvBin: bin})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sch := scheme[name]
		if sch == "" {
			sch = "resp://"
		}
		if !strings.HasPrefix(s.URL, sch+"127.0.0.1:") {
			t.Errorf("%s url %s", name, s.URL)
		}
		if err := s.Stop(); err != nil {
			t.Errorf("%s stop: %v", name, err)
		}
		// The fake records every call (the deployer also asks for --version).
		files, _ := filepath.Glob(filepath.Join(bindir, "args.*"))
		var serves []string
		for _, f := range files {
			b, _ := os.ReadFile(f)
			os.Remove(f)
			if l := strings.TrimSpace(string(b)); strings.HasPrefix(l, "serve --dir") {
				serves = append(serves, l)
			}
		}
		if len(serves) != 1 {
			t.Fatalf("%s: anykv serve ran %d times: %q", name, len(serves), serves)
		}
		line := serves[0]
		if !strings.HasPrefix(line, "serve --dir ") || !strings.Contains(line, "--resp 127.0.0.1:") || !strings.Contains(line, flag) {
			t.Errorf("%s ran anykv %s, want %s", name, line, flag)
		}
	}
}

// TestPinning starts redis-nopersist, memcached and a fake anykv pinned to
// one CPU and checks each process's affinity, memcached's -t and anykv's
// GOMAXPROCS.
func TestPinning(t *testing.T) {
	t.Parallel()
	for _, b := range []string{"redis-server", "memcached", "taskset"} {
		if _, ok := findBinary(b); !ok {
			t.Fatalf("%s missing (scripts/test-deps.txt)", b)
		}
	}
	bindir := t.TempDir()
	bin := filepath.Join(bindir, "anykv")
	if err := os.WriteFile(bin, []byte(fakeAnykv), 0o755); err != nil {
		t.Fatal(err)
	}
	allowed, err := cpuset.Allowed(0)
	if err != nil {
		t.Fatal(err)
	}
	one := allowed[len(allowed)-1:]
	for _, name := range []string{"redis-nopersist", "memcached", "anykv"} {
		s, err := Start(context.Background(), name, Options{BaseDir: baseDir(t), AnykvBin: bin, CPUs: one})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := cpuset.Allowed(s.Pid)
		if err != nil || !slices.Equal(got, one) {
			t.Errorf("%s pid %d: Cpus_allowed_list %v, %v; want %v", name, s.Pid, got, err, one)
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", s.Pid))
		// redis-server (behind the fake anykv) overwrites its environ
		// block with its process title, so read what the fake recorded.
		environ, _ := os.ReadFile(filepath.Join(bindir, fmt.Sprintf("env.%d", s.Pid)))
		switch name {
		case "memcached":
			if !bytes.Contains(cmdline, []byte("-t\x001\x00")) {
				t.Errorf("memcached runs %q, want -t 1", cmdline)
			}
		case "anykv":
			if !bytes.Contains(environ, []byte("\nGOMAXPROCS=1\n")) {
				t.Errorf("anykv environment lacks GOMAXPROCS=1")
			}
		}
		if !slices.Contains(s.Settings, "pinned to CPUs "+cpuset.String(one)+" (taskset -c)") {
			t.Errorf("%s settings %q do not state the pinning", name, s.Settings)
		}
		if err := s.Stop(); err != nil {
			t.Errorf("%s stop: %v", name, err)
		}
	}
}

// TestStartFailureSeesAPortClashUnderAStackTrace: a bind error followed by a JVM's stack trace and shutdown log
// (more than 20 lines) is still a lost race for a port, which Start retries; another failure is not.
func TestStartFailureSeesAPortClashUnderAStackTrace(t *testing.T) {
	dir := t.TempDir()
	write := func(name, first string) string {
		path := filepath.Join(dir, name)
		log := first + "\n" + strings.Repeat("\tat org.apache.cassandra.net.InboundSockets.open(InboundSockets.java:103)\n", 40)
		if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	clash := write("clash.log", "ERROR Failed to bind port 45181 on 127.0.0.1: Address already in use")
	if err := startFailure(clash, nil); !errors.Is(err, errPortInUse) {
		t.Fatalf("a bind error 41 lines up: %v, want errPortInUse", err)
	}
	other := write("other.log", "ERROR Invalid yaml")
	if err := startFailure(other, nil); errors.Is(err, errPortInUse) || err == nil {
		t.Fatalf("another failure: %v", err)
	}
}

// TestStartIsNotFooledByATakenPort: a port another process took between freePort and the server's bind (here
// another redis-server's) answers before the server started has even tried to bind it: waitReady took that
// answer for the server's and Start handed out the other process's address, with the pid of a server that
// exited. It is not run in parallel: it replaces freePort while it runs.
func TestStartIsNotFooledByATakenPort(t *testing.T) {
	if _, ok := findBinary("redis-server"); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server not installed")
		}
		t.Skip("redis-server not installed (CI unset: skipping)")
	}
	other, err := Start(context.Background(), "redis-nopersist", Options{BaseDir: baseDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Stop()
	_, port, _ := net.SplitHostPort(addrOf(t, other.URL))
	taken, _ := strconv.Atoi(port)
	picks := 0
	freePort = func() (int, error) {
		if picks++; picks == 1 {
			return taken, nil
		}
		return loopbackPort()
	}
	defer func() { freePort = loopbackPort }()
	s, err := Start(context.Background(), "redis-nopersist", Options{BaseDir: baseDir(t)})
	if err != nil {
		t.Fatalf("Start after a taken port: %v", err)
	}
	defer s.Stop()
	if s.URL == other.URL || !procnet.Listens(s.Pid, addrOf(t, s.URL)) {
		t.Fatalf("Start handed out %s (pid %d), the other server's %s, or one its process does not listen on", s.URL, s.Pid, other.URL)
	}
	if picks != 2 {
		t.Errorf("ports picked %d times, want 2 (a second try after the taken port)", picks)
	}
}
