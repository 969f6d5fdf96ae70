package main

import (
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"anykv/internal/servertest"
)

// nonReaders is how many clients ask for a big value and never read the reply.
const nonReaders = 30

// dialNonReader connects with a 4 KiB receive buffer, so that a big reply stays in the server.
func dialNonReader(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestBigRepliesToNonReadersStayWithinBudget: 30 clients each ask for a 32 MiB value and never read. The replies
// they hold up count against --maxmemory-clients while they are written (the clients over it are closed and their
// replies collected), so while they stay connected the server holds about the budget, not a reply each: +2 GB
// over RESP in an audit, for as long as the sockets stayed open. Another client is served meanwhile, and the
// memory goes back once the clients are gone.
func TestBigRepliesToNonReadersStayWithinBudget(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Memcache: true, HTTP: true, Args: append(budgetArgs(testBudget), "--max-value-size", "67108864")})
	other, err := net.Dial("tcp", s.RESP)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	big := strings.Repeat("v", 32*mib)
	other.SetDeadline(time.Now().Add(30 * time.Second))
	roundTrip(t, other, fmt.Sprintf("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n%s\r\n", len(big), big), "+OK\r\n")
	host := "Host: " + s.HTTP + "\r\n"
	for _, c := range []struct{ name, addr, req string }{
		{"resp", s.RESP, "GET big\r\n"},
		{"memcache", s.Memcache, "get big\r\n"},
		{"http", s.HTTP, "GET /v1/tables/default/keys/big HTTP/1.1\r\n" + host + "\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := rss(t, s.PID())
			stop := make(chan struct{})
			peak := watchRSS(t, s.PID(), stop)
			var conns []net.Conn
			for i := 0; i < nonReaders; i++ {
				nc := dialNonReader(t, c.addr)
				conns = append(conns, nc)
				if _, err := io.WriteString(nc, c.req); err != nil {
					t.Fatal(err)
				}
				time.Sleep(50 * time.Millisecond) // one at a time: the bound is on what they hold, not on a burst
			}
			roundTrip(t, other, "PING\r\n", "+PONG\r\n")
			close(stop)
			t.Logf("RSS peak %d MiB from %d MiB", peak()/mib, base/mib)
			// What the clients still connected hold: the replies of those the budget kept (the others' were
			// collected), not one per client.
			waitRSSBelow(t, s, base+3*testBudget)
			for _, nc := range conns {
				nc.Close()
			}
			waitRSSBelow(t, s, base+rssRecovered)
			roundTrip(t, other, "STRLEN big\r\n", fmt.Sprintf(":%d\r\n", len(big)))
		})
	}
}
