// Package dial opens the engine an `anykv serve --engine URL` names: postgres://, mysql:// (mariadb://), redis://,
// redis-cluster://, etcd://, cassandra:// or memcached://. It is the one place that knows every remote adapter, so
// cmd/anykv needs one call, and it turns every failure into one line naming the URL (its password hidden) and
// what went wrong.
package dial

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
	"anykv/internal/engine/remote/cassandrastore"
	"anykv/internal/engine/remote/etcdstore"
	"anykv/internal/engine/remote/memcachedstore"
	"anykv/internal/engine/remote/mysqlstore"
	"anykv/internal/engine/remote/pgstore"
	"anykv/internal/engine/remote/redact"
	"anykv/internal/engine/remote/redisstore"
)

// Redact returns the URL with its password replaced by "xxxxx" (redact.URL).
func Redact(raw string) string { return redact.URL(raw) }

// Schemes lists the URL schemes Open accepts.
var Schemes = []string{"postgres", "postgresql", "mysql", "mariadb", "redis", "redis-cluster", "etcd", "cassandra", "memcached"}

// IsURL reports whether an --engine value names a remote datastore rather than an embedded engine.
func IsURL(s string) bool { return strings.Contains(s, "://") }

// parseError is what Open says of a URL url.Parse refused: the parser's complaint quotes the URL, or a piece
// of the password it took for a port, so it is left out when the URL may hold a password.
func parseError(raw string, err error) string {
	if redact.Unparsed(raw) != raw {
		return "cannot parse it (a password's reserved characters, such as / ? # @ % and spaces, must be " +
			"percent-encoded)"
	}
	return oneLine(err)
}

// Open connects to the datastore at raw and returns its engine. Errors read
// "<url>: cannot connect: <reason>" (or "bad URL", "unknown scheme") on one line.
func Open(ctx context.Context, raw string) (engine.Engine, error) {
	u, err := url.Parse(raw)
	if err == nil && redact.Misplaced(raw, u) {
		err = errors.New("a password's / ? or # taken for the end of the host")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: bad URL: %s", Redact(raw), parseError(raw, err))
	}
	name := Redact(raw)
	var e engine.Engine
	switch u.Scheme {
	case "postgres", "postgresql":
		e, err = pgstore.Open(ctx, raw)
	case "mysql", "mariadb":
		e, err = mysqlstore.Open(ctx, raw)
	case "redis":
		e, err = redisstore.Open(ctx, raw)
	case "redis-cluster":
		e, err = redisstore.OpenCluster(ctx, raw)
	case "etcd":
		e, err = etcdstore.Open(ctx, raw)
	case "cassandra":
		e, err = cassandrastore.Open(ctx, raw)
	case "memcached":
		e, err = memcachedstore.Open(ctx, raw)
	default:
		return nil, fmt.Errorf("%s: unknown scheme %q (want pebble, memory, or a URL with scheme %s)",
			name, u.Scheme, strings.Join(Schemes, ", "))
	}
	switch {
	case errors.Is(err, remote.ErrBadURL):
		return nil, fmt.Errorf("%s: %s", name, oneLine(err))
	case err != nil:
		return nil, fmt.Errorf("%s: cannot connect: %s", name, oneLine(err))
	}
	return e, nil
}

// oneLine flattens a multi-line driver error.
func oneLine(err error) string {
	s := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
	return strings.ReplaceAll(s, ":;", ":")
}
