package resp

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// result is everything a parser produced from one stream: the commands
// (copied), the error that stopped it if any, and the bytes left over.
type result struct {
	cmds     [][]string
	err      string
	buffered int
}

func (r result) String() string {
	var b strings.Builder
	for _, c := range r.cmds {
		fmt.Fprintf(&b, "%q\n", c)
	}
	if r.err != "" {
		fmt.Fprintf(&b, "error: %s\n", r.err)
	} else if r.buffered > 0 {
		fmt.Fprintf(&b, "buffered: %d\n", r.buffered)
	}
	return b.String()
}

func (r result) equal(o result) bool {
	return r.err == o.err && r.buffered == o.buffered &&
		slices.EqualFunc(r.cmds, o.cmds, slices.Equal[[]string])
}

// drain takes every command Next has, appending copies to res; it reports
// false once the parser failed.
func drain(p *Parser, res *result) bool {
	for {
		args, err := p.Next()
		if err != nil {
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				res.err = "non-protocol error: " + err.Error()
			} else {
				res.err = pe.Msg
			}
			return false
		}
		if args == nil {
			res.buffered = p.Buffered()
			return true
		}
		if len(args) == 0 {
			res.err = "Next returned an empty, non-nil command"
			return false
		}
		c := make([]string, len(args))
		for i, a := range args {
			c[i] = string(a)
		}
		res.cmds = append(res.cmds, c)
	}
}

// parseChunks feeds the chunks one at a time, draining after each.
func parseChunks(l Limits, chunks ...[]byte) result {
	p := NewParser(l)
	var res result
	for _, c := range chunks {
		p.Feed(c)
		if !drain(p, &res) {
			res.buffered = 0
			break
		}
	}
	return res
}

// parseWhole parses data fed in one piece.
func parseWhole(l Limits, data []byte) result { return parseChunks(l, data) }

// parseBytewise parses data fed one byte at a time.
func parseBytewise(l Limits, data []byte) result {
	chunks := make([][]byte, len(data))
	for i := range data {
		chunks[i] = data[i : i+1]
	}
	return parseChunks(l, chunks...)
}

// multibulk encodes args as a RESP multibulk request.
func multibulk(args ...string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}

// unescapeInput turns test-file text into bytes: \r \n \t \\ and \xHH are
// escapes, and the file's own line breaks are dropped, so a request can be
// laid out over several lines.
func unescapeInput(s string) ([]byte, error) {
	var out []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\n' {
			continue
		}
		if c != '\\' {
			out = append(out, c)
			continue
		}
		if i+1 >= len(s) {
			return nil, fmt.Errorf("trailing backslash")
		}
		i++
		switch s[i] {
		case 'r':
			out = append(out, '\r')
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case '\\':
			out = append(out, '\\')
		case 'x':
			if i+2 >= len(s) {
				return nil, fmt.Errorf("short \\x escape")
			}
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return nil, err
			}
			out = append(out, byte(v))
			i += 2
		default:
			return nil, fmt.Errorf("unknown escape \\%c", s[i])
		}
	}
	return out, nil
}
