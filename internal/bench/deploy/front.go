package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Front-end targets: anykv serving a datastore the bench deploys too (anykv+postgres, ...), with its caches off
// as several front ends need them, and with them on (+cache: --exclusive). Each is benchmarked over RESP, so the
// datastore direct, through anykv, and through anykv with its caches compare side by side; +cache+http is the
// cached one over the HTTP/JSON API, whose table query is one request (RESP's is SCAN pages and MGETs).
func init() {
	for _, back := range []struct{ name, store string }{
		{"postgres", "postgres"}, {"mariadb", "mariadb"}, {"redis", "redis"}, {"etcd", "etcd"}, {"cassandra", "cassandra"},
		{"memcached", "memcached"},
	} {
		for _, v := range []struct {
			suffix, variant string
			cached          bool
		}{{"", "always", false}, {"+cache", "always", true}, {"+cache+http", "http", true}} {
			name, summary := "anykv+"+back.name+v.suffix, "anykv --engine URL over a deployed "+back.name+", caches off, over RESP"
			switch {
			case v.variant == "http":
				summary = "anykv --engine URL --exclusive over a deployed " + back.name + ", caches on, over the HTTP/JSON API"
			case v.cached:
				summary = "anykv --engine URL --exclusive over a deployed " + back.name + ", caches on, over RESP"
			}
			register(spec{name: name, pkg: specs[back.store].pkg, summary: summary,
				start: func(ctx context.Context, o Options, dir string) (*Server, error) {
					return startFront(ctx, o, dir, back.store, v.variant, v.cached)
				}})
		}
	}
}

// engineURL turns the bench's URL of a deployed datastore into the --engine URL anykv takes.
func engineURL(benchURL string) string {
	if rest, ok := strings.CutPrefix(benchURL, "resp://"); ok {
		return "redis://" + rest + "/0"
	}
	if rest, ok := strings.CutPrefix(benchURL, "memcache://"); ok {
		return "memcached://" + rest
	}
	if rest, ok := strings.CutPrefix(benchURL, "cassandra://"); ok {
		return "cassandra://" + rest + "/anykv"
	}
	return benchURL
}

// startFront deploys the datastore, then anykv over it (variant: always for RESP, http); stopping the front end
// stops both.
func startFront(ctx context.Context, o Options, dir, store, variant string, cached bool) (*Server, error) {
	sub := filepath.Join(dir, store) // removed with the front end's directory
	if err := os.Mkdir(sub, 0o755); err != nil {
		return nil, err
	}
	back, err := specs[store].start(ctx, o, sub)
	if err != nil {
		return nil, err
	}
	front, err := startAnykv(ctx, o, dir, variant, engineURL(back.URL), cached)
	if err != nil {
		back.stop()
		return nil, err
	}
	stopFront := front.stop
	front.stop = func() error {
		err := stopFront()
		if berr := back.stop(); err == nil {
			err = berr
		}
		return err
	}
	front.Settings = append(front.Settings, fmt.Sprintf("datastore: %s (%s)", store, back.Version))
	for _, st := range back.Settings {
		front.Settings = append(front.Settings, store+": "+st)
	}
	return front, nil
}
