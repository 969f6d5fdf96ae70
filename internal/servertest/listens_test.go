package servertest

import (
	"net"
	"os"
	"os/exec"
	"testing"
)

// TestListensOn: the test process owns its own listener; a child process (sleep) owns none of it.
func TestListensOn(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp: listensOn cannot tell, and answers true")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if !listensOn(os.Getpid(), ln.Addr().String()) {
		t.Fatal("the test process does not own its listener")
	}
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if listensOn(cmd.Process.Pid, ln.Addr().String()) {
		t.Fatal("another process owns the test's listener")
	}
}
