package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"anykv/internal/bench/failover"
	"anykv/internal/bench/hist"
)

// TestFailoverSections: the text, HTML and JSON reports carry the failover row, the kills, and a plot with
// each kill and restart marked.
func TestFailoverSections(t *testing.T) {
	ok, errs := hist.NewSeries(t0, 100*time.Millisecond), hist.NewSeries(t0, 100*time.Millisecond)
	for i := range 30 {
		ok.Add(t0.Add(time.Duration(i) * 100 * time.Millisecond))
	}
	errs.Add(t0.Add(time.Second))
	f := &failover.Result{Target: "etcd3", KillTarget: "datastore", Elapsed: 3 * time.Second, Requests: 31, Failed: 1,
		Acked: 12, Lost: 2, Backwards: 3, LongestGap: 1500 * time.Millisecond, GapAt: time.Second, UpRate: 10,
		DownRate: 4, DownSeconds: 1, OK: ok, Errs: errs,
		Kills: []failover.Kill{{Node: "m2", At: time.Second, Up: 2 * time.Second}}}
	rep := &Report{Command: "anykv bench --kill every=1s", Started: t0, Failover: []*failover.Result{f}}
	var text, page, js bytes.Buffer
	if err := WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	row := strings.Fields("etcd3 datastore 1 31 1 12 2 0 3 0 1.50 10.0 4.0 0.40")
	if !strings.Contains(strings.Join(strings.Fields(text.String()), " "), strings.Join(row, " ")) {
		t.Errorf("text lacks the row %v:\n%s", row, text.String())
	}
	if !strings.Contains(text.String(), "m2 at 1.0s, back at 2.0s") {
		t.Errorf("text lacks the kill:\n%s", text.String())
	}
	if err := WriteHTML(&page, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h2>Failover</h2>", ">kill m2<", ">up m2<", "requests/s while killing datastore nodes", `<td class="fail">2</td>`} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if err := WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Failover []failover.Result `json:"failover"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil || len(got.Failover) != 1 || got.Failover[0].Lost != 2 ||
		got.Failover[0].Kills[0].Node != "m2" {
		t.Errorf("JSON failover: %+v, %v", got.Failover, err)
	}
}
