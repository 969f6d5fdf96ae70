// Package servertest starts the real anykv binary on free loopback ports for end-to-end tests, and kills,
// restarts and stops it as a test needs. The binary comes from $ANYKV_BIN, or is built once per test process
// (into one place per checkout, see build).
package servertest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"anykv/internal/procnet"
)

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// Binary returns the path of an anykv binary: $ANYKV_BIN if set, else one built from this checkout.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("ANYKV_BIN"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		built, buildErr = build(root)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

// build compiles root's cmd/anykv into a directory of the temp dir named after root, so that test runs reuse
// one binary per checkout instead of leaving a 60 MB copy behind each; the packages' test processes build in
// parallel, so each writes its own file and renames it into place.
func build(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	dir := filepath.Join(os.TempDir(), "anykv-test-bin-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "anykv-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command("go", "build", "-o", tmp.Name(), "./cmd/anykv")
	cmd.Dir = abs
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "anykv")
	return bin, os.Rename(tmp.Name(), bin)
}

// FreePort returns a loopback address with a port that was free a moment ago, below the ephemeral range
// (procnet.FreePort), so that no outgoing connection can take it before the server binds it, also when it is
// restarted on it.
func FreePort(t testing.TB) string {
	t.Helper()
	p, err := procnet.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
}

// FreePortOn returns an address of host (an IP of this machine) with a port that was free a moment ago.
func FreePortOn(t testing.TB, host string) string {
	t.Helper()
	if host == "127.0.0.1" {
		return FreePort(t)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Options choose how the server runs. Zero values: pebble engine, fsync always, a fresh temp dir, RESP only.
type Options struct {
	Engine, Fsync, Dir string
	Memcache, HTTP     bool     // also listen for memcached and HTTP
	Host               string   // the IP every listener binds (default 127.0.0.1)
	Args               []string // extra flags
	Env                []string // extra environment
	MaxFiles           int      // if set, the open-file limit (soft and hard) anykv runs under (ulimit -n)
}

// Server is a running anykv process.
type Server struct {
	t                    testing.TB
	opts                 Options
	RESP, Memcache, HTTP string // listen addresses ("" when off)
	Dir                  string
	cmd                  *exec.Cmd
	out                  *SyncBuffer
	exited               chan struct{}
}

// Start runs anykv and waits until it accepts connections; the test's cleanup stops it.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Engine == "" {
		opts.Engine = "pebble"
	}
	if opts.Fsync == "" {
		opts.Fsync = "always"
	}
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	s := &Server{t: t, opts: opts, Dir: opts.Dir}
	// A port free a moment ago may be taken by a test running in parallel before anykv binds it: then the
	// server is started again on fresh ports, a few times.
	for attempt := 1; ; attempt++ {
		s.RESP, s.Memcache, s.HTTP = FreePortOn(t, opts.Host), "", ""
		if opts.Memcache {
			s.Memcache = FreePortOn(t, opts.Host)
		}
		if opts.HTTP {
			s.HTTP = FreePortOn(t, opts.Host)
		}
		out, ok := s.launch()
		if ok {
			break
		}
		if attempt == 5 || !s.lostItsPort(out) {
			t.Fatalf("anykv exited during start-up:\n%s", out)
		}
	}
	t.Cleanup(func() {
		if s.running() {
			s.cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("anykv output:\n%s", s.Output())
		}
	})
	return s
}

func (s *Server) args() []string {
	a := []string{"serve", "--dir", s.Dir, "--engine", s.opts.Engine, "--fsync", s.opts.Fsync, "--resp", s.RESP,
		"--log-level", "warn"}
	// Listeners not asked for are switched off: their default ports may be taken (Debian starts memcached on
	// 11211 when it installs it) or used by a parallel test.
	a = append(a, "--memcache", s.Memcache, "--http", s.HTTP)
	// The default reserve is 2% of the file system: on a shared test machine whose disk is 98% full every
	// server would refuse writes, and tests about other things would fail. A test of the reserve sets its own
	// (a later flag wins).
	a = append(a, "--min-free-space", "64MiB")
	return append(a, s.opts.Args...)
}

// lostItsPort reports whether out says one of the ports Start chose was taken.
func (s *Server) lostItsPort(out string) bool {
	for _, a := range []string{s.RESP, s.Memcache, s.HTTP} {
		if a != "" && strings.Contains(out, "cannot listen on "+a) && strings.Contains(out, "address already in use") {
			return true
		}
	}
	return false
}

func (s *Server) start() {
	s.t.Helper()
	if out, ok := s.launch(); !ok {
		s.t.Fatalf("anykv exited during start-up:\n%s", out)
	}
}

// launch runs the process and waits until it accepts connections; false, with its output, if it exited first.
func (s *Server) launch() (string, bool) {
	s.t.Helper()
	s.out = &SyncBuffer{}
	s.cmd = exec.Command(Binary(s.t), s.args()...)
	if s.opts.MaxFiles > 0 { // the shell execs anykv: the process, its PID included, is anykv's
		s.cmd = exec.Command("/bin/sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, s.opts.MaxFiles),
			Binary(s.t)}, s.args()...)...)
	}
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.Env = append(os.Environ(), s.opts.Env...)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.exited = make(chan struct{})
	go func() { s.cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.RESP, 200*time.Millisecond)
		if err == nil {
			c.Close()
			if procnet.Listens(s.cmd.Process.Pid, s.RESP) {
				return "", true
			} // else another process listens on the port: this one will fail to bind it, and exit
		}
		if !s.running() {
			return s.Output(), false
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("anykv did not accept connections within 20s:\n%s", s.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *Server) running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (s *Server) Kill() {
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// Restart starts the server again on the same ports and data directory.
func (s *Server) Restart() { s.start() }

// Stop sends SIGTERM and returns the exit code once the process ends (within 30s).
func (s *Server) Stop() int {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.t.Fatalf("anykv did not exit within 30s of SIGTERM:\n%s", s.Output())
	}
	return s.cmd.ProcessState.ExitCode()
}

// PID returns the process id of the running server (for reading /proc/<pid>/status in memory tests).
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Output returns what the process printed so far.
func (s *Server) Output() string { return s.out.String() }

// Args returns the command-line arguments the server runs with (for tools that start their own).
func (s *Server) Args() []string { return s.args() }

// SyncBuffer is a bytes.Buffer safe for concurrent writers and readers: a process's or a logger's output.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Clone(b.b.String())
}
