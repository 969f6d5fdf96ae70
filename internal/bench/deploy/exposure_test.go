package deploy

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"anykv/internal/servertest"
)

// asNobody runs bin args as user nobody (runuser): another local user of the machine, who must not get into
// what the bench deploys. It needs root; the test skips without it, except under CI=true.
func asNobody(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command("runuser", append([]string{"-u", "nobody", "--", bin}, args...)...).CombinedOutput()
	return string(out), err
}

func needRootAnd(t *testing.T, bins ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root, to probe as another user")
		}
		t.Skip("needs root, to probe as another user")
	}
	for _, b := range append([]string{"runuser"}, bins...) {
		if _, err := exec.LookPath(b); err != nil {
			t.Fatalf("%s missing: %v", b, err)
		}
	}
}

// TestPostgresTargetRefusesOtherLocalUsers: the postgres target once ran initdb -A trust, so any user of the
// machine could connect to 127.0.0.1:PORT as the superuser postgres, without a password, and run programs as the
// server's account (COPY ... TO PROGRAM): as root, the account postgres, which owns the system's own clusters.
// Now TCP clients need the password the target URL carries, and the unix socket is in a directory of mode 0700.
func TestPostgresTargetRefusesOtherLocalUsers(t *testing.T) {
	t.Parallel()
	needRootAnd(t, "psql")
	s, err := Start(context.Background(), "postgres", Options{BaseDir: baseDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" {
		t.Errorf("target URL %s carries no password", s.URL)
	}
	u.User = url.User(u.User.Username())
	out, err := asNobody(t, "psql", "-w", "-X", u.String(), "-c", "COPY (SELECT 1) TO PROGRAM 'true'")
	if err == nil {
		t.Errorf("another local user ran COPY TO PROGRAM as the superuser without a password:\n%s", out)
	} else if !strings.Contains(out, "password") {
		t.Errorf("psql without the password failed otherwise than on it: %v\n%s", err, out)
	}
	if out, err := asNobody(t, "psql", "-w", "-X", "-h", s.Dir, "-p", u.Port(), "-U", "postgres", "-c", "SELECT 1"); err == nil {
		t.Errorf("another local user connected through the unix socket in %s:\n%s", s.Dir, out)
	}
	u.User = url.UserPassword(u.User.Username(), pw)
	if out, err := asNobody(t, "psql", "-w", "-X", u.String(), "-c", "SELECT 1"); err != nil {
		t.Errorf("the target URL itself does not connect: %v\n%s", err, out)
	}
}

// TestMariaDBTargetRefusesOtherLocalUsers: root@localhost has no password on the unix socket, which the
// target's directory must keep to the server's account; it was left at mode 0755 (Start's), so any user of the
// machine connected as root, with the FILE privilege (files read and written as the server's account).
func TestMariaDBTargetRefusesOtherLocalUsers(t *testing.T) {
	t.Parallel()
	needRootAnd(t, "mariadb", "mariadbd")
	s, err := Start(context.Background(), "mariadb", Options{BaseDir: baseDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	sock := filepath.Join(s.Dir, "mysqld.sock")
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("no socket where the test looks for it: %v", err)
	}
	if out, err := asNobody(t, "mariadb", "--no-defaults", "-S", sock, "-u", "root", "-e", "SELECT CURRENT_USER()"); err == nil {
		t.Errorf("another local user connected as root through %s:\n%s", sock, out)
	}
	if st, err := os.Stat(s.Dir); err != nil {
		t.Error(err)
	} else if st.Mode().Perm()&0o077 != 0 {
		t.Errorf("target directory %s has mode %v: open to other users", s.Dir, st.Mode().Perm())
	}
}

// TestFrontEndsKeepPasswordsOffTheCommandLine: anykv over a deployed postgres or mariadb was started as
// `anykv serve --engine URL`, the URL with the datastore's password, which ps shows to every user of the machine
// (/proc/PID/cmdline is world-readable): the mariadb user anykv has every privilege, FILE included. The URL
// now goes through the front end's environment (ANYKV_ENGINE), which only its owner reads.
func TestFrontEndsKeepPasswordsOffTheCommandLine(t *testing.T) {
	t.Parallel()
	bin := servertest.Binary(t)
	for _, name := range []string{"anykv+postgres", "anykv+mariadb"} {
		t.Run(name, func(t *testing.T) {
			s, err := Start(context.Background(), name, Options{BaseDir: baseDir(t), AnykvBin: bin})
			if err != nil {
				if _, ok := err.(*NotInstalledError); ok && os.Getenv("CI") != "true" {
					t.Skip(err)
				}
				t.Fatal(err)
			}
			defer s.Stop()
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", s.Pid))
			if err != nil {
				t.Fatal(err)
			}
			args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
			if !slices.Contains(args, "serve") {
				t.Fatalf("pid %d is not the front end: %q", s.Pid, args)
			}
			for _, a := range args {
				if u, err := url.Parse(a); err == nil && u.User != nil {
					if _, ok := u.User.Password(); ok {
						t.Errorf("the front end's command line shows a password: %q", a)
					}
				}
			}
			settings := strings.Join(s.Settings, "; ")
			if !strings.Contains(settings, "datastore: ") || !strings.Contains(settings, "over ") {
				t.Errorf("settings %q do not say what the front end serves", settings)
			}
		})
	}
}

// TestKillPidFileSparesAReusedPid: when pg_ctl stop fails, the postgres target SIGKILLs the pid in
// postmaster.pid, which a server that died leaves behind; it killed whatever process had the pid since. Now only
// a process running the postgres program is killed.
func TestKillPidFileSparesAReusedPid(t *testing.T) {
	t.Parallel()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	pidfile := filepath.Join(t.TempDir(), "postmaster.pid")
	for _, c := range []struct {
		exe      string
		survives bool
	}{{"/bin/sh", true}, {sleep, false}} {
		cmd := exec.Command(sleep, "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if err := os.WriteFile(pidfile, fmt.Appendf(nil, "%d\n/data\n", cmd.Process.Pid), 0o600); err != nil {
			t.Fatal(err)
		}
		killPidFile(pidfile, c.exe)
		select {
		case <-done:
			if c.survives {
				t.Errorf("killPidFile(%s) killed pid %d, which runs %s", c.exe, cmd.Process.Pid, sleep)
			}
		case <-time.After(500 * time.Millisecond):
			if !c.survives {
				t.Errorf("killPidFile(%s) left the process alone", c.exe)
			}
			cmd.Process.Kill()
			<-done
		}
	}
}
