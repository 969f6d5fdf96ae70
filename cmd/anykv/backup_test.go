package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"anykv/internal/servertest"
)

// TestBackupDuringWrites: clients write while `anykv backup` copies the data; a server started on the copy
// serves every write acknowledged before the backup began, with its value.
func TestBackupDuringWrites(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Args: []string{"--requirepass", "sekret"}})
	c := client(t, s.RESP)
	c.Options().Password = "sekret"
	var mu sync.Mutex
	acked := map[string]string{}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				k, v := fmt.Sprintf("w%d:%d", w, i), fmt.Sprintf("value-%d-%d", w, i)
				if err := c.Set(ctx, k, v, 0).Err(); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[k] = v
				mu.Unlock()
			}
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for n := 0; n < 500; { // let the load get going
		if t.Failed() || time.Now().After(deadline) { // the writers gave up, or are stuck
			stop.Store(true)
			wg.Wait()
			t.Fatalf("%d writes acknowledged before the backup was to start; want 500", n)
		}
		time.Sleep(10 * time.Millisecond)
		mu.Lock()
		n = len(acked)
		mu.Unlock()
	}
	mu.Lock()
	before := make(map[string]string, len(acked))
	for k, v := range acked {
		before[k] = v
	}
	mu.Unlock()
	dest := filepath.Join(t.TempDir(), "copy")
	out, err := exec.Command(servertest.Binary(t), "backup", "--resp", s.RESP, "--requirepass", "sekret", dest).CombinedOutput()
	stop.Store(true)
	wg.Wait()
	if err != nil || !strings.Contains(string(out), "written to "+dest) {
		t.Fatalf("anykv backup: %v: %s", err, out)
	}
	if out, err := exec.Command(servertest.Binary(t), "backup", "--resp", s.RESP, dest+"2").CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "NOAUTH") {
		t.Fatalf("backup without the password: %v: %s", err, out)
	}

	restored := servertest.Start(t, servertest.Options{Dir: dest})
	rc := client(t, restored.RESP)
	for k, v := range before {
		if got, err := rc.Get(ctx, k).Result(); err != nil || got != v {
			t.Fatalf("%s in the copy: %q, %v; want %q (acknowledged before the backup began)", k, got, err, v)
		}
	}
	t.Logf("%d writes acknowledged before the backup, all in the copy", len(before))
}

// TestBgsaveAndLastsave: BGSAVE answers at once and writes a copy under --backup-dir; LASTSAVE moves when it is
// done. An engine that cannot copy itself says so.
func TestBgsaveAndLastsave(t *testing.T) {
	backups := filepath.Join(t.TempDir(), "backups")
	s := servertest.Start(t, servertest.Options{Args: []string{"--backup-dir", backups}})
	c := client(t, s.RESP)
	c.Set(ctx, "k", "v", 0)
	first, err := c.LastSave(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // LASTSAVE counts seconds: let the next one differ
	if got, err := c.BgSave(ctx).Result(); err != nil || got != "Background saving started" {
		t.Fatalf("BGSAVE: %q, %v", got, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := c.LastSave(ctx).Result()
		if err == nil && n > first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("LASTSAVE still %d (%v) 10 s after BGSAVE", n, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	entries, err := os.ReadDir(backups)
	if err != nil || len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), "bgsave-") {
		t.Fatalf("backup dir: %v, %v", entries, err)
	}
	if got, err := c.Save(ctx).Result(); err != nil || got != "OK" {
		t.Fatalf("SAVE: %q, %v", got, err)
	}
	if err := c.Do(ctx, "BACKUP", "relative/dir").Err(); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Fatalf("BACKUP of a relative path: %v", err)
	}

	mem := servertest.Start(t, servertest.Options{Engine: "memory"})
	if err := client(t, mem.RESP).BgSave(ctx).Err(); err == nil || !strings.Contains(err.Error(), "not supported by this engine") {
		t.Fatalf("BGSAVE on the memory engine: %v", err)
	}
}
