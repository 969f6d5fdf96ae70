package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"anykv/internal/servertest"
)

// runBinary runs the anykv binary to its end and returns its exit code and output.
func runBinary(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(servertest.Binary(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("anykv %v did not end within 30s:\n%s", args, out.String())
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// lastWAL returns the name of the newest WAL file in dir that holds at least 40 bytes (Close leaves a newer,
// nearly empty one after flushing the memtable).
func lastWAL(t *testing.T, dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, e := range entries {
		if info, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".log") && info.Size() >= 40 {
			logs = append(logs, e.Name())
		}
	}
	if len(logs) == 0 {
		t.Fatalf("no WAL in %s", dir)
	}
	sort.Strings(logs)
	return logs[len(logs)-1]
}

// TestVerifyAndRecoverEndToEnd: the real binary. A store shut down cleanly verifies healthy. One byte flipped
// 40 bytes before the end of the last WAL (which, before the clean-shutdown record, lost keys silently): `anykv
// verify` exits 1 naming the WAL, `anykv serve` refuses to start naming it and saying what to do, `anykv serve
// --recover` starts, logs what it dropped and serves every key (and `anykv verify` refuses the store in use);
// background verification shows in INFO and /metrics; after a clean stop the store verifies healthy again.
func TestVerifyAndRecoverEndToEnd(t *testing.T) {
	const keys = 2000
	s := servertest.Start(t, servertest.Options{HTTP: true})
	c := client(t, s.RESP)
	p := c.Pipeline()
	for i := 0; i < keys; i++ {
		p.Set(ctx, fmt.Sprintf("key:%d", i), fmt.Sprintf("value:%d", i), 0)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx, "persistence").Result()
	if err != nil || !strings.Contains(info, "engine_verify_runs:0") || !strings.Contains(info, "engine_verify_corrupt_files:0") {
		t.Fatalf("INFO persistence lacks the verification figures (%v):\n%s", err, info)
	}
	if code := s.Stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}

	code, out := runBinary(t, "verify", s.Dir)
	if code != 0 || !strings.Contains(out, "healthy") || !strings.Contains(out, fmt.Sprintf("%d items", keys)) {
		t.Fatalf("verify of a healthy store: exit %d\n%s", code, out)
	}

	wal := lastWAL(t, s.Dir)
	path := filepath.Join(s.Dir, wal)
	data, err := os.ReadFile(path)
	if err != nil || len(data) < 40 {
		t.Fatalf("WAL %s: %d bytes, %v", wal, len(data), err)
	}
	data[len(data)-40] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}

	code, out = runBinary(t, "verify", s.Dir)
	if code != 1 || !strings.Contains(out, "DAMAGED") || !strings.Contains(out, wal) {
		t.Fatalf("verify of a damaged store: exit %d, want 1 naming %s\n%s", code, wal, out)
	}
	code, out = runBinary(t, "serve", "--dir", s.Dir, "--resp", servertest.FreePort(t), "--memcache", "", "--http", "")
	if code != 1 || !strings.Contains(out, wal) || !strings.Contains(out, "anykv verify "+s.Dir) || !strings.Contains(out, "--recover") {
		t.Fatalf("serve on a damaged store: exit %d, want 1 naming %s, `anykv verify` and --recover\n%s", code, wal, out)
	}

	r := servertest.Start(t, servertest.Options{Dir: s.Dir, HTTP: true, Args: []string{"--recover", "--verify-interval", "20ms"}})
	if out := r.Output(); !strings.Contains(out, "opened a damaged store") || !strings.Contains(out, wal) {
		t.Fatalf("--recover does not report what it went past:\n%s", out)
	}
	if code, out := runBinary(t, "verify", s.Dir); code != 2 || !strings.Contains(out, "in use") {
		t.Fatalf("verify of a store in use: exit %d, want 2 and \"in use\"\n%s", code, out)
	}
	c = client(t, r.RESP)
	for i := 0; i < keys; i++ {
		if v, err := c.Get(ctx, fmt.Sprintf("key:%d", i)).Result(); err != nil || v != fmt.Sprintf("value:%d", i) {
			t.Fatalf("key:%d after --recover: %q, %v", i, v, err)
		}
	}
	deadline := time.Now().Add(10 * time.Second) // the loop runs every 20ms: wait for its first run to end
	for m := metricsText(t, r.HTTP); !strings.Contains(m, "anykv_engine_verify_runs ") ||
		strings.Contains(m, "anykv_engine_verify_runs 0"); m = metricsText(t, r.HTTP) {
		if time.Now().After(deadline) {
			t.Fatalf("no background verification run within 10s:\n%s", metricsText(t, r.HTTP))
		}
		time.Sleep(20 * time.Millisecond)
	}
	info, _ = c.Info(ctx, "persistence").Result()
	if strings.Contains(info, "engine_verify_last_files:0\r") || !strings.Contains(info, "engine_verify_corrupt_files:0") {
		t.Fatalf("INFO after a background run:\n%s", info)
	}
	if code := r.Stop(); code != 0 {
		t.Fatalf("stop after --recover: exit %d", code)
	}
	if code, out := runBinary(t, "verify", s.Dir); code != 0 {
		t.Fatalf("verify after --recover and a clean stop: exit %d\n%s", code, out)
	}
	if code, out := runBinary(t, "verify", t.TempDir()); code != 2 {
		t.Fatalf("verify of an empty directory: exit %d, want 2\n%s", code, out)
	}
}

// metricsText fetches /metrics.
func metricsText(t *testing.T, addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
