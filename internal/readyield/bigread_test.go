package readyield

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestBigReadThatDidNotParkIsNoWakeUp: Read takes a read's duration as the sign that it parked in the
// netpoller, but a read that found its data and copied a big request (a SET of a few MiB, a TLS record to
// decrypt, a loaded VM's slow syscall) lasts as long. Each such read re-arms Yield for maxStarve although the
// netpoller did not run, so a stream of big requests keeps every connection yielding and the parked ones wait
// for sysmon's 10 ms poll: the bound the package promises does not hold.
func TestBigReadThatDidNotParkIsNoWakeUp(t *testing.T) {
	oneCore(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cli, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const size = 2 << 20
	srv.(*net.TCPConn).SetReadBuffer(8 << 20)
	payload := make([]byte, size)
	go func() { cli.Write(payload) }()
	buf := make([]byte, size)
	// Let the whole payload arrive, so that the next read finds data and does not park.
	first, _ := io.ReadFull(srv, buf[:1])
	time.Sleep(100 * time.Millisecond)
	now := Now()
	if Yield(now) {
		t.Fatal("yields before any wake-up")
	}
	start := Now()
	n, err := srv.Read(buf)
	end := Now()
	Read(start, end, n)
	t.Logf("read %d bytes (after %d) in %v without parking", n, first, time.Duration(end-start))
	if err == nil && n > 256<<10 && Yield(end+1) {
		t.Errorf("a %d-byte read that found its data (%v) counted as a netpoller wake-up: connections yield for %v more",
			n, time.Duration(end-start), maxStarve)
	}
}
