package main

import (
	"strings"
	"testing"
	"time"

	"anykv/internal/engine/remote/remotetest"
	"anykv/internal/servertest"
)

// TestStoreCommandReadingTheEmptyKey: ZINTERSTORE, ZUNIONSTORE or SINTERSTORE with the empty key, a string, among
// their sources answers WRONGTYPE at once. Over PostgreSQL it hung (the client timed out): the commit's check of
// the empty key went as a nil []byte, which pgx sends as NULL, so the key never matched its row and every attempt
// conflicted.
func TestStoreCommandReadingTheEmptyKey(t *testing.T) {
	for _, eng := range []string{"postgres", "mariadb"} {
		t.Run(eng, func(t *testing.T) {
			c := client(t, servertest.Start(t, servertest.Options{Engine: remotetest.Start(t, eng)}).RESP)
			for _, cmd := range [][]any{{"SET", "", "x"}, {"ZADD", "z", "1", "a"}, {"SADD", "s", "a"}} {
				if err := c.Do(ctx, cmd...).Err(); err != nil {
					t.Fatal(err)
				}
			}
			for _, cmd := range [][]any{
				{"ZINTERSTORE", "d", "2", "z", ""}, {"ZUNIONSTORE", "z", "2", "z", ""}, {"SINTERSTORE", "d", "s", ""},
			} {
				st := time.Now()
				err := c.Do(ctx, cmd...).Err()
				if err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
					t.Fatalf("%q: %v after %v, want WRONGTYPE", cmd, err, time.Since(st))
				}
			}
			if v, err := c.Get(ctx, "").Result(); v != "x" || err != nil {
				t.Fatalf("GET \"\": %q, %v", v, err)
			}
		})
	}
}
