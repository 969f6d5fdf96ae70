package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anykv/internal/bench"
	"anykv/internal/servertest"
)

// TestBenchKillLosesNoAcknowledgedWrite runs `anykv bench --deploy anykv+etcd3 --kill every=2s` for 7 s: two
// front ends over a 3-member etcd cluster while a member is killed with SIGKILL every 2 s and restarted 1 s
// later. The report must carry the failover table, the kills must have happened, and every acknowledged write
// must read back.
func TestBenchKillLosesNoAcknowledgedWrite(t *testing.T) {
	needEtcd(t)
	js := filepath.Join(t.TempDir(), "out.json")
	var stdout, stderr bytes.Buffer
	code := bench.Main(ctx, []string{"--deploy", "anykv+etcd3", "--kill", "every=2s,down=1s", "--duration", "7s",
		"--records", "40", "--threads", "2", "--timeout", "3s", "--json", js, "--anykv-bin", servertest.Binary(t)}, &stdout, &stderr)
	out := stdout.String()
	if code != bench.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr.String())
	}
	for _, col := range []string{"== failover:", "Failed", "Acked", "Lost", "Backwards", "MaxGap(s)", "Ops/s down", "kills: m"} {
		if !strings.Contains(out, col) {
			t.Errorf("report lacks %q:\n%s", col, out)
		}
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Failover []map[string]any `json:"failover"`
	}
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Failover) != 1 {
		t.Fatalf("failover in JSON: %v, %d entries", err, len(rep.Failover))
	}
	f := rep.Failover[0]
	for _, k := range []string{"requests", "failed", "acked_writes", "lost_writes", "unchecked_keys", "backwards_reads",
		"longest_gap_ns", "ops_per_sec_up", "ops_per_sec_down"} {
		if _, ok := f[k].(float64); !ok {
			t.Errorf("JSON failover lacks %s: %v", k, f)
		}
	}
	kills, _ := f["kills"].([]any)
	if len(kills) < 2 || len(kills) > 3 { // at 2, 4 and 6 s; the third only if the second member was back in time
		t.Errorf("%d kills, want 3 (2 on a slow machine): %v", len(kills), kills)
	}
	for _, k := range kills {
		if e, _ := k.(map[string]any)["error"].(string); e != "" {
			t.Errorf("kill: %s", e)
		}
	}
	if f["acked_writes"].(float64) < 1 {
		t.Errorf("no write acknowledged: %v", f)
	}
	if f["lost_writes"] != 0.0 || f["unchecked_keys"] != 0.0 {
		t.Errorf("lost %v acknowledged writes, %v keys not read back\n%s", f["lost_writes"], f["unchecked_keys"], out)
	}
	t.Logf("failover: %v", f)
}
