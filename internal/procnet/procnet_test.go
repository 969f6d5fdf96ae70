package procnet

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func needProc(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp: Listens cannot tell, and answers true")
	}
}

// TestListens: the test process holds its own listener; a child process (sleep) holds none of it, nor does a
// process that is gone.
func TestListens(t *testing.T) {
	needProc(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if !Listens(os.Getpid(), ln.Addr().String()) {
		t.Fatal("the test process does not hold its listener")
	}
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if Listens(cmd.Process.Pid, ln.Addr().String()) {
		t.Fatal("another process holds the test's listener")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if Listens(cmd.Process.Pid, ln.Addr().String()) {
		t.Fatal("a process that is gone holds the test's listener")
	}
}

// TestGroupListens: a listener held by a child of a process group's leader counts for the group (a server
// started through runuser, which forks it); a group whose processes hold none of it does not.
func TestGroupListens(t *testing.T) {
	needProc(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	f, err := ln.(*net.TCPListener).File()
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// sh, the group's leader, starts python with the listener as its fd 3, closes its own copy, and waits.
	leader := exec.Command("sh", "-c", py+` -c 'import time; time.sleep(10)' & exec 3<&-; wait`)
	leader.ExtraFiles = []*os.File{f}
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-leader.Process.Pid, syscall.SIGKILL); leader.Wait() }()
	f.Close() // now only the group holds it
	other := exec.Command("sleep", "10")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	deadline := time.Now().Add(5 * time.Second)
	for Listens(leader.Process.Pid, addr) { // until sh has closed its copy
		if time.Now().After(deadline) {
			t.Fatal("sh kept the listener")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !GroupListens(leader.Process.Pid, addr) {
		t.Fatal("the group whose child holds the listener does not listen")
	}
	if GroupListens(other.Process.Pid, addr) {
		t.Fatal("a group that holds nothing listens")
	}
}

// TestFreePortIsBelowTheEphemeralRange: FreePort's ports are free and below the ephemeral range by 10,000 at
// least (there no outgoing connection can take them before the server binds), and not always the same one.
func TestFreePortIsBelowTheEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skip("no /proc/sys/net/ipv4/ip_local_port_range")
	}
	lo, _ := strconv.Atoi(strings.Fields(string(b))[0])
	seen := map[int]bool{}
	for range 20 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if lo > 21000 && (p < 10000 || p >= lo-10000) {
			t.Fatalf("FreePort = %d, want one in [10000, %d)", p, lo-10000)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("FreePort's %d: %v", p, err)
		}
		l.Close()
		seen[p] = true
	}
	if len(seen) < 10 {
		t.Errorf("20 picks gave %d ports", len(seen))
	}
}
