// Package deploy starts the datastores the bench compares on free
// 127.0.0.1 ports with temporary data directories and durable settings,
// waits until each answers, and tears it down again.
package deploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"anykv/internal/bench/cpuset"
	"anykv/internal/bench/driver"
	"anykv/internal/procnet"
)

// Options configure deployments.
type Options struct {
	// BaseDir holds one subdirectory per deployed server. It must exist.
	BaseDir string
	// AnykvBin is the anykv binary ("" to search; see FindAnykv).
	AnykvBin string
	// ReadyTimeout bounds start-up (default 60s).
	ReadyTimeout time.Duration
	// Log receives one line per start and stop (may be nil).
	Log io.Writer
	// CPUs pins each server to these cores (taskset -c); anykv also gets
	// GOMAXPROCS and memcached -t equal to their number. Nil: no pinning.
	CPUs []int
}

// Server is one running datastore.
type Server struct {
	Name     string   // deployment name, e.g. "redis-nopersist"
	URL      string   // target URL for driver.Open
	Version  string   // server version line
	Settings []string // durability and other settings, for the report
	Dir      string   // data directory
	Pid      int      // server process id (0 when a tool daemonized it, as pg_ctl does)
	// Datastore are the datastore's processes and Fronts the anykv front ends, for --kill to crash and restart
	// (empty when the deployment cannot be restarted).
	Datastore, Fronts []Node
	stop              func() error
}

// Node is one process of a deployment that can crash and come back.
type Node interface {
	Name() string
	// Kill ends the process with SIGKILL and waits until it is gone.
	Kill() error
	// Restart starts it again with the same ports and data and waits until it accepts connections (a Cassandra
	// node: until it answers CQL and its peers gossip its new incarnation).
	Restart(ctx context.Context) error
}

// Stop shuts the server down and removes its directory. It is safe to call
// more than once.
func (s *Server) Stop() error {
	if s == nil || s.stop == nil {
		return nil
	}
	err := s.stop()
	s.stop = nil
	if rerr := os.RemoveAll(s.Dir); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// NotInstalledError says a target's server is not installed here.
type NotInstalledError struct {
	Name string
	Hint string // e.g. "install Debian package redis-server"
}

func (e *NotInstalledError) Error() string { return "skipped: " + e.Hint }

// spec describes one deployable target.
type spec struct {
	name    string
	pkg     string // Debian package providing it ("" for anykv)
	summary string
	start   func(ctx context.Context, o Options, dir string) (*Server, error)
}

var specs = map[string]spec{}

func register(s spec) { specs[s.name] = s }

// Names lists the deployable targets, sorted.
func Names() []string {
	var n []string
	for k := range specs {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Describe returns a one-line description of a deployable target.
func Describe(name string) string { return specs[name].summary }

// Known reports whether name is a deployable target.
func Known(name string) bool { _, ok := specs[name]; return ok }

// Start deploys the named target and waits until it answers. A target whose
// server is not installed returns a *NotInstalledError. Cancelling ctx
// aborts start-up and tears down whatever was started.
func Start(ctx context.Context, name string, o Options) (*Server, error) {
	sp, ok := specs[name]
	if !ok {
		return nil, fmt.Errorf("unknown deployment %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 60 * time.Second
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		dir, err := os.MkdirTemp(o.BaseDir, strings.ReplaceAll(name, "+", "_")+"-") // no + in paths: URLs (a socket in a query) read it as a space
		if err != nil {
			return nil, err
		}
		// Servers running as another user must reach their directory.
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, err
		}
		s, err := sp.start(ctx, o, dir)
		if err == nil {
			s.Name, s.Dir = name, dir
			if len(o.CPUs) > 0 {
				s.Settings = append(s.Settings, "pinned to CPUs "+cpuset.String(o.CPUs)+" (taskset -c)")
			}
			logf(o.Log, "deploy: %s ready at %s (%s)\n", name, s.URL, s.Version)
			return s, nil
		}
		os.RemoveAll(dir)
		lastErr = err
		if !errors.Is(err, errPortInUse) {
			break
		}
	}
	return nil, lastErr
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}

// startFailure is the error of a server that exited during start-up: errPortInUse (Start tries again on other
// ports) if its log says it lost a race for a port, else its exit and the end of its log. The clash is looked
// for in the last 200 lines: a JVM logs a stack trace and its shutdown after the bind error (Cassandra's fell
// out of the last 20 lines, and a lost race failed the deployment instead of being retried).
func startFailure(logPath string, exit error) error {
	if portClash(logTail(logPath, 200)) {
		return fmt.Errorf("%w: %s", errPortInUse, logTail(logPath, 20))
	}
	return fmt.Errorf("server exited during start-up (%v); log %s:\n%s", exit, logPath, logTail(logPath, 20))
}

// waitReady polls the target with its driver until it answers from the process started (its process group
// holds the listener of the URL's host:port, when the URL names one), the process dies or the timeout passes.
// An answer alone is not enough: another process may have bound the port between freePort and the server's
// bind, and then answers while the server started exits (Start tries again on new ports). On failure the
// process is stopped.
func waitReady(ctx context.Context, p *proc, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	addr := tcpAddr(url)
	var lastErr error
	for {
		if p != nil && p.exited() {
			return startFailure(p.logPath, p.err)
		}
		octx, cancel := context.WithTimeout(ctx, 2*time.Second)
		d, err := driver.Open(octx, url, driver.Options{Conns: 1, Timeout: 2 * time.Second})
		cancel()
		if err == nil {
			d.Close()
			if p == nil || addr == "" || procnet.GroupListens(p.cmd.Process.Pid, addr) {
				return nil
			}
			err = fmt.Errorf("%s answers from another process", addr)
		}
		lastErr = err
		if ctx.Err() != nil {
			p.stop(5 * time.Second)
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			p.stop(5 * time.Second)
			log := ""
			if p != nil {
				log = logTail(p.logPath, 20)
			}
			return fmt.Errorf("not ready after %v: %v\n%s", timeout, lastErr, log)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tcpAddr is the host:port of a target URL, or "" when it names none (a Unix socket, several hosts).
func tcpAddr(target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return ""
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return ""
	}
	return u.Host
}

func logPath(dir, name string) string { return filepath.Join(dir, name+".log") }

// NewBaseDir creates a temporary directory for deployments that servers
// running as other users can traverse.
func NewBaseDir() (string, error) {
	dir, err := os.MkdirTemp("", "anykv-bench-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}
