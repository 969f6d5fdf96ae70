package redis

import (
	"fmt"
	"testing"
)

// A SCAN page that ends at the empty key hands out a cursor, not 0: the empty key must not read as "the end"
// (it did, and the keys after it were never returned).
func TestScanResumesAfterTheEmptyKey(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, nil)
	for _, k := range []string{"", "\x01", "a"} {
		if err := c.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	cursor := uint64(0)
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("SCAN never ends")
		}
		keys, next, err := c.Scan(ctx, cursor, "", 1).Result()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, keys...)
		if next == 0 {
			break
		}
		cursor = next
	}
	if fmt.Sprintf("%q", got) != `["" "\x01" "a"]` {
		t.Fatalf("SCAN COUNT 1 returned %q", got)
	}
}
