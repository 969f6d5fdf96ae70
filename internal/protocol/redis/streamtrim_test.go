package redis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// xtrimOptionsScript: XADD's and XTRIM's trimming options, their checks and errors in Redis's order (LIMIT before
// MAXLEN, both strategies, LIMIT without "~" or without a strategy, bad numbers and IDs), and what XADD answers
// for 0-0 and once the stream holds the largest ID.
const xtrimOptionsScript = `DEL s
XADD s MAXLEN 1 MINID 1 * f v
XADD s LIMIT 5 * f v
XADD s LIMIT 0 * f v
XADD s LIMIT 5 MAXLEN 1 * f v
XADD s LIMIT 5 MAXLEN ~ 1 1-1 f v
XADD s MAXLEN ~ 1 LIMIT -1 * f v
XADD s MAXLEN ~ 1 LIMIT x * f v
XADD s MAXLEN -1 * f v
XADD s MAXLEN x * f v
XADD s MINID - * f v
XADD s MINID ~ + * f v
XADD s MINID 5-* * f v
XADD s MAXLEN ~ 1 LIMIT 0 NOMKSTREAM 1-* f v
XADD s MAXLEN
XADD s MAXLEN 5 *
XADD s NOMKSTREAM 0-0 f v
XADD s 0 f v
XADD s 00-000 f v
XADD s 5-x f v
XADD s MAXLEN = 3 =
XTRIM s
XTRIM s LIMIT 3
XTRIM s MAXLEN 1 LIMIT 3
XTRIM s MAXLEN ~ 1 LIMIT 3 LIMIT 0
XTRIM s MAXLEN ~ 1 NOMKSTREAM
XTRIM s MAXLEN 1 MINID 1
XTRIM s MAXLEN 1 junk
XTRIM nokey MAXLEN ~ 0
XADD s 18446744073709551615-18446744073709551615 f v
XADD s * f v
XADD s 18446744073709551615-* f v
XLEN s`

// TestXTrimOptionsMatchRedis: the trimming options parse, and fail, as redis-server's (LIMIT went unread unless
// it came right after the threshold), byte for byte in RESP2 and RESP3.
func TestXTrimOptionsMatchRedis(t *testing.T) {
	sameAsRedisLines(t, xtrimOptionsScript)
}

// TestStreamApproxTrimMatchesRedis: XADD and XTRIM with MAXLEN or MINID, "~" or exact, with and without LIMIT, on
// streams laid in nodes of 1 to 100 entries (CONFIG SET stream-node-max-entries), leave the stream as
// redis-server 7.0 does, entry for entry, and answer the same counts: random sequences, with exact trims that end
// inside a node, LIMITs that stop a trim, XDEL of the oldest entry and streams trimmed to nothing and filled
// again. anykv trimmed "~" exactly and let LIMIT bound nothing.
func TestStreamApproxTrimMatchesRedis(t *testing.T) {
	theirs := goredis.NewClient(&goredis.Options{Addr: startRedisServer(t)})
	t.Cleanup(func() { theirs.Close() })
	mine := startServer(t, Options{}, 0).client(t, nil)
	both := func(args ...any) (got, want string) {
		a, err1 := mine.Do(ctx, args...).Result()
		b, err2 := theirs.Do(ctx, args...).Result()
		return fmt.Sprint(a, err1), fmt.Sprint(b, err2)
	}
	// The "~" trims of the suite's tests that then reload the AOF (needs:debug, not run against anykv).
	for _, c := range []struct {
		node int
		trim []any
	}{
		{100, []any{"XADD", "s", "MAXLEN", "~", 100, "101-0", "f", "v"}},
		{10, []any{"XADD", "s", "MAXLEN", "~", 55, "LIMIT", 30, "101-0", "f", "v"}},
		{100, []any{"XADD", "s", "MINID", "~", 100, "101-0", "f", "v"}},
		{10, []any{"XADD", "s", "MINID", "~", 55, "LIMIT", 30, "101-0", "f", "v"}},
		{10, []any{"XTRIM", "s", "MAXLEN", "~", 85}},
	} {
		both("CONFIG", "SET", "stream-node-max-entries", c.node)
		both("DEL", "s")
		for i := 1; i <= 100; i++ {
			both("XADD", "s", fmt.Sprint(i, "-0"), "f", "v")
		}
		got, want := both(c.trim...)
		gotLen, wantLen := both("XLEN", "s")
		if got != want || gotLen != wantLen {
			t.Errorf("nodes of %d, %v = %s, XLEN %s; redis-server: %s, %s", c.node, c.trim, got, gotLen, want, wantLen)
		}
	}
	r := rand.New(rand.NewPCG(7, 3))
	for round := range 60 {
		node := []int{1, 2, 3, 10, 100}[r.IntN(5)]
		both("CONFIG", "SET", "stream-node-max-entries", node)
		both("DEL", "s")
		ms := 0
		var log []string
		for step := range 120 {
			var args []any
			trim := func() {
				approx := r.IntN(3)
				var by []any
				if r.IntN(3) == 0 {
					by = []any{"MINID", []string{"", "~", "="}[approx], fmt.Sprint(max(ms-r.IntN(3*node+5), 0))}
				} else {
					by = []any{"MAXLEN", []string{"", "~", "="}[approx], r.IntN(3*node + 5)}
				}
				if by[1] == "" {
					by = slices.Delete(by, 1, 2)
				}
				args = append(args, by...)
				if approx == 1 && r.IntN(3) == 0 {
					args = append(args, "LIMIT", r.IntN(2*node+2))
				}
			}
			switch op := r.IntN(10); {
			case op < 6:
				ms += 1 + r.IntN(3)
				args = []any{"XADD", "s"}
				if r.IntN(2) == 0 {
					trim()
				}
				args = append(args, fmt.Sprint(ms, "-0"), "f", "v")
			case op < 9:
				args = []any{"XTRIM", "s"}
				trim()
			default: // the oldest entry: Redis frees its node's slot as anykv counts it
				first, _ := theirs.XRangeN(ctx, "s", "-", "+", 1).Result()
				if len(first) == 0 {
					continue
				}
				args = []any{"XDEL", "s", first[0].ID}
			}
			log = append(log, fmt.Sprint(args...))
			got, want := both(args...)
			gotLen, wantLen := both("XLEN", "s")
			gotFirst, wantFirst := both("XRANGE", "s", "-", "+", "COUNT", 1)
			info := func(c *goredis.Client) string {
				i, err := c.XInfoStream(ctx, "s").Result()
				if err != nil {
					return err.Error()
				}
				return fmt.Sprint(i.Length, i.LastGeneratedID, i.MaxDeletedEntryID, i.EntriesAdded, i.RecordedFirstEntryID)
			}
			gotInfo, wantInfo := info(mine), info(theirs)
			if got != want || gotLen != wantLen || gotFirst != wantFirst || gotInfo != wantInfo {
				t.Fatalf("round %d (nodes of %d), step %d: %v = %s, XLEN %s, first %s, XINFO %s; redis-server: %s, %s, %s, %s\n%s",
					round, node, step, args, got, gotLen, gotFirst, gotInfo, want, wantLen, wantFirst, wantInfo,
					strings.Join(log, "\n"))
			}
		}
		got, want := both("XRANGE", "s", "-", "+")
		if got != want {
			t.Fatalf("round %d: the stream is %s; redis-server: %s", round, got, want)
		}
	}
	both("CONFIG", "SET", "stream-node-max-entries", 100)
}
