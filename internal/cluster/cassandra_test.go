package cluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"anykv/internal/servertest"
)

// TestCassandraRestartWaitsForRejoin: Restart of a Cassandra node killed with SIGKILL returns only once every
// other running node gossips its new incarnation, not as soon as it answers CQL (it answers before its peers
// have heard from it). m2 is frozen (SIGSTOP) while m3 restarts: m3 answers CQL, but Restart must wait until m2
// runs again and has m3's new generation. Down then stops the restarted node. The cluster runs with
// Options.NoHints, which the nodes' own settings table must show.
func TestCassandraRestartWaitsForRejoin(t *testing.T) {
	if _, err := exec.LookPath("java"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("java not installed")
		}
		t.Skip("java not installed (CI unset: skipping)")
	}
	if _, err := CassandraJars(context.Background()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("%v (CI unset: skipping)", err)
	}
	servertest.CassandraSlot(t)
	dir := filepath.Join(t.TempDir(), "c")
	st, err := Up("cassandra", 3, dir, Options{NoHints: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("m3's log:\n%s", logTail(st.Members[2].Log, 30))
		}
		Down(dir)
	})
	var hints string
	if err := withSession(st, 0, func(s *gocql.Session) error {
		return s.Query("SELECT value FROM system_views.settings WHERE name = 'hinted_handoff_enabled'").Scan(&hints)
	}); err != nil || hints != "false" {
		t.Fatalf("hinted_handoff_enabled is %q (%v), want false", hints, err)
	}
	const m3 = "127.0.0.3"
	if err := gossipSeen(st, 2); err != nil {
		t.Fatalf("healthy cluster: %v", err)
	}
	before, err := gossipOf(st, 0, m3)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Kill(2); err != nil {
		t.Fatal(err)
	}
	if err := gossipSeen(st, 2); err == nil {
		t.Fatal("m3 counts as rejoined while it is dead")
	}
	m2 := st.Members[1].Pid
	defer syscall.Kill(m2, syscall.SIGCONT)
	if err := Freeze(m2, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- st.Restart(2) }() // st is not touched here until done
	if err := waitListening(st.Members[2].Addr, 120*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("Restart returned (%v) while m2, frozen, has not heard from the restarted m3", err)
	case <-time.After(5 * time.Second):
	}
	if err := syscall.Kill(m2, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Restart did not return after m2 resumed")
	}
	for j := range 2 {
		g, err := gossipOf(st, j, m3)
		if err != nil {
			t.Fatal(err)
		}
		if g.generation == before.generation {
			t.Errorf("%s still gossips m3's generation from before the kill (%d) after Restart returned", st.Members[j].Name, g.generation)
		}
	}
	if _, err := Down(dir); err != nil {
		t.Fatal(err)
	}
	for i, m := range st.Members {
		if st.Running(i) == "running" {
			st.stopMember(m)
			t.Errorf("%s (pid %d) still runs after Down", m.Name, m.Pid)
		}
	}
}

// TestCassandraJVMOptionsComeBeforeTheClass: the options of ANYKV_CASSANDRA_JVM_OPTS reach the JVM (after anykv's,
// before -cp and the main class, where java would take them for the program's arguments), and none without it.
func TestCassandraJVMOptionsComeBeforeTheClass(t *testing.T) {
	node := CassandraNode{Dir: t.TempDir(), Addr: "127.0.0.1", Native: 1, Storage: 2, Seed: "127.0.0.1:2", Token: "0",
		Heap: [2]string{"256m", "512m"}}
	t.Setenv(CassandraJVMOptionsEnv, "")
	_, plain, err := node.Command("java", "/lib")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(CassandraJVMOptionsEnv, " -XX:TieredStopAtLevel=1   -XX:-UsePerfData ")
	_, args, err := node.Command("java", "/lib")
	if err != nil {
		t.Fatal(err)
	}
	if len(args) != len(plain)+2 {
		t.Fatalf("%d arguments with two options, %d without", len(args), len(plain))
	}
	cp := slices.Index(args, "-cp")
	first := slices.Index(args, "-XX:TieredStopAtLevel=1")
	if first < 0 || cp < 0 || first > cp || args[first+1] != "-XX:-UsePerfData" || args[len(args)-1] != "org.apache.cassandra.service.CassandraDaemon" {
		t.Fatalf("options not in place before -cp: %q", args)
	}
	if slices.Index(plain, "-XX:TieredStopAtLevel=1") >= 0 {
		t.Fatalf("an option without the variable: %q", plain)
	}
}
