package main

import (
	"strings"
	"testing"

	"anykv/internal/engine/remote/remotetest"
	"anykv/internal/servertest"
)

// TestRangeReadOfOddKeysCommits: a script that reads its database's keys (KEYS) and writes commits when the keys
// are empty, binary, or hold ZRANGEBYLEX's bound bytes: the range check at commit compares what the read found.
func TestRangeReadOfOddKeysCommits(t *testing.T) {
	for _, eng := range []string{"postgres", "mariadb", "redis-nopersist"} {
		t.Run(eng, func(t *testing.T) {
			u := remotetest.Start(t, eng)
			if strings.HasPrefix(u, "resp://") {
				u = "redis" + strings.TrimPrefix(u, "resp") + "/0"
			}
			c := client(t, servertest.Start(t, servertest.Options{Engine: u}).RESP)
			for _, k := range []string{"", "[", "(", "-", "+", "a\x00b", "\xff", "\xff\xff", "a"} {
				if err := c.Set(ctx, k, "v", 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			n, err := c.Eval(ctx, `local n = #redis.call('KEYS', '*') redis.call('SET', KEYS[1], n) return n`, []string{"k"}).Int()
			if err != nil || n != 9 {
				t.Fatalf("script over the keys: %d, %v", n, err)
			}
		})
	}
}
