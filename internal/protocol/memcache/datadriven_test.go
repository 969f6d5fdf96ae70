package memcache

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"anykv/internal/engine"
)

var realMemcached = flag.String("memcached", "", "send the transcripts' requests to this memcached (host:port) "+
	"too and log where its replies differ, to compare anykv with the real thing by eye")

// TestTranscripts runs the golden sessions in testdata/transcripts against an in-process server (memstore, a
// fake clock starting at 2026-01-01, item limit 1 MiB). Regenerate with `go test -run TestTranscripts -rewrite`.
//
//	send [conn=NAME] [raw]   the input (see unescape) on connection NAME (default a); shows every reply byte
//	                         (see render). Without raw, replies are read up to a sentinel mg; with raw, until
//	                         the server closes ("(closed)") or is silent for 300ms.
//	advance secs=N           moves the store's clock
//	fire-flush               runs pending delayed flush_all timers and shows their delays
//	item                     shows, for each key of the input, the item as the kv layer sees it
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/transcripts", func(t *testing.T, path string) {
		ts := startServer(t)
		conns := map[string]*client{}
		var real map[string]*client
		if *realMemcached != "" {
			real = map[string]*client{}
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "send":
				name := "a"
				d.MaybeScanArgs(t, "conn", &name)
				data, err := unescape(d.Input)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				got := sendOn(t, conns, ts.addr, name, data, d.HasArg("raw"))
				if real != nil {
					if want := sendOn(t, real, *realMemcached, name, data, d.HasArg("raw")); want != got {
						t.Logf("%s: memcached differs:\n%s\nanykv:\n%s\nmemcached:\n%s", d.Pos, d.Input, got, want)
					}
				}
				return got
			case "advance":
				var secs int
				d.ScanArgs(t, "secs", &secs)
				ts.clock.Advance(time.Duration(secs) * time.Second)
				return "ok\n"
			case "fire-flush":
				return fmt.Sprintf("fired %v\n", ts.flushes.fire())
			case "item":
				var sb strings.Builder
				for _, key := range strings.Fields(d.Input) {
					it, err := ts.store.Get(context.Background(), "default", []byte(key))
					switch {
					case errors.Is(err, engine.ErrNotFound):
						fmt.Fprintf(&sb, "%s: not found\n", key)
					case err != nil:
						fmt.Fprintf(&sb, "%s: %v\n", key, err)
					default:
						fmt.Fprintf(&sb, "%s: value=%q flags=%d ttl_ms=%d version=%d\n", key, it.Value, it.Flags,
							ttlMs(it.Expires, ts.store.Now()), it.Version)
					}
				}
				return sb.String()
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	})
}

func ttlMs(expires, now int64) int64 {
	if expires == 0 {
		return -1
	}
	return expires - now
}

// sendOn sends data on the named connection of conns, dialling addr when needed, and renders the replies.
func sendOn(t *testing.T, conns map[string]*client, addr, name string, data []byte, raw bool) string {
	cl := conns[name]
	if cl == nil {
		cl = dial(t, addr)
		conns[name] = cl
	}
	if !raw {
		if out := render(cl.roundTrip(data)); out != "" {
			return out
		}
		return "(no reply)\n"
	}
	out, closed := cl.sendRaw(data, 300*time.Millisecond)
	s := render(out)
	if closed {
		s += "(closed)\n"
		delete(conns, name)
	}
	if s == "" {
		s = "(no reply)\n"
	}
	return s
}
