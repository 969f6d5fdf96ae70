package memcache

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
	"time"
)

// binaryVersionRequest is a binary-protocol version request (opcode 0x0b) with opaque 0xdeadbeef.
func binaryVersionRequest() []byte {
	req := make([]byte, binaryHeaderLen)
	req[0], req[1] = binaryRequestMagic, 0x0b
	binary.BigEndian.PutUint32(req[12:], 0xdeadbeef)
	return req
}

// TestBinaryRequestRefused checks that a connection opening with a binary-protocol request gets one binary
// response at once (status 0x0083 "not supported", opcode and opaque echoed) and is closed, with or without
// a password, however the header arrives.
func TestBinaryRequestRefused(t *testing.T) {
	want := []byte{0x81, 0x0b, 0, 0, 0, 0, 0x00, 0x83, 0, 0, 0, byte(len(binaryRefusalText)), 0xde, 0xad, 0xbe, 0xef,
		0, 0, 0, 0, 0, 0, 0, 0}
	want = append(want, binaryRefusalText...)
	for _, tc := range []struct {
		name string
		opts []serverOpt
	}{{"open", nil}, {"password", []serverOpt{withPassword("pw")}}} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, tc.opts...)
			cl := dial(t, ts.addr)
			req := binaryVersionRequest()
			// The header in two writes: nothing may be answered before it is complete.
			if _, err := cl.c.Write(req[:10]); err != nil {
				t.Fatal(err)
			}
			if _, err := cl.c.Write(req[10:]); err != nil {
				t.Fatal(err)
			}
			cl.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(cl.c) // until the server closes
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("reply %x (%v), want %x and close", got, err, want)
			}
		})
	}
	// A text session is unaffected, and 0x80 later in it is just a bad command.
	if out := serveScript([]byte("version\r\n\x80\r\n")); string(out) != "VERSION 1.6.18-anykv-test\r\nERROR\r\n" {
		t.Fatalf("text session: %q", out)
	}
}
