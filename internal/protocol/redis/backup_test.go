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

	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

// TestBackupFromAnotherHost: a client that is not on the server's host may have BACKUP write only under the
// backup directory (the connection here is a pipe, whose address is no loopback one); SAVE's own directory is
// there. Local clients (every other test, and `anykv backup`) may name any directory.
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
