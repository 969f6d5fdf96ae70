package main

import (
	"bufio"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"anykv/internal/servertest"
)

// TestBenchHangupTearsDownClusters: a cluster target's members (anykv cluster up's, detached in a session of
// their own) are stopped by the bench itself, which Ctrl-C and SIGTERM let do; a hangup (the terminal or ssh
// session closed) killed the bench outright, and the three etcd members of etcd3 went on listening, with their
// data in /tmp, until someone found them. A hangup now tears down as Ctrl-C does.
func TestBenchHangupTearsDownClusters(t *testing.T) {
	needEtcd(t)
	cmd := exec.Command(servertest.Binary(t), "bench", "--deploy", "etcd3", "--records", "5000000", "--threads", "1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // as from a terminal of its own: the test's hangs up on no one
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	ready := regexp.MustCompile(`deploy: etcd3 ready at etcd://(\S+)`)
	var members []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := ready.FindStringSubmatch(sc.Text()); m != nil {
			members = strings.Split(m[1], ",")
			break
		}
	}
	if len(members) != 3 {
		t.Fatalf("the bench did not say where etcd3 is: %v", sc.Err())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the bench did not end within 60 s of SIGHUP")
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, a := range members {
		for {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err != nil {
				break
			}
			c.Close()
			if time.Now().After(deadline) {
				t.Errorf("etcd member %s still listens after the bench hung up and exited", a)
				// Stop the orphan, found by its command line, and the others' too, with their data.
				out, _ := exec.Command("pgrep", "-f", "--", "--listen-client-urls http://"+a+" ").Output()
				for _, f := range strings.Fields(string(out)) {
					if pid, err := strconv.Atoi(f); err == nil {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
