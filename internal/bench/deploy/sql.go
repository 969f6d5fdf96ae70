package deploy

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

func init() {
	register(spec{name: "postgres", pkg: "postgresql", summary: "PostgreSQL via initdb + pg_ctl, fsync=on synchronous_commit=on", start: startPostgres})
	register(spec{name: "mariadb", pkg: "mariadb-server", summary: "MariaDB via mariadb-install-db + mariadbd, innodb_flush_log_at_trx_commit=1", start: startMariaDB})
}

// postgresBin finds the directory holding initdb and pg_ctl: the newest
// /usr/lib/postgresql/*/bin (Debian), else PATH.
func postgresBin() (string, bool) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dirs[i])), 64)
		vj, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dirs[j])), 64)
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
				return d, true
			}
		}
	}
	if p, ok := findBinary("initdb"); ok {
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "pg_ctl")); err == nil {
			return filepath.Dir(p), true
		}
	}
	return "", false
}

func startPostgres(ctx context.Context, o Options, dir string) (*Server, error) {
	bin, ok := postgresBin()
	if !ok {
		return nil, notInstalled("postgres", "postgresql")
	}
	// initdb refuses to run as root.
	acct, err := unprivileged("postgres", "nobody")
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := mkdirFor(dir, acct); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	lp := logPath(dir, "postgres")
	if acct != nil {
		// The log is written by the server user.
		if f, err := os.Create(lp); err == nil {
			f.Close()
			os.Chown(lp, acct.uid, acct.gid)
		}
	}
	// TCP clients need the password (trust on 127.0.0.1 let any user of the machine in as the superuser, who runs
	// programs as the server's account: COPY ... TO PROGRAM); the unix socket, in dir (0700), is the owner's alone.
	pw := rand.Text()
	pwfile := filepath.Join(dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(pw+"\n"), 0o600); err != nil {
		return nil, err
	}
	if acct != nil {
		if err := os.Chown(pwfile, acct.uid, acct.gid); err != nil {
			return nil, err
		}
	}
	err = runTool(ctx, 2*time.Minute, filepath.Join(bin, "initdb"),
		[]string{"-D", data, "-U", "postgres", "--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile=" + pwfile,
			"-E", "UTF8", "--no-locale", "--no-sync"},
		dir, lp, acct, nil)
	os.Remove(pwfile)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories='%s' "+
		"-c fsync=on -c synchronous_commit=on -c full_page_writes=on -c max_connections=200", port, dir)
	pgctl := filepath.Join(bin, "pg_ctl")
	// pg_ctl starts the postmaster in its own session and returns once it
	// accepts connections (-w).
	err = runTool(ctx, 2*time.Minute, pgctl, []string{"-D", data, "-l", filepath.Join(dir, "server.log"), "-w", "-t", "90", "-o", opts, "start"}, dir, lp, acct, o.CPUs)
	stop := func() error {
		err := runTool(context.Background(), 60*time.Second, pgctl, []string{"-D", data, "-m", "fast", "-w", "-t", "30", "stop"}, dir, lp, acct, nil)
		if err != nil {
			killPidFile(filepath.Join(data, "postmaster.pid"), filepath.Join(bin, "postgres"))
		}
		return err
	}
	if err != nil {
		stop()
		if portClash(logTail(filepath.Join(dir, "server.log"), 20)) {
			return nil, fmt.Errorf("postgres: %w", errPortInUse)
		}
		return nil, fmt.Errorf("postgres: %w\n%s", err, logTail(filepath.Join(dir, "server.log"), 20))
	}
	url := fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=disable", pw, port)
	if err := waitReady(ctx, nil, url, o.ReadyTimeout); err != nil {
		stop()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	user := "the bench's user"
	if acct != nil {
		user = "user " + acct.name
	}
	return &Server{URL: url, Version: output(filepath.Join(bin, "postgres"), "--version"),
		Settings: []string{
			"fsync=on, synchronous_commit=on, full_page_writes=on: each commit waits for its WAL flush",
			"initdb --no-sync (the fresh cluster files are not fsynced; the WAL of every commit is)",
			"runs as " + user + ", on 127.0.0.1 with a random password (scram-sha-256); trust only on the unix socket in the data directory",
		},
		stop: stop}, nil
}

// killPidFile SIGKILLs the process named on the first line of a pid file, if it runs the program exe: a server
// that died leaves its pid file behind, and the system may have given the pid to another process since (which
// the bench, as root, would have killed whatever it was).
func killPidFile(path, exe string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	line, _, _ := strings.Cut(string(b), "\n")
	if pid, err := strconv.Atoi(strings.TrimSpace(line)); err == nil && pid > 1 {
		if p, err := os.FindProcess(pid); err == nil { // a pidfd: the checks below and the kill reach one process
			running, err1 := os.Stat(fmt.Sprintf("/proc/%d/exe", pid))
			want, err2 := os.Stat(exe)
			if err1 == nil && err2 == nil && os.SameFile(running, want) {
				p.Kill()
			}
			p.Release()
		}
	}
}

func startMariaDB(ctx context.Context, o Options, dir string) (*Server, error) {
	server, ok1 := findBinary("mariadbd", "mysqld")
	install, ok2 := findBinary("mariadb-install-db", "mysql_install_db")
	if !ok1 || !ok2 {
		return nil, notInstalled("mariadb", "mariadb-server")
	}
	acct, err := unprivileged("mysql", "nobody")
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	if err := mkdirFor(dir, acct); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	lp := logPath(dir, "mariadb")
	var userArg []string
	if acct != nil {
		userArg = []string{"--user=" + acct.name}
	}
	if err := runTool(ctx, 2*time.Minute, install, append([]string{"--no-defaults", "--datadir=" + data,
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"}, userArg...),
		dir, lp, nil, nil); err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "mysqld.sock")
	args := append([]string{"--no-defaults", "--datadir=" + data, "--socket=" + sock,
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--pid-file=" + filepath.Join(dir, "mysqld.pid"), "--log-error=" + filepath.Join(dir, "error.log"),
		"--innodb-flush-log-at-trx-commit=1", "--innodb-doublewrite=1", "--sync-binlog=1",
		"--max-connections=200", "--skip-name-resolve"}, userArg...)
	p, err := startProc(server, args, dir, lp, nil, o.CPUs)
	if err != nil {
		return nil, err
	}
	// root may connect only through the socket; clients get a user with a password of its own over TCP.
	fail := func(err error) (*Server, error) {
		p.stop(5 * time.Second)
		if portClash(logTail(filepath.Join(dir, "error.log"), 20)) {
			return nil, fmt.Errorf("mariadb: %w", errPortInUse)
		}
		return nil, fmt.Errorf("mariadb: %w\n%s", err, logTail(filepath.Join(dir, "error.log"), 20))
	}
	if err := waitReady(ctx, p, "mysql://root@/anykv_bench?socket="+sock, o.ReadyTimeout); err != nil {
		return fail(err)
	}
	pw := rand.Text()
	host, _ := os.Hostname()
	if err := sqlAdmin(ctx, sock, "DROP USER IF EXISTS 'root'@'127.0.0.1', 'root'@'::1', 'root'@'"+host+"'",
		"CREATE USER 'anykv'@'127.0.0.1' IDENTIFIED BY '"+pw+"'",
		"GRANT ALL PRIVILEGES ON *.* TO 'anykv'@'127.0.0.1'"); err != nil {
		return fail(err)
	}
	url := fmt.Sprintf("mysql://anykv:%s@127.0.0.1:%d/anykv_bench", pw, port)
	if err := waitReady(ctx, p, url, o.ReadyTimeout); err != nil {
		return fail(err)
	}
	return &Server{URL: url, Pid: p.cmd.Process.Pid, Version: output(server, "--version"),
		Settings: []string{
			"InnoDB, innodb_flush_log_at_trx_commit=1: each commit waits for its redo log flush",
			"doublewrite on, binary log off (sync_binlog=1 would apply if enabled)",
			"TCP on 127.0.0.1 as user anykv with a random password; root only on the unix socket in the data directory",
		},
		stop: func() error { return p.stop(30 * time.Second) }}, nil
}

// sqlAdmin runs statements as root over the server's unix socket.
func sqlAdmin(ctx context.Context, sock string, stmts ...string) error {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "unix", sock
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}
