package redisstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// checkEviction reads the server's maxmemory and maxmemory-policy. A Redis that evicts any key when its memory
// is full loses anykv items that were acknowledged, and its version counter with them (versions then repeat, so
// a stale compare-and-set could pass): Open refuses it. A policy that evicts only keys with a TTL, or one that
// would evict any key but has no memory limit set, is a warning (the operator may set maxmemory later). If the
// server does not let anykv read its configuration (CONFIG renamed or denied), that is a warning too.
func checkEviction(ctx context.Context, c redis.Cmdable, where string) (warning string, err error) {
	conf, cerr := c.ConfigGet(ctx, "maxmemory*").Result()
	if cerr != nil {
		return fmt.Sprintf("Redis at %s: cannot read maxmemory-policy (%v); make sure it is noeviction, or evicted "+
			"anykv items are lost (see docs/engines.md)", where, cerr), nil
	}
	policy, limit := conf["maxmemory-policy"], conf["maxmemory"]
	bounded := limit != "" && limit != "0"
	switch {
	case policy == "" || policy == "noeviction":
		return "", nil
	case strings.HasPrefix(policy, "allkeys-") && bounded:
		return "", fmt.Errorf("redis at %s evicts any key when its %s bytes of memory are full (maxmemory-policy %s): "+
			"anykv items, acknowledged as durable, would be lost; set maxmemory-policy noeviction (see docs/engines.md)",
			where, limit, policy)
	case strings.HasPrefix(policy, "allkeys-"):
		return fmt.Sprintf("Redis at %s has maxmemory-policy %s: once a maxmemory is set it evicts, and so loses, "+
			"anykv items; set maxmemory-policy noeviction (see docs/engines.md)", where, policy), nil
	case bounded:
		return fmt.Sprintf("Redis at %s evicts keys with a TTL when its memory is full (maxmemory-policy %s): "+
			"anykv items with an expiry may go before it; set maxmemory-policy noeviction (see docs/engines.md)",
			where, policy), nil
	}
	return "", nil
}
