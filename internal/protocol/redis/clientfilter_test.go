package redis

import (
	"strconv"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// TestClientListFilters: CLIENT LIST ID and TYPE select clients as in Redis 7.0 (they listed every client), and
// CLIENT PAUSE refuses a timeout whose deadline would overflow, as Redis does.
func TestClientListFilters(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	other := ts.client(t, &goredis.Options{PoolSize: 1})
	other.Ping(ctx)
	ps := ts.client(t, &goredis.Options{PoolSize: 1}).Subscribe(ctx, "ch")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	id := c.ClientID(ctx).Val()
	lines := func(args ...any) []string {
		t.Helper()
		out, err := c.Do(ctx, append([]any{"client", "list"}, args...)...).Text()
		if err != nil {
			t.Fatalf("CLIENT LIST %v: %v", args, err)
		}
		return strings.Fields(strings.ReplaceAll(out, " ", "_"))
	}
	if got := lines("id", id); len(got) != 1 || !strings.HasPrefix(got[0], "id="+strconv.FormatInt(id, 10)+"_") {
		t.Fatalf("CLIENT LIST ID %d = %q", id, got)
	}
	if got := lines("id", 999999); len(got) != 0 {
		t.Fatalf("CLIENT LIST ID of no client = %q", got)
	}
	if got := lines("type", "pubsub"); len(got) != 1 || !strings.Contains(got[0], "sub=1") {
		t.Fatalf("CLIENT LIST TYPE pubsub = %q", got)
	}
	if got := lines("type", "normal"); len(got) != 2 {
		t.Fatalf("CLIENT LIST TYPE normal = %d lines, want 2", len(got))
	}
	for args, want := range map[string]string{"type bogus": "Unknown client type", "id x": "Invalid client ID", "bogus": "syntax error"} {
		var a []any
		for _, f := range strings.Fields(args) {
			a = append(a, f)
		}
		if err := c.Do(ctx, append([]any{"client", "list"}, a...)...).Err(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CLIENT LIST %s: %v, want %q", args, err, want)
		}
	}
	if err := c.Do(ctx, "client", "pause", "9223372036854775000").Err(); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("CLIENT PAUSE with an overflowing deadline: %v", err)
	}
}
