package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Proto is the wire protocol the generator speaks.
type Proto int

// Protocols.
const (
	RESP     Proto = iota // RESP2: SET key value / GET key
	Memcache              // memcached text: set key 0 0 n / get key
)

func (p Proto) String() string {
	if p == Memcache {
		return "memcache"
	}
	return "resp"
}

// outcome classifies one reply.
type outcome int

const (
	ok   outcome = iota
	errd         // the server answered an error (Err)
	fail         // a well-formed reply that is wrong: miss, bad size or bytes (Fail)
)

// errDesync means a reply could not be parsed, so the rest of the stream
// cannot be matched to requests; the connection is reset.
var errDesync = errors.New("unparseable reply")

// codec holds one connection's request templates: a request is a template
// copied into the write buffer with the key number's digits patched in, so
// building a batch allocates nothing. A value is the key's digits followed
// by filler, which lets a GET reply be checked exactly.
type codec struct {
	proto          Proto
	prefix         []byte // key prefix
	width          int    // digits of a key number
	size           int    // value size
	get, set       []byte // templates
	getKey, setKey int    // offset of the key digits in each template
	setVal         int    // offset of the value in the set template
	filler         []byte // the value after its digits
}

func newCodec(p Proto, prefix string, keys, size int) *codec {
	c := &codec{proto: p, prefix: []byte(prefix), width: len(strconv.Itoa(max(keys-1, 0))), size: size}
	c.filler = bytes.Repeat([]byte{'v'}, size-c.width)
	key := append([]byte(prefix), bytes.Repeat([]byte{'0'}, c.width)...)
	klen := strconv.Itoa(len(key))
	switch p {
	case RESP:
		c.get = []byte("*2\r\n$3\r\nGET\r\n$" + klen + "\r\n")
		c.getKey = len(c.get) + len(prefix)
		c.get = append(append(c.get, key...), "\r\n"...)
		c.set = []byte("*3\r\n$3\r\nSET\r\n$" + klen + "\r\n")
		c.setKey = len(c.set) + len(prefix)
		c.set = append(append(c.set, key...), "\r\n$"+strconv.Itoa(size)+"\r\n"...)
	case Memcache:
		c.get = []byte("get ")
		c.getKey = len(c.get) + len(prefix)
		c.get = append(append(c.get, key...), "\r\n"...)
		c.set = []byte("set ")
		c.setKey = len(c.set) + len(prefix)
		c.set = append(append(c.set, key...), " 0 0 "+strconv.Itoa(size)+"\r\n"...)
	}
	c.setVal = len(c.set)
	c.set = append(append(append(c.set, bytes.Repeat([]byte{'0'}, c.width)...), c.filler...), "\r\n"...)
	return c
}

// putDigits writes n zero-padded into dst.
func putDigits(dst []byte, n int) {
	for i := len(dst) - 1; i >= 0; i-- {
		dst[i] = byte('0' + n%10)
		n /= 10
	}
}

// appendGet appends a GET of key number k to buf.
func (c *codec) appendGet(buf []byte, k int) []byte {
	at := len(buf)
	buf = append(buf, c.get...)
	putDigits(buf[at+c.getKey:at+c.getKey+c.width], k)
	return buf
}

// appendSet appends a SET of key number k to its value.
func (c *codec) appendSet(buf []byte, k int) []byte {
	at := len(buf)
	buf = append(buf, c.set...)
	putDigits(buf[at+c.setKey:at+c.setKey+c.width], k)
	putDigits(buf[at+c.setVal:at+c.setVal+c.width], k)
	return buf
}

// checkValue describes how v (of the right size) differs from key number
// k's value ("" if it does not).
func (c *codec) checkValue(v []byte, k int) string {
	var d [20]byte
	putDigits(d[:c.width], k)
	if !bytes.Equal(v[:c.width], d[:c.width]) || !bytes.Equal(v[c.width:], c.filler) {
		return fmt.Sprintf("GET of key %d answered another value: %.40q", k, v)
	}
	return ""
}

// keyIs reports whether b is key number k's name.
func (c *codec) keyIs(b []byte, k int) bool {
	if len(b) != len(c.prefix)+c.width || !bytes.HasPrefix(b, c.prefix) {
		return false
	}
	var d [20]byte
	putDigits(d[:c.width], k)
	return bytes.Equal(b[len(c.prefix):], d[:c.width])
}

// read reads the reply to a GET (get=true) or SET of key number k. A
// non-empty string describes an error or failure; a returned error means
// the connection broke or desynchronised.
func (c *codec) read(r *bufio.Reader, get bool, k int) (outcome, string, error) {
	if c.proto == Memcache {
		return c.readMemcache(r, get, k)
	}
	return c.readRESP(r, get, k)
}

func (c *codec) readRESP(r *bufio.Reader, get bool, k int) (outcome, string, error) {
	line, err := readLine(r)
	if err != nil {
		return fail, "", err
	}
	switch {
	case line[0] == '-':
		return errd, "error reply: " + string(line), nil
	case !get && string(line) == "+OK":
		return ok, "", nil
	case get && line[0] == '$':
		n, good := atoi(line[1:])
		if !good || n < -1 {
			return fail, "", fmt.Errorf("%w: %.40q", errDesync, line)
		}
		if n == -1 {
			return fail, fmt.Sprintf("GET of key %d answered nil after the key was written", k), nil
		}
		if n != c.size {
			_, err := r.Discard(n + 2)
			return fail, fmt.Sprintf("GET of key %d answered %d bytes, want %d", k, n, c.size), err
		}
		v, err := readBody(r, n)
		if err != nil {
			return fail, "", err
		}
		if msg := c.checkValue(v, k); msg != "" {
			return fail, msg, nil
		}
		return ok, "", nil
	}
	// A reply of the wrong type: skip it whole if it parses.
	what := fmt.Sprintf("%s of key %d answered %.40q", map[bool]string{true: "GET", false: "SET"}[get], k, line)
	if err := skipRESP(r, line, 0); err != nil {
		return fail, what, err
	}
	return fail, what, nil
}

// skipRESP consumes the rest of a RESP reply whose first line is line.
func skipRESP(r *bufio.Reader, line []byte, depth int) error {
	switch line[0] {
	case '+', '-', ':':
		return nil
	case '$':
		n, good := atoi(line[1:])
		if good && n == -1 {
			return nil
		}
		if !good || n < 0 {
			break
		}
		_, err := r.Discard(n + 2)
		return err
	case '*':
		n, good := atoi(line[1:])
		if !good || n < -1 || depth > 8 {
			break
		}
		for i := 0; i < n; i++ {
			el, err := readLine(r)
			if err != nil {
				return err
			}
			if err := skipRESP(r, el, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%w: %.40q", errDesync, line)
}

func (c *codec) readMemcache(r *bufio.Reader, get bool, k int) (outcome, string, error) {
	line, err := readLine(r)
	if err != nil {
		return fail, "", err
	}
	// string(line) compared with a constant does not allocate.
	switch {
	case string(line) == "ERROR" || bytes.HasPrefix(line, []byte("SERVER_ERROR")) || bytes.HasPrefix(line, []byte("CLIENT_ERROR")):
		return errd, "error reply: " + string(line), nil
	case !get && string(line) == "STORED":
		return ok, "", nil
	case !get && (string(line) == "NOT_STORED" || string(line) == "EXISTS" || string(line) == "NOT_FOUND"):
		return fail, fmt.Sprintf("SET of key %d answered %s", k, line), nil
	case get && string(line) == "END":
		return fail, fmt.Sprintf("GET of key %d found nothing after the key was written", k), nil
	case get && bytes.HasPrefix(line, []byte("VALUE ")):
		// VALUE <key> <flags> <bytes> [<cas>]
		f := line[len("VALUE "):]
		key, f, _ := bytes.Cut(f, []byte{' '})
		_, f, _ = bytes.Cut(f, []byte{' '})
		size, _, _ := bytes.Cut(f, []byte{' '})
		n, good := atoi(size)
		if !good || n < 0 {
			return fail, "", fmt.Errorf("%w: %.40q", errDesync, line)
		}
		msg := ""
		if !c.keyIs(key, k) {
			msg = fmt.Sprintf("GET of key %d answered key %.40q", k, key)
		}
		if n != c.size {
			if _, err := r.Discard(n + 2); err != nil {
				return fail, "", err
			}
			if msg == "" {
				msg = fmt.Sprintf("GET of key %d answered %d bytes, want %d", k, n, c.size)
			}
		} else {
			v, err := readBody(r, n)
			if err != nil {
				return fail, "", err
			}
			if msg == "" {
				msg = c.checkValue(v, k)
			}
		}
		end, err := readLine(r)
		if err != nil {
			return fail, "", err
		}
		if string(end) != "END" {
			return fail, msg, fmt.Errorf("%w: %.40q after a value", errDesync, end)
		}
		if msg != "" {
			return fail, msg, nil
		}
		return ok, "", nil
	}
	return fail, "", fmt.Errorf("%w: %.40q", errDesync, line)
}

// readLine returns the next line without its CRLF, valid until the next
// read. An empty or over-long line is a desync.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("%w: line longer than %d bytes", errDesync, r.Size())
	}
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: %.40q", errDesync, line)
	}
	return line[:len(line)-2], nil
}

// readBody returns an n-byte payload (n+2 must fit the reader's buffer)
// and consumes its CRLF. The payload is valid until the next read.
func readBody(r *bufio.Reader, n int) ([]byte, error) {
	b, err := r.Peek(n + 2)
	if err != nil {
		return nil, err
	}
	if b[n] != '\r' || b[n+1] != '\n' {
		return nil, fmt.Errorf("%w: payload of %d bytes not followed by CRLF", errDesync, n)
	}
	r.Discard(n + 2)
	return b[:n], nil
}

// atoi parses a decimal integer (optionally negative) without allocating.
func atoi(b []byte) (int, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		n = n*10 + int(ch-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
