package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestDownStopsARestartedMember: Restart records the member's new pid where Down reads it, so a cluster that
// lost and regained a member leaves nothing running after Down, whoever calls it (it used to stop the dead pid
// and leak the new process unless the caller remembered to Save).
func TestDownStopsARestartedMember(t *testing.T) {
	if _, err := exec.LookPath("etcd"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("etcd not installed")
		}
		t.Skip("etcd not installed (CI unset: skipping)")
	}
	dir := filepath.Join(t.TempDir(), "c")
	st, err := Up("etcd", 1, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Down(dir) })
	if err := st.Kill(0); err != nil {
		t.Fatal(err)
	}
	if err := st.Restart(0); err != nil {
		t.Fatal(err)
	}
	pid := st.Members[0].Pid
	if err := Down(dir); err != nil {
		t.Fatal(err)
	}
	if Running(pid) == "running" {
		stopPid(pid)
		t.Fatalf("the restarted member (pid %d) still runs after Down", pid)
	}
}
