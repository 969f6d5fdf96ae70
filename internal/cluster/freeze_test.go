package cluster

import (
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// spins keeps TestFreezeStopsEveryThread's child threads busy.
var spins atomic.Int64

// TestFreezeStopsEveryThread: Freeze returns only once every thread of the process is stopped, here a child with
// four threads spinning (a plain SIGSTOP returns while some still run), and SIGCONT resumes them.
func TestFreezeStopsEveryThread(t *testing.T) {
	if os.Getenv("ANYKV_FREEZE_CHILD") == "1" {
		for range 4 {
			go func() {
				runtime.LockOSThread()
				for {
					spins.Add(1)
				}
			}()
		}
		time.Sleep(time.Minute)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFreezeStopsEveryThread$")
	cmd.Env = append(os.Environ(), "ANYKV_FREEZE_CHILD=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	time.Sleep(200 * time.Millisecond) // its threads start spinning
	if err := Freeze(cmd.Process.Pid, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if stopped, err := allStopped(cmd.Process.Pid); err != nil || !stopped {
		t.Fatalf("after Freeze: every thread stopped %v, %v", stopped, err)
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if stopped, err := allStopped(cmd.Process.Pid); err != nil || stopped {
		t.Fatalf("after SIGCONT: every thread stopped %v, %v", stopped, err)
	}
}
