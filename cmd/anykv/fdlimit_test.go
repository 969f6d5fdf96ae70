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

// TestOpenFileLimitRefusesClientsNotTheEngine: clients that never authenticate, opening more connections than
// the open-file limit has room for, do not get more than that room while the engine keeps the descriptors it
// needs: past it each new one closes the oldest unauthenticated one (internal/server/pending.go), and an
// authenticated client keeps its connection and writes enough for Pebble to create new WAL and sstable files;
// the server stays up. With connections limited only per listener (10000 each) the descriptors ran out, Pebble
// could not rotate its WAL and the process panicked (the audit's case).
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
	for _, h := range held { // a closed connection has its end waiting; one still open times out
		_ = h.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
		line, err := bufio.NewReader(h).ReadString('\n')
		if line != "" || !errors.Is(err, os.ErrDeadlineExceeded) {
			refused++
		}
	}
	if refused < 1000 {
		t.Fatalf("%d of 1600 idle connections closed under an open-file limit of 1500; want most", refused)
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

// TestUnauthenticatedClientsCannotLockOthersOut: connections that never authenticate filled --maxclients and
// kept every client that knows the password out (the last session's open question; Redis has the same door).
// Now a connection arriving at the limit closes the oldest unauthenticated one: a client with the password gets
// in over RESP and memcached alike, and once in keeps its connection whatever arrives after it.
func TestUnauthenticatedClientsCannotLockOthersOut(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Memcache: true, Args: []string{"--requirepass", "pw", "--maxclients", "5"}})
	for _, addr := range []string{s.RESP, s.Memcache} {
		var idle []net.Conn
		for i := 0; i < 5; i++ { // the whole limit, held without a password
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			idle = append(idle, c)
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		r := bufio.NewReader(c)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		login, want := "AUTH pw\r\n", "+OK\r\n"
		if addr == s.Memcache {
			login, want = "set auth 0 0 7\r\nuser pw\r\n", "STORED\r\n"
		}
		c.Write([]byte(login))
		if line, err := r.ReadString('\n'); line != want {
			t.Fatalf("%s: logging in with the limit held by unauthenticated clients: %q, %v", addr, line, err)
		}
		for i := 0; i < 5; i++ { // five more: the idle ones go, the authenticated one stays
			if x, err := net.Dial("tcp", addr); err == nil {
				defer x.Close()
			}
		}
		time.Sleep(100 * time.Millisecond)
		ping, pong := "PING\r\n", "+PONG\r\n"
		if addr == s.Memcache {
			ping, pong = "version\r\n", "VERSION"
		}
		c.Write([]byte(ping))
		if line, err := r.ReadString('\n'); !strings.HasPrefix(line, pong) {
			t.Fatalf("%s: the authenticated client after more arrived: %q, %v", addr, line, err)
		}
		closed := 0
		for _, h := range idle {
			h.SetReadDeadline(time.Now().Add(time.Second))
			if _, err := h.Read(make([]byte, 64)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				closed++
			}
		}
		if closed != 5 {
			t.Fatalf("%s: %d of the 5 first unauthenticated connections closed, want all", addr, closed)
		}
	}
}
