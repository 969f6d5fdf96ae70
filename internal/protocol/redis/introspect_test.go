package redis

import (
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// infoField returns one field of an INFO section ("" when absent).
func infoField(t *testing.T, c *goredis.Client, section, field string) string {
	t.Helper()
	out, err := c.Info(ctx, section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(out, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	return ""
}

// TestInfoKeyspaceExpires: INFO keyspace counts the keys with a time to live and their mean time left, per
// database, collections included.
func TestInfoKeyspaceExpires(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	c.Set(ctx, "a", "1", 100*time.Second)
	c.Set(ctx, "b", "1", 0)
	c.HSet(ctx, "h", "f", "v")
	c.Expire(ctx, "h", 300*time.Second)
	c.Do(ctx, "SELECT", "2")
	c.Set(ctx, "c", "1", 0)
	if got := infoField(t, c, "keyspace", "db0"); got != "keys=3,expires=2,avg_ttl=200000" {
		t.Errorf("db0: %q", got)
	}
	if got := infoField(t, c, "keyspace", "db2"); got != "keys=1,expires=0,avg_ttl=0" {
		t.Errorf("db2: %q", got)
	}
}
