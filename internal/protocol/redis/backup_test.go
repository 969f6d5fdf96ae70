package redis

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"anykv/internal/auth"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"

	goredis "github.com/redis/go-redis/v9"
)

// TestBackupFromAnotherHost: a client that is not on the server's host may have BACKUP write only under the
// backup directory (the connection here is a pipe, whose address is no loopback one); SAVE's own directory is
// there.
func TestBackupFromAnotherHost(t *testing.T) {
	store := kv.New(memstore.New(), kv.Options{SweepInterval: -1})
	defer store.Close()
	var wrote []string
	h := New(store, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), BackupDir: "/srv/anykv-backups",
		Backup: func(_ context.Context, dir string) error { wrote = append(wrote, dir); return nil }})
	client, srv := net.Pipe()
	go h.ServeConn(context.Background(), srv)
	defer client.Close()
	client.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(client)
	for _, tc := range []struct{ dir, want string }{
		{"/root/.ssh/x", "-ERR BACKUP from another host writes only under"},
		{"/srv/anykv-backups/../etc", "-ERR BACKUP from another host"},
		{"/srv/anykv-backups", "-ERR BACKUP from another host"},
		{"/srv/anykv-backups-evil/x", "-ERR BACKUP from another host"},
		{"/srv/anykv-backups/nightly", "+OK"},
	} {
		if _, err := client.Write([]byte("*2\r\n$6\r\nBACKUP\r\n$" + itoa(int64(len(tc.dir))) + "\r\n" + tc.dir + "\r\n")); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, tc.want) {
			t.Fatalf("BACKUP %s: %q, %v; want %q", tc.dir, line, err, tc.want)
		}
	}
	if len(wrote) != 1 || wrote[0] != "/srv/anykv-backups/nightly" {
		t.Fatalf("backups written: %q", wrote)
	}
}

// TestLocalBackupAnywhereNeedsThePassword: without a password, a client on the server's host (any local user)
// may have BACKUP write only under the backup directory, not wherever the server's user may write (an audit);
// with one, a local client that gave it may name any directory.
func TestLocalBackupAnywhereNeedsThePassword(t *testing.T) {
	for _, pw := range []string{"", "sekret"} {
		var wrote []string
		ts := startServer(t, Options{BackupDir: "/srv/anykv-backups", Auth: auth.New(pw),
			Backup: func(_ context.Context, dir string) error { wrote = append(wrote, dir); return nil }}, 0)
		c := ts.client(t, &goredis.Options{Password: pw})
		err := c.Do(ctx, "BACKUP", "/root/.ssh/x").Err()
		if pw == "" && (err == nil || !strings.Contains(err.Error(), "BACKUP without a password writes only under")) ||
			pw != "" && err != nil {
			t.Fatalf("password %q: BACKUP /root/.ssh/x: %v", pw, err)
		}
		if err := c.Do(ctx, "BACKUP", "/srv/anykv-backups/nightly").Err(); err != nil {
			t.Fatalf("password %q: BACKUP under the backup directory: %v", pw, err)
		}
		if want := map[string]int{"": 1, "sekret": 2}[pw]; len(wrote) != want {
			t.Fatalf("password %q: backups written %q", pw, wrote)
		}
	}
}

// TestBackupAnywhereNeedsAUserWithAPassword: a local client that authenticated as an ACL user without a password
// (nopass: any local user may be it) is held to the backup directory as the default nopass user is; one with a
// password may name any directory.
func TestBackupAnywhereNeedsAUserWithAPassword(t *testing.T) {
	var wrote []string
	ts := startServer(t, Options{BackupDir: "/srv/anykv-backups", Auth: auth.New("sekret"),
		Backup: func(_ context.Context, dir string) error { wrote = append(wrote, dir); return nil }}, 0)
	admin := ts.client(t, &goredis.Options{Password: "sekret"})
	for _, rule := range [][]any{{"ACL", "SETUSER", "guest", "on", "nopass", "+@all", "~*"},
		{"ACL", "SETUSER", "ops", "on", ">opspw", "+@all", "~*"}} {
		if err := admin.Do(ctx, rule...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	guest := ts.client(t, &goredis.Options{Username: "guest", Password: "anything"})
	if err := guest.Do(ctx, "BACKUP", "/root/.ssh/x").Err(); err == nil || !strings.Contains(err.Error(), "writes only under") {
		t.Fatalf("BACKUP /root/.ssh/x as a nopass user: %v", err)
	}
	ops := ts.client(t, &goredis.Options{Username: "ops", Password: "opspw"})
	if err := ops.Do(ctx, "BACKUP", "/srv/elsewhere").Err(); err != nil {
		t.Fatalf("BACKUP /srv/elsewhere as a user with a password: %v", err)
	}
	if len(wrote) != 1 || wrote[0] != "/srv/elsewhere" {
		t.Fatalf("backups written: %q", wrote)
	}
}
