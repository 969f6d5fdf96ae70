package failover

import (
	"testing"
	"time"
)

const s = time.Second

func w(c int, k string, seq uint64, err bool) Op {
	return Op{Client: c, Key: k, Write: true, Seq: seq, Err: err}
}
func r(c int, k string, seq uint64) Op { return Op{Client: c, Key: k, Seq: seq} }

func TestValueRoundTrip(t *testing.T) {
	v := Value(3, "k7", 42, 100)
	if len(v) != 100 {
		t.Fatalf("len %d", len(v))
	}
	if seq, ok := Parse(v, 3, "k7"); !ok || seq != 42 {
		t.Errorf("Parse = %d, %v", seq, ok)
	}
	for _, c := range []struct {
		client int
		key    string
	}{{4, "k7"}, {3, "k70"}, {3, "k"}} {
		if _, ok := Parse(v, c.client, c.key); ok {
			t.Errorf("value of client 3 key k7 parsed as client %d key %s", c.client, c.key)
		}
	}
}

func TestBackwards(t *testing.T) {
	for _, c := range []struct {
		name string
		ops  []Op
		want int64
	}{
		{"monotonic", []Op{r(0, "a", 0), w(0, "a", 1, false), r(0, "a", 1), w(0, "a", 2, false), r(0, "a", 2)}, 0},
		{"older than acknowledged", []Op{w(0, "a", 1, false), w(0, "a", 2, false), r(0, "a", 1)}, 1},
		{"absent after acknowledged", []Op{w(0, "a", 1, false), r(0, "a", 0)}, 1},
		{"failed write not read: no floor", []Op{w(0, "a", 1, false), w(0, "a", 2, true), r(0, "a", 1)}, 0},
		{"failed write read, then gone", []Op{w(0, "a", 2, true), r(0, "a", 2), r(0, "a", 0), r(0, "a", 0)}, 2},
		{"per key", []Op{w(0, "a", 5, false), r(0, "b", 0)}, 0},
		{"per client", []Op{w(0, "a", 5, false), r(1, "a", 0)}, 0},
		{"errors and wrong values ignored", []Op{w(0, "a", 5, false), {Client: 0, Key: "a", Err: true}, {Client: 0, Key: "a", Wrong: true}}, 0},
	} {
		if got := Backwards(c.ops); got != c.want {
			t.Errorf("%s: %d reads went backwards, want %d", c.name, got, c.want)
		}
	}
}

func TestLost(t *testing.T) {
	for _, c := range []struct {
		name            string
		ops             []Op
		final           map[string]Final
		lost, unchecked int64
	}{
		{"kept", []Op{w(0, "a", 1, false), w(0, "a", 2, false)}, map[string]Final{"a": {2, true}}, 0, 0},
		{"absent", []Op{w(0, "a", 1, false)}, map[string]Final{"a": {0, true}}, 1, 0},
		{"older", []Op{w(0, "a", 1, false), w(0, "a", 2, false)}, map[string]Final{"a": {1, true}}, 1, 0},
		{"overwritten by a failed write", []Op{w(0, "a", 1, false), w(0, "a", 2, true)}, map[string]Final{"a": {2, true}}, 0, 0},
		{"failed write not applied", []Op{w(0, "a", 1, false), w(0, "a", 2, true)}, map[string]Final{"a": {1, true}}, 0, 0},
		{"failed write applied after a later acknowledged one", []Op{w(0, "a", 1, true), w(0, "a", 2, false)}, map[string]Final{"a": {1, true}}, 0, 0},
		{"older acknowledged write back", []Op{w(0, "a", 1, false), w(0, "a", 2, true), w(0, "a", 3, false)}, map[string]Final{"a": {1, true}}, 1, 0},
		{"never written value", []Op{w(0, "a", 1, false)}, map[string]Final{"a": {7, true}}, 1, 0},
		{"only failed writes", []Op{w(0, "a", 1, true)}, map[string]Final{"a": {0, true}}, 0, 0},
		{"not read back", []Op{w(0, "a", 1, false), w(0, "b", 2, false)}, map[string]Final{"a": {1, false}}, 0, 2},
	} {
		lost, unchecked, losses := Lost(c.ops, c.final)
		if lost != c.lost || unchecked != c.unchecked || int64(len(losses)) != lost {
			t.Errorf("%s: lost %d unchecked %d (%q), want %d and %d", c.name, lost, unchecked, losses, c.lost, c.unchecked)
		}
	}
}

func TestLongestGap(t *testing.T) {
	ok := func(end time.Duration) Op { return Op{End: end} }
	bad := func(end time.Duration) Op { return Op{End: end, Err: true} }
	for _, c := range []struct {
		name    string
		ops     []Op
		end     time.Duration
		gap, at time.Duration
	}{
		{"between successes, failures ignored", []Op{ok(1 * s), bad(2 * s), ok(4 * s), ok(5 * s)}, 6 * s, 3 * s, 1 * s},
		{"at the start", []Op{ok(3 * s), ok(4 * s)}, 5 * s, 3 * s, 0},
		{"at the end", []Op{ok(1 * s), ok(2 * s)}, 10 * s, 8 * s, 2 * s},
		{"out of order", []Op{ok(5 * s), ok(1 * s), ok(2 * s)}, 6 * s, 3 * s, 2 * s},
		{"nothing succeeded", []Op{bad(1 * s)}, 4 * s, 4 * s, 0},
	} {
		gap, at := LongestGap(c.ops, c.end)
		if gap != c.gap || at != c.at {
			t.Errorf("%s: gap %v at %v, want %v at %v", c.name, gap, at, c.gap, c.at)
		}
	}
}

func TestThroughput(t *testing.T) {
	var ops []Op
	for i := range 100 { // one success every 100 ms over 10 s
		ops = append(ops, Op{End: time.Duration(i) * 100 * time.Millisecond})
	}
	ops = append(ops, Op{End: 2500 * time.Millisecond, Err: true}) // failures do not count
	// Down 2-4 s and 3-5 s (overlapping: 2-5 s) and 9-12 s (clipped to 9-10 s): 4 s down, 6 s up.
	down := []Interval{{2 * s, 4 * s}, {3 * s, 5 * s}, {9 * s, 12 * s}}
	dr, ur, ds, us := Throughput(ops, down, 10*s)
	if ds != 4 || us != 6 {
		t.Fatalf("down %v s, up %v s; want 4 and 6", ds, us)
	}
	if dr != 10 || ur != 10 {
		t.Errorf("rates down %v up %v, want 10 and 10", dr, ur)
	}
	ops = append(ops, Op{End: 1 * s}, Op{End: 1 * s}, Op{End: 1 * s}, Op{End: 1 * s}, Op{End: 1 * s}, Op{End: 1 * s})
	if _, ur, _, _ := Throughput(ops, down, 10*s); ur != 11 {
		t.Errorf("up rate %v after 6 more successes in 6 s, want 11", ur)
	}
}
