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
	"anykv/internal/engine/remote/redisstore"
)

// Schemes lists the URL schemes Open accepts.
var Schemes = []string{"postgres", "postgresql", "mysql", "mariadb", "redis", "redis-cluster", "etcd", "cassandra", "memcached"}

// IsURL reports whether an --engine value names a remote datastore rather than an embedded engine.
func IsURL(s string) bool { return strings.Contains(s, "://") }

// Redact returns the URL with its password replaced by "xxxxx", for logs, errors and CONFIG GET: the userinfo's,
// and the value of a query parameter naming a password (PostgreSQL's password= and sslpassword=). A URL that does
// not parse (a password holding an unescaped / ? # or space) still has whatever stands between the user's ':'
// and the last '@' replaced.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || misplaced(raw, u) {
		return redactUnparsed(raw)
	}
	changed := false
	if _, ok := u.User.Password(); ok {
		u.User, changed = url.UserPassword(u.User.Username(), "xxxxx"), true
	}
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			k, _, ok := strings.Cut(p, "=")
			if name, err := url.QueryUnescape(k); ok && (err != nil || strings.Contains(strings.ToLower(name), "password")) {
				parts[i], changed = k+"=xxxxx", true
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	if !changed {
		return raw
	}
	return u.String()
}

// redactUnparsed is Redact for a URL url.Parse refused: the authority cannot be told apart reliably, so
// everything from the first ':' after "scheme://" up to the last '@' is taken for the password.
func redactUnparsed(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	at := strings.LastIndex(rest, "@")
	if !ok || at < 0 {
		return raw
	}
	user, _, ok := strings.Cut(rest[:at], ":")
	if !ok {
		return raw
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}

// misplaced reports whether raw, though url.Parse took it, looks like userinfo whose password holds an unescaped
// / ? or # after digits ("postgres://bob:2024/summer@h/db"): the parser reads "bob:2024" as host and port and the
// rest of the password, with the real host, as path, query or fragment. Said when the URL has no userinfo, its
// authority has a ':', and the last '@' comes after the authority with no '=' before it there (an '@' in a
// parameter's value, as in ?user=bob@corp, is not taken for one).
func misplaced(raw string, u *url.URL) bool {
	if u.User != nil {
		return false
	}
	_, rest, ok := strings.Cut(raw, "://")
	end := strings.IndexAny(rest, "/?#")
	at := strings.LastIndex(rest, "@")
	return ok && end >= 0 && at > end && strings.Contains(rest[:end], ":") && !strings.Contains(rest[end:at], "=")
}

// parseError is what Open says of a URL url.Parse refused: the parser's complaint quotes the URL, or a piece
// of the password it took for a port, so it is left out when the URL may hold a password.
func parseError(raw string, err error) string {
	if redactUnparsed(raw) != raw {
		return "cannot parse it (a password's reserved characters, such as / ? # @ % and spaces, must be " +
			"percent-encoded)"
	}
	return oneLine(err)
}

// Open connects to the datastore at raw and returns its engine. Errors read
// "<url>: cannot connect: <reason>" (or "bad URL", "unknown scheme") on one line.
func Open(ctx context.Context, raw string) (engine.Engine, error) {
	u, err := url.Parse(raw)
	if err == nil && misplaced(raw, u) {
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
