package resp

import "bytes"

// inline parses the inline command starting at p.pos once its '\n' is
// held. It reports done=false when more input is needed; done with no
// arguments for a blank line, which Redis skips.
//
// Like Redis, the line may be at most MaxInline bytes before its '\n' (a
// '\r' before the '\n' is dropped, and counts toward the limit), and it ends
// at its first NUL byte, since Redis splits it as a C string.
func (p *Parser) inline() (args [][]byte, done bool, err *ProtocolError) {
	end := p.w
	if p.w-p.pos > p.lim.MaxInline {
		end = p.pos + p.lim.MaxInline + 1
	}
	i := bytes.IndexByte(p.buf[p.scan:end], '\n')
	if i < 0 {
		p.scan = end
		if p.w-p.pos > p.lim.MaxInline {
			return nil, false, ErrTooBigInline
		}
		return nil, false, nil
	}
	nl := p.scan + i
	lineEnd := nl
	if lineEnd > p.pos && p.buf[lineEnd-1] == '\r' {
		lineEnd--
	}
	line := p.buf[p.pos:lineEnd]
	if z := bytes.IndexByte(line, 0); z >= 0 {
		line = line[:z]
	}
	p.pos = nl + 1
	p.r = p.pos
	p.state = stCommand
	args, ok := splitArgs(line, p.args[:0])
	if !ok {
		return nil, true, ErrUnbalancedQuotes
	}
	p.args = args
	return args, true, nil
}

// SplitArgs splits line into arguments with the rules of Redis's sdssplitargs (splitArgs), on a copy of it;
// false for unbalanced quotes. Redis reads script and function shebangs so.
func SplitArgs(line []byte) ([]string, bool) {
	args, ok := splitArgs(append([]byte(nil), line...), nil)
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out, ok
}

// splitArgs splits an inline command line into arguments with the rules of
// Redis's sdssplitargs, appending them to args. It unescapes in place:
// an argument is never longer than the text it came from, so the bytes it
// writes never overtake the bytes it has yet to read, and the arguments end
// up as slices of line. It reports false for unbalanced quotes.
//
// Outside quotes, an argument ends at a space, tab, CR or LF. Inside double
// quotes, \n \r \t \b \a and \xHH are escapes and a backslash before any
// other byte stands for that byte; inside single quotes only \' is an
// escape. A closing quote must be followed by whitespace or the end of the
// line; quotes may start mid-argument (a"b c" is `ab c`).
func splitArgs(line []byte, args [][]byte) ([][]byte, bool) {
	n := len(line)
	at := func(i int) byte { // like reading a C string: 0 past the end
		if i < n {
			return line[i]
		}
		return 0
	}
	i, w := 0, 0
	for {
		for i < n && isSpace(line[i]) {
			i++
		}
		if i == n {
			return args, true
		}
		start := w
		inq, insq, done := false, false, false
		for !done {
			c := at(i)
			switch {
			case inq:
				switch {
				case c == '\\' && at(i+1) == 'x' && isHex(at(i+2)) && isHex(at(i+3)):
					line[w] = unhex(at(i+2))<<4 | unhex(at(i+3))
					w++
					i += 3
				case c == '\\' && at(i+1) != 0:
					i++
					line[w] = unescape(line[i])
					w++
				case c == '"':
					if nx := at(i + 1); nx != 0 && !isSpace(nx) {
						return args, false
					}
					done = true
				case c == 0:
					return args, false
				default:
					j := runEnd(line, i, '\\', '"')
					w += copy(line[w:], line[i:j])
					i = j - 1
				}
			case insq:
				switch {
				case c == '\\' && at(i+1) == '\'':
					i++
					line[w] = '\''
					w++
				case c == '\'':
					if nx := at(i + 1); nx != 0 && !isSpace(nx) {
						return args, false
					}
					done = true
				case c == 0:
					return args, false
				default:
					j := runEnd(line, i, '\\', '\'')
					w += copy(line[w:], line[i:j])
					i = j - 1
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					j := i + 1
					for j < n && !unquotedStop[line[j]] {
						j++
					}
					w += copy(line[w:], line[i:j])
					i = j - 1
				}
			}
			if i < n {
				i++
			}
		}
		args = append(args, line[start:w:w])
	}
}

// unquotedStop marks the bytes that end a run of plain bytes outside quotes.
var unquotedStop = [256]bool{' ': true, '\n': true, '\r': true, '\t': true, '"': true, '\'': true}

// runEnd returns the index of the first byte at or after i+1 that is a or b,
// or len(line): the end of a run of bytes copied as they are. Copying a run
// at once is what keeps inline parsing fast; the byte at i is already known
// to be plain.
func runEnd(line []byte, i int, a, b byte) int {
	j := i + 1
	for j < len(line) && line[j] != a && line[j] != b {
		j++
	}
	return j
}

// isSpace is C's isspace in the "C" locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// isHex reports whether c is a hexadecimal digit.
func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// unhex returns the value of hexadecimal digit c.
func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}

// unescape maps the byte after a backslash inside double quotes to the byte
// it stands for.
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}
