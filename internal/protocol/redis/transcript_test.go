package redis

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestTranscripts replays the sessions in testdata/*.txt against an in-process server and compares the exact
// reply bytes (CRLF shown as newlines). Regenerate with: go test ./internal/protocol/redis -run Transcripts -rewrite
//
// Directives:
//
//	send       each input line is one command (split on spaces; "double quotes" and Go escapes allowed); the
//	           lines go out as one pipelined write and one reply is read per line
//	raw n=N    the input (Go-escaped) is written as is and N replies are read
//	advance    ms=N moves the server's clock
//	conn       name=X switches to (or opens) connection X
func TestTranscripts(t *testing.T) {
	paths, _ := filepath.Glob("testdata/*.txt") // not datadriven.Walk: testdata/fuzz holds the fuzz corpus
	if len(paths) == 0 {
		t.Fatal("no transcripts in testdata")
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) { runTranscript(t, path) })
	}
}

// TestTranscriptsMatchRedis replays testdata/redis7/*.txt against anykv and, when redis-server is installed,
// against a real one: these transcripts hold only replies that are Redis 7's byte for byte (no "advance").
func TestTranscriptsMatchRedis(t *testing.T) {
	paths, _ := filepath.Glob("testdata/redis7/*.txt")
	if len(paths) == 0 {
		t.Fatal("no transcripts in testdata/redis7")
	}
	redisAddr := startRedisServerIfAny(t)
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			runTranscript(t, path)
			if redisAddr == "" {
				return
			}
			t.Run("redis-server", func(t *testing.T) {
				rc := dialRaw(t, redisAddr)
				rc.send("*1\r\n$8\r\nFLUSHALL\r\n")
				rc.reply()
				runTranscriptAt(t, path, func(t *testing.T) *rawConn { return dialRaw(t, redisAddr) }, nil)
			})
		})
	}
}

func runTranscript(t *testing.T, path string) {
	ts := startServer(t, Options{}, 0)
	runTranscriptAt(t, path, ts.raw, ts.advance)
}

// runTranscriptAt replays the transcript at path over connections from dial; advance moves the server's clock
// (nil: the server has no clock to move).
func runTranscriptAt(t *testing.T, path string, dial func(t *testing.T) *rawConn, advance func(time.Duration)) {
	conns := map[string]*rawConn{"main": dial(t)}
	cur := "main"
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		rc := conns[cur]
		rc.t = t
		switch d.Cmd {
		case "conn":
			var name string
			d.ScanArgs(t, "name", &name)
			if conns[name] == nil {
				conns[name] = dial(t)
			}
			cur = name
			return ""
		case "advance":
			var ms int
			d.ScanArgs(t, "ms", &ms)
			if advance == nil {
				t.Fatal("advance: this server's clock cannot be moved")
			}
			advance(time.Duration(ms) * time.Millisecond)
			return ""
		case "send":
			lines := strings.Split(strings.TrimSpace(d.Input), "\n")
			var req strings.Builder
			for _, l := range lines {
				args := splitLine(t, l)
				fmt.Fprintf(&req, "*%d\r\n", len(args))
				for _, a := range args {
					fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
				}
			}
			rc.send(req.String())
			var out strings.Builder
			for range lines {
				out.WriteString(rc.reply())
			}
			return strings.ReplaceAll(out.String(), "\r\n", "\n")
		case "raw":
			var n int
			d.ScanArgs(t, "n", &n)
			in, err := strconv.Unquote(`"` + strings.ReplaceAll(strings.TrimSpace(d.Input), `"`, `\"`) + `"`)
			if err != nil {
				t.Fatalf("raw input: %v", err)
			}
			rc.send(in)
			var out strings.Builder
			for i := 0; i < n; i++ {
				out.WriteString(rc.reply())
			}
			if d.HasArg("closed") {
				fmt.Fprintf(&out, "(closed: %v)\n", rc.closed())
			}
			return strings.ReplaceAll(out.String(), "\r\n", "\n")
		}
		t.Fatalf("unknown directive %q", d.Cmd)
		return ""
	})
}

// splitLine splits a command line on spaces, honouring "double-quoted" Go-escaped arguments.
func splitLine(t *testing.T, l string) []string {
	var args []string
	for l = strings.TrimSpace(l); l != ""; l = strings.TrimSpace(l) {
		if l[0] == '"' {
			end := 1
			for end < len(l) && (l[end] != '"' || l[end-1] == '\\') {
				end++
			}
			a, err := strconv.Unquote(l[:end+1])
			if err != nil {
				t.Fatalf("bad quoted argument in %q: %v", l, err)
			}
			args = append(args, a)
			l = l[end+1:]
			continue
		}
		i := strings.IndexByte(l, ' ')
		if i < 0 {
			i = len(l)
		}
		args = append(args, l[:i])
		l = l[i:]
	}
	return args
}
