package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/servertest"
)

// TestACLFileSurvivesRestart: users made with ACL SETUSER and written by ACL SAVE to --aclfile are there after the
// binary restarts: the user authenticates with its password, keeps its key patterns, and a wrong password fails.
func TestACLFileSurvivesRestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := servertest.Start(t, servertest.Options{Fsync: "never", Args: []string{"--aclfile", file}})
	admin := client(t, s.RESP)
	if err := admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">s3cret", "~app:*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do(ctx, "ACL", "SAVE").Err(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); strings.Contains(string(b), "s3cret") || !strings.Contains(string(b), "user app on #") {
		t.Fatalf("the ACL file: %s", b)
	}
	if code := s.Stop(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	s.Restart()
	app := goredis.NewClient(&goredis.Options{Addr: s.RESP, Username: "app", Password: "s3cret", MaxRetries: -1})
	defer app.Close()
	if err := app.Set(ctx, "app:1", "v", 0).Err(); err != nil {
		t.Fatalf("the saved user after a restart: %v", err)
	}
	if err := app.Set(ctx, "other", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("a key outside the user's patterns: %v", err)
	}
	bad := goredis.NewClient(&goredis.Options{Addr: s.RESP, Username: "app", Password: "wrong", MaxRetries: -1})
	defer bad.Close()
	if err := bad.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
		t.Fatalf("a wrong password: %v", err)
	}
}

// TestACLFileReadBeforeAnyListener: --aclfile may restrict the default user, whose rules memcached, HTTP and pprof
// clients act under, so it is read before any listener opens. Those listeners opened first and served for the
// time the file took to read under --requirepass alone; a file that does not load now stops the server before
// any "listening" line (before, memcached's and HTTP's came first).
func TestACLFileReadBeforeAnyListener(t *testing.T) {
	file := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(file, []byte("user default on >pw ~* &* +@all\nnot a user line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(servertest.Binary(t), "serve", "--engine", "memory", "--aclfile", file,
		"--resp", servertest.FreePort(t), "--memcache", servertest.FreePort(t), "--http", servertest.FreePort(t),
		"--pprof", servertest.FreePort(t)).CombinedOutput()
	if err == nil {
		t.Fatalf("serve with a bad --aclfile started: %s", out)
	}
	if !strings.Contains(string(out), "--aclfile") {
		t.Fatalf("serve failed without naming --aclfile: %s", out)
	}
	if strings.Contains(string(out), "msg=listening") {
		t.Errorf("a listener opened before --aclfile was read:\n%s", out)
	}
}
