package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"anykv/internal/bench/cpuset"
	"anykv/internal/procnet"
)

// proc is one server process in its own process group, so a terminal's
// Ctrl-C reaches only the bench, which then tears the group down itself.
type proc struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
	again   func() (*proc, error) // starts the same command again
}

// account is the unprivileged user a server runs as when the bench is root.
type account struct {
	name     string
	uid, gid int
}

// unprivileged returns the first existing user of names when running as
// root, or nil when the bench is not root (servers run as the bench's user).
func unprivileged(names ...string) (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, n := range names {
		u, err := user.Lookup(n)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &account{name: n, uid: uid, gid: gid}, nil
	}
	return nil, fmt.Errorf("running as root and none of the users %s exists", strings.Join(names, ", "))
}

// mkdirFor creates dir (and parents) owned by acct, mode 0700: also when it exists already (Start made it 0755),
// since it holds a server's unix socket, which lets in whoever reaches it.
func mkdirFor(dir string, acct *account) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	if acct != nil {
		return os.Chown(dir, acct.uid, acct.gid)
	}
	return nil
}

// command builds the exec.Cmd for bin args, run as acct via runuser when
// acct is set, and under taskset -c when cpus is set: the affinity is in
// place before the server's first instruction, so every thread it starts
// inherits it. env adds NAME=value entries to the environment.
func command(bin string, args []string, dir string, acct *account, cpus []int, env ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if acct != nil {
		runuser, err := exec.LookPath("runuser")
		if err != nil {
			runuser = "/usr/sbin/runuser"
		}
		cmd = exec.Command(runuser, append([]string{"-u", acct.name, "--", bin}, args...)...)
	} else {
		cmd = exec.Command(bin, args...)
	}
	if len(cpus) > 0 {
		taskset, ok := findBinary("taskset")
		if !ok {
			taskset = "taskset" // fails at start with a clear "not found"
		}
		cmd.Args = append([]string{"taskset", "-c", cpuset.String(cpus)}, cmd.Args...)
		cmd.Path = taskset
	}
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(append(os.Environ(), "LC_ALL=C"), env...)
	return cmd
}

// startProc starts a long-running server, pinned to cpus when set.
func startProc(bin string, args []string, dir, logPath string, acct *account, cpus []int, env ...string) (*proc, error) {
	cmd := command(bin, args, dir, acct, cpus, env...)
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, logPath: logPath, done: make(chan struct{}), again: func() (*proc, error) {
		return startProc(bin, args, dir, logPath, acct, cpus, env...)
	}}
	go func() {
		p.err = cmd.Wait()
		lf.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) error {
	if p == nil || p.exited() {
		return nil
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.done:
		return fmt.Errorf("pid %d ignored SIGTERM for %v; killed", pgid, grace)
	case <-time.After(5 * time.Second):
		return fmt.Errorf("pid %d survived SIGKILL", pgid)
	}
}

// kill sends SIGKILL to the process group, as a crash would, and waits until the process is gone.
func (p *proc) kill() error {
	if p.exited() {
		return fmt.Errorf("pid %d had already exited", p.cmd.Process.Pid)
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("pid %d survived SIGKILL", p.cmd.Process.Pid)
	}
}

// runTool runs a setup command (initdb, mariadb-install-db) to completion,
// appending its output to logPath.
func runTool(ctx context.Context, timeout time.Duration, bin string, args []string, dir, logPath string, acct *account, cpus []int) error {
	cmd := command(bin, args, dir, acct, cpus)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		err = ctx.Err()
	case <-time.After(timeout):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		err = fmt.Errorf("timed out after %v", timeout)
	}
	if f, ferr := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); ferr == nil {
		fmt.Fprintf(f, "$ %s %s\n", bin, strings.Join(args, " "))
		f.Write(out.Bytes())
		f.Close()
	}
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", filepath.Base(bin), err, tail(out.String(), 15))
	}
	return nil
}

// output runs bin args and returns its trimmed first line (for versions).
func output(bin string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(line)
}

// helpText runs bin args and returns everything it printed, whatever its
// exit status (help output often exits non-zero).
func helpText(bin string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, _ := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	return string(b)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return tail(string(b), n)
}

// freePort picks the ports of the servers started: loopbackPort, or a test's stand-in that hands out a port
// another process holds.
var freePort = loopbackPort

// loopbackPort picks a free TCP port on 127.0.0.1 below the ephemeral range (procnet.FreePort).
func loopbackPort() (int, error) { return procnet.FreePort() }

// findBinary looks name up on PATH and in the sbin directories, which a
// non-root PATH often lacks.
func findBinary(names ...string) (string, bool) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, true
		}
		for _, d := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin", "/usr/bin"} {
			p := filepath.Join(d, n)
			if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
				return p, true
			}
		}
	}
	return "", false
}

var errPortInUse = errors.New("port in use")

// portClash reports whether a failed start looks like a lost race for a port.
func portClash(log string) bool {
	l := strings.ToLower(log)
	return strings.Contains(l, "address already in use") || strings.Contains(l, "in use") && strings.Contains(l, "port")
}
