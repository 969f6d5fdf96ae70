package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"anykv/internal/servertest"
)

// TestClusterUpSurvivesAHangup: `anykv cluster up` records its members in the state file once all answer; a
// hangup (the terminal closed) while it waited killed it with members started and none recorded: they ran on,
// detached, and `anykv cluster down` found no cluster to stop. A hangup now leaves up to finish, as Ctrl-C does.
func TestClusterUpSurvivesAHangup(t *testing.T) {
	needEtcd(t)
	dir := filepath.Join(t.TempDir(), "c")
	bin := servertest.Binary(t)
	cmd := exec.Command(bin, "cluster", "up", "--engine", "etcd", "--nodes", "3", "--dir", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	members := func() []string { // the pids of the etcds of dir, by their command line
		out, _ := exec.Command("pgrep", "-f", "--", "--data-dir "+dir+"/").Output()
		return strings.Fields(string(out))
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Whatever happened, stop every etcd of this directory (found by its command line) and the state's.
		exec.Command(bin, "cluster", "down", "--dir", dir).Run()
		for _, f := range members() {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if len(members()) > 0 {
			break // a member runs; up waits for the cluster to answer
		}
		if time.Now().After(deadline) {
			t.Fatal("cluster up started no member within 30 s")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if _, serr := os.Stat(filepath.Join(dir, "cluster.json")); serr == nil {
		return // up finished and recorded its members: cluster down (deferred) stops them
	}
	if pids := members(); len(pids) > 0 {
		t.Errorf("cluster up ended (%v) on SIGHUP with %d members running and no state file for cluster down", err, len(pids))
	}
}
