package memcache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"testing"
	"time"
)

// binaryUntilClose sends req and reads until the server closes the connection (failing after 10 s, so a
// connection left open fails the test), rendering what came.
func binaryUntilClose(t *testing.T, cl *client, req []byte) string {
	t.Helper()
	if _, err := cl.c.Write(req); err != nil {
		t.Fatal(err)
	}
	cl.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	out, err := io.ReadAll(cl.c)
	if err != nil {
		t.Fatalf("the connection was not closed: %v after %q", err, renderBin(t, out))
	}
	return renderBin(t, out)
}

// TestBinaryUnauthenticatedRequestClosesTheConnection: memcached with SASL (-S) answers a request other than the
// SASL commands and version from a client that has not authenticated "Auth failure." and closes the connection
// (dispatch_bin_command: close_after_write; checked against memcached 1.6.18 -S: a get, a noop, a set, an
// unknown opcode and a get without its key, each followed by a version, answer the auth failure alone and close).
// anykv answered the auth failure and went on serving the connection.
func TestBinaryUnauthenticatedRequestClosesTheConnection(t *testing.T) {
	ts := startServer(t, withPassword("s3cret pw"))
	version := binReq(opVersion, 9, 0, nil, nil, nil)
	for _, tc := range []struct {
		name string
		req  []byte
		want string
	}{
		{"get", binReq(opGet, 1, 0, nil, []byte("k"), nil), "op=00 st=20 opq=1 val=\"Auth failure.\"\n"},
		{"noop", binReq(opNoop, 2, 0, nil, nil, nil), "op=0a st=20 opq=2 val=\"Auth failure.\"\n"},
		{"setq", binReq(opSetQ, 3, 0, u32(0, 0), []byte("k"), []byte("v")), "op=11 st=20 opq=3 val=\"Auth failure.\"\n"},
		{"unknown", binReq(0x50, 4, 0, nil, nil, nil), "op=50 st=20 opq=4 val=\"Auth failure.\"\n"},
		{"get without its key", binReq(opGet, 5, 0, nil, nil, nil), "op=00 st=20 opq=5 val=\"Auth failure.\"\n"},
	} {
		cl := dial(t, ts.addr)
		if got := binaryUntilClose(t, cl, append(tc.req, version...)); got != tc.want {
			t.Errorf("%s: got\n%swant\n%s", tc.name, got, tc.want)
		}
	}
	cl := dial(t, ts.addr) // version and a failed SASL exchange do not close it
	binExchange(t, cl, append(version, binReq(opSASLAuth, 6, 0, nil, []byte("PLAIN"), []byte("\x00u\x00wrong"))...),
		"op=0b st=0 opq=9 val=\"1.6.18-anykv\"\nop=21 st=20 opq=6 val=\"Auth failure.\"\n")
	binExchange(t, cl, binReq(opSASLAuth, 7, 0, nil, []byte("PLAIN"), []byte("\x00u\x00s3cret pw")),
		"op=21 st=0 opq=7 val=\"Authenticated\"\n")
}

// TestBinaryHeaderLongerThanItsBodyIsUnknownCommand: a header whose key and extras are longer than its whole body
// contradicts itself; memcached answers it "Unknown command" and closes the connection (checked against
// memcached 1.6.18, with and without -S: before the authentication check). anykv closed it without a word.
func TestBinaryHeaderLongerThanItsBodyIsUnknownCommand(t *testing.T) {
	short := binReq(opGet, 3, 0, nil, []byte("k"), nil)
	binary.BigEndian.PutUint32(short[8:], 0) // key length 1, body length 0
	ext := binReq(opSet, 4, 0, u32(0, 0), []byte("kk"), nil)
	binary.BigEndian.PutUint32(ext[8:], 5) // extras 8 and key 2 in a body of 5
	ext = ext[:binaryHeaderLen+5]
	for _, pw := range []string{"", "s3cret pw"} {
		var opts []serverOpt
		if pw != "" {
			opts = append(opts, withPassword(pw))
		}
		ts := startServer(t, opts...)
		for _, req := range [][]byte{short, ext} {
			cl := dial(t, ts.addr)
			got := binaryUntilClose(t, cl, append(bytes.Clone(req), binReq(opNoop, 9, 0, nil, nil, nil)...))
			want := fmt.Sprintf("op=%02x st=81 opq=%d val=\"Unknown command\"\n", req[1], req[15])
			if got != want {
				t.Errorf("password %q: got\n%swant\n%s", pw, got, want)
			}
		}
	}
}
