// Package redact hides the passwords of datastore URLs, for logs, errors, settings and command lines. It is a
// leaf (net/url and strings only), so that what starts servers (internal/bench/deploy) can use it without
// importing every engine adapter, as internal/engine/remote/dial does.
package redact

import (
	"net/url"
	"strings"
)

// URL returns the URL with its password replaced by "xxxxx", for logs, errors and CONFIG GET: the userinfo's,
// and the value of a query parameter naming a password (PostgreSQL's password= and sslpassword=). A URL that does
// not parse (a password holding an unescaped / ? # or space) still has whatever stands between the user's ':'
// and the last '@' replaced.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || Misplaced(raw, u) {
		return Unparsed(raw)
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

// Unparsed is URL for a URL url.Parse refused: the authority cannot be told apart reliably, so
// everything from the first ':' after "scheme://" up to the last '@' is taken for the password.
func Unparsed(raw string) string {
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

// Misplaced reports whether raw, though url.Parse took it, looks like userinfo whose password holds an unescaped
// / ? or # after digits ("postgres://bob:2024/summer@h/db"): the parser reads "bob:2024" as host and port and the
// rest of the password, with the real host, as path, query or fragment. Said when the URL has no userinfo, its
// authority has a ':', and the last '@' comes after the authority with no '=' before it there (an '@' in a
// parameter's value, as in ?user=bob@corp, is not taken for one).
func Misplaced(raw string, u *url.URL) bool {
	if u.User != nil {
		return false
	}
	_, rest, ok := strings.Cut(raw, "://")
	end := strings.IndexAny(rest, "/?#")
	at := strings.LastIndex(rest, "@")
	return ok && end >= 0 && at > end && strings.Contains(rest[:end], ":") && !strings.Contains(rest[end:at], "=")
}
