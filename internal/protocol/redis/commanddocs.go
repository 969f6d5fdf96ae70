package redis

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
)

// COMMAND DOCS answers Redis's own documentation of each command (summary, since, group, complexity, history,
// arguments, subcommands), so redis-cli's "help <command>" shows the syntax. commanddocs.json holds, per command
// anykv serves, the RESP3 reply redis-server 7 gives to COMMAND DOCS (the entry's value); TestCommandDocsFile
// checks it against a real redis-server and regenerates it with -rewrite. A RESP2 connection gets the same reply
// with maps and sets as arrays, as Redis sends it.

//go:embed commanddocs.json
var commandDocsJSON []byte

// commandDocs are the documented entries in both protocols, by command name.
var commandDocs = map[string][2][]byte{}

func init() {
	var raw map[string]string
	if err := json.Unmarshal(commandDocsJSON, &raw); err != nil {
		panic("redis: commanddocs.json: " + err.Error())
	}
	for name, r3 := range raw {
		r2, err := resp3To2([]byte(r3))
		if err != nil {
			panic(fmt.Sprintf("redis: commanddocs.json: %s: %v", name, err))
		}
		commandDocs[name] = [2][]byte{r2, []byte(r3)}
	}
}

// writeCommandDoc writes one COMMAND DOCS entry: Redis's documentation, or for a command it lacks the summary,
// since and group anykv knows.
func writeCommandDoc(s *session, c *command) {
	s.w.BulkString(c.name)
	if d, ok := commandDocs[c.name]; ok {
		if s.w.Proto() == 3 {
			s.w.Raw(d[1])
		} else {
			s.w.Raw(d[0])
		}
		return
	}
	s.w.MapHeader(3)
	s.w.BulkString("summary")
	s.w.BulkString(c.summary)
	s.w.BulkString("since")
	s.w.BulkString(orDefault(c.since, "1.0.0"))
	s.w.BulkString("group")
	s.w.BulkString(orDefault(c.groupName, "generic"))
}

// resp3To2 rewrites one RESP3 value as RESP2: maps become arrays of keys and values, sets arrays, nulls null
// bulks, doubles bulk strings and booleans integers.
func resp3To2(in []byte) ([]byte, error) {
	var out []byte
	var walk func(i int) (int, error)
	walk = func(i int) (int, error) {
		end := bytes.Index(in[i:], []byte("\r\n"))
		if end < 0 {
			return 0, fmt.Errorf("no CRLF at %d", i)
		}
		end += i
		t, head := in[i], string(in[i+1:end])
		next := end + 2
		switch t {
		case '+', '-', ':':
			out = append(out, in[i:next]...)
			return next, nil
		case '$':
			n, err := strconv.Atoi(head)
			if err != nil || next+n+2 > len(in) {
				return 0, fmt.Errorf("bad bulk at %d", i)
			}
			out = append(out, in[i:next+n+2]...)
			return next + n + 2, nil
		case '_':
			out = append(out, "$-1\r\n"...)
			return next, nil
		case ',':
			out = append(out, "$"+strconv.Itoa(len(head))+"\r\n"+head+"\r\n"...)
			return next, nil
		case '#':
			if head == "t" {
				out = append(out, ":1\r\n"...)
			} else {
				out = append(out, ":0\r\n"...)
			}
			return next, nil
		case '*', '~', '%':
			n, err := strconv.Atoi(head)
			if err != nil {
				return 0, fmt.Errorf("bad length at %d", i)
			}
			if t == '%' {
				n *= 2
			}
			out = append(out, "*"+strconv.Itoa(n)+"\r\n"...)
			for k := 0; k < n; k++ {
				if next, err = walk(next); err != nil {
					return 0, err
				}
			}
			return next, nil
		}
		return 0, fmt.Errorf("unknown type %q at %d", t, i)
	}
	n, err := walk(0)
	if err == nil && n != len(in) {
		err = fmt.Errorf("%d bytes after the value", len(in)-n)
	}
	return out, err
}
