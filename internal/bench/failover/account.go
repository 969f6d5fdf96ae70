// Package failover is `anykv bench --kill`: a load whose every request is recorded while a node of the
// datastore (or a front end) is killed with SIGKILL and restarted, and the accounting of what the clients saw:
// failed requests, acknowledged writes lost, reads that went backwards, the longest gap without a successful
// request, and throughput with a node down against healthy.
package failover

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Op is one request of the load as its client saw it. Each client owns its keys, so one client's ops on a key
// are sequential and numbered by Seq, which increases over the client's writes.
type Op struct {
	Client int
	Key    string
	Write  bool
	// Seq is the sequence number of the value written, or of the value read (0: the key was absent).
	Seq uint64
	// Err: the request failed or timed out (a write's outcome is then unknown).
	Err bool
	// Wrong: a read returned a value this client never wrote to this key.
	Wrong      bool
	Start, End time.Duration // since the run began
}

// OK reports whether the request got an answer.
func (o Op) OK() bool { return !o.Err }

// Interval is a span of the run, such as a node's down time.
type Interval struct{ From, To time.Duration }

// Value is the unique value of a client's write number seq to key, padded to size bytes.
func Value(client int, key string, seq uint64, size int) []byte {
	v := fmt.Appendf(nil, "fo:%d:%s:%d:", client, key, seq)
	for len(v) < size {
		v = append(v, 'x')
	}
	return v
}

// Parse returns the sequence number of a value written by client to key, and false when it is not one.
func Parse(v []byte, client int, key string) (uint64, bool) {
	prefix := fmt.Sprintf("fo:%d:%s:", client, key)
	rest, ok := strings.CutPrefix(string(v), prefix)
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ":")
	seq, err := strconv.ParseUint(num, 10, 64)
	return seq, ok && err == nil && seq > 0
}

// Backwards counts reads that went backwards: per client and key, the highest sequence number the client has
// seen (acknowledged to it by a write, or returned by a read; a failed write counts only once read) is its
// floor, and a read returning an older value, or nothing while the floor is above 0, went backwards. ops must
// be in each client's issue order.
func Backwards(ops []Op) int64 {
	type ck struct {
		c int
		k string
	}
	floor := map[ck]uint64{}
	var n int64
	for _, o := range ops {
		if o.Err || o.Wrong {
			continue
		}
		k := ck{o.Client, o.Key}
		switch {
		case o.Write:
			floor[k] = max(floor[k], o.Seq)
		case o.Seq < floor[k]:
			n++
		default:
			floor[k] = o.Seq
		}
	}
	return n
}

// Final is what the read-back after the run found for a key.
type Final struct {
	Seq  uint64 // 0: absent
	Read bool   // false: the key could not be read back
}

// Lost counts acknowledged writes lost and keys that could not be checked, and describes each loss (its key,
// the write acknowledged and when, what was found, the writes of unknown outcome to the key). For each key, the
// last write acknowledged must still be there, or be overwritten by a write whose outcome is unknown (it failed
// or timed out, but may have been applied): anything else found (absent, an older acknowledged value, a value
// never written) means that acknowledged write is lost. A write of unknown outcome may also have taken effect
// after a later acknowledged one: its client gave up waiting and wrote again through another front end, while
// the first front end still committed it (a commit retried after a conflict on the shared version counter,
// within its engine timeout); nothing answered it, so it is concurrent with everything after it, and a
// linearizable store may order it last. A key never acknowledged cannot lose anything.
func Lost(ops []Op, final map[string]Final) (lost, unchecked int64, losses []string) {
	acked := map[string]Op{}
	unknown := map[string][]Op{}
	for _, o := range ops {
		if !o.Write {
			continue
		}
		if o.Err {
			unknown[o.Key] = append(unknown[o.Key], o)
		} else if o.Seq >= acked[o.Key].Seq {
			acked[o.Key] = o
		}
	}
	keys := make([]string, 0, len(acked))
	for k := range acked {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		a := acked[k]
		f, ok := final[k]
		switch {
		case !ok || !f.Read:
			unchecked++
		case f.Seq == a.Seq:
		case f.Seq != 0 && slices.ContainsFunc(unknown[k], func(o Op) bool { return o.Seq == f.Seq }):
		default:
			lost++
			d := fmt.Sprintf("%s: write %d acknowledged (sent %.3fs, answered %.3fs), found %d", k, a.Seq,
				a.Start.Seconds(), a.End.Seconds(), f.Seq)
			for _, u := range unknown[k] {
				d += fmt.Sprintf("; write %d failed (sent %.3fs, given up %.3fs)", u.Seq, u.Start.Seconds(), u.End.Seconds())
			}
			losses = append(losses, d)
		}
	}
	return lost, unchecked, losses
}

// LongestGap returns the longest span of the run [0, end) in which no request succeeded (counted from one
// successful completion to the next, from the start to the first and from the last to the end) and its start.
func LongestGap(ops []Op, end time.Duration) (gap, at time.Duration) {
	var done []time.Duration
	for _, o := range ops {
		if o.OK() {
			done = append(done, o.End)
		}
	}
	slices.Sort(done)
	prev := time.Duration(0)
	for _, t := range append(done, end) {
		if t-prev > gap {
			gap, at = t-prev, prev
		}
		prev = max(prev, t)
	}
	return gap, at
}

// Throughput returns successful requests per second completed while some node was down (within an interval of
// down, clipped to [0, end)) and while all were up, and the seconds of each.
func Throughput(ops []Op, down []Interval, end time.Duration) (downRate, upRate, downSecs, upSecs float64) {
	inDown := func(t time.Duration) bool {
		for _, iv := range down {
			if t >= iv.From && t < iv.To {
				return true
			}
		}
		return false
	}
	var dTime time.Duration
	for _, iv := range merge(down, end) {
		dTime += iv.To - iv.From
	}
	var nDown, nUp int64
	for _, o := range ops {
		if !o.OK() || o.End >= end {
			continue
		}
		if inDown(o.End) {
			nDown++
		} else {
			nUp++
		}
	}
	downSecs, upSecs = dTime.Seconds(), (end - dTime).Seconds()
	if downSecs > 0 {
		downRate = float64(nDown) / downSecs
	}
	if upSecs > 0 {
		upRate = float64(nUp) / upSecs
	}
	return downRate, upRate, downSecs, upSecs
}

// merge clips intervals to [0, end) and joins overlapping ones.
func merge(ivs []Interval, end time.Duration) []Interval {
	var c []Interval
	for _, iv := range ivs {
		iv.From, iv.To = max(iv.From, 0), min(iv.To, end)
		if iv.To > iv.From {
			c = append(c, iv)
		}
	}
	slices.SortFunc(c, func(a, b Interval) int { return int(a.From - b.From) })
	var out []Interval
	for _, iv := range c {
		if n := len(out); n > 0 && iv.From <= out[n-1].To {
			out[n-1].To = max(out[n-1].To, iv.To)
			continue
		}
		out = append(out, iv)
	}
	return out
}
