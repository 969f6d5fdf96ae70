package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/servertest"
)

// TestOpenFileLimitRefusesClientsNotTheEngine: clients that never authenticate, holding more connections than
// the open-file limit has room for, are refused with Redis's "max number of clients reached" while the engine
// keeps the descriptors it needs: an authenticated client then writes enough for Pebble to create new WAL and
// sstable files, and the server stays up. With connections limited only per listener (10000 each) the
// descriptors ran out, Pebble could not rotate its WAL and the process panicked (the audit's case).
func TestOpenFileLimitRefusesClientsNotTheEngine(t *testing.T) {
	s := servertest.Start(t, servertest.Options{MaxFiles: 1500, Args: []string{"--requirepass", "pw"}})
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: s.RESP, Password: "pw", PoolSize: 1, MaxRetries: -1})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil { // its one connection is made before the others take the room
		t.Fatal(err)
	}
	var held []net.Conn
	defer func() {
		for _, h := range held {
			h.Close()
		}
	}()
	refused := 0
	for i := 0; i < 1600; i++ {
		h, err := net.DialTimeout("tcp", s.RESP, 2*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		held = append(held, h)
	}
	answered := 0
	for _, h := range held { // a refused connection has its answer, or its end, waiting; an admitted one times out
		_ = h.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
		line, err := bufio.NewReader(h).ReadString('\n')
		if strings.Contains(line, "max number of clients reached") {
			answered++ // the server answers 64 refusals at a time and closes the rest unanswered
		}
		if line != "" || !errors.Is(err, os.ErrDeadlineExceeded) {
			refused++
		}
	}
	if answered == 0 {
		t.Fatal("no refused connection was answered")
	}
	if refused < 1000 {
		t.Fatalf("%d of 1600 idle connections refused under an open-file limit of 1500; want most", refused)
	}
	big := strings.Repeat("x", 1<<20)
	for i := 0; i < 40; i++ { // 40 MiB: memtables rotate, flush and compact, WALs are created
		if err := c.Set(ctx, fmt.Sprint("k", i), big, 0).Err(); err != nil {
			t.Fatalf("SET %d with the idle connections held: %v\n%s", i, err, s.Output())
		}
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 40 {
		t.Fatalf("DBSIZE = %d, %v", n, err)
	}
	if out := s.Output(); strings.Contains(out, "panic") || strings.Contains(out, "fatal error") {
		t.Fatalf("the server panicked:\n%s", out)
	}
}
