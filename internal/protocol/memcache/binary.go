package memcache

import "encoding/binary"

// The memcached binary protocol is not served. memcached tells it from the text protocol by the first byte of
// a connection (the request magic 0x80); anykv answers such a connection at once with one binary response of
// status "not supported", echoing the request's opcode and opaque so that a binary client reports a clear error
// rather than waiting for a reply that never comes, and closes it.
const (
	binaryRequestMagic  = 0x80
	binaryResponseMagic = 0x81
	binaryHeaderLen     = 24
	binaryNotSupported  = 0x0083
	binaryRefusalText   = "binary protocol not supported: use the text or meta protocol"
)

// binaryRefusal is the response to a binary request whose 24-byte header is hdr.
func binaryRefusal(hdr []byte) []byte {
	out := make([]byte, binaryHeaderLen, binaryHeaderLen+len(binaryRefusalText))
	out[0] = binaryResponseMagic
	out[1] = hdr[1] // opcode
	binary.BigEndian.PutUint16(out[6:], binaryNotSupported)
	binary.BigEndian.PutUint32(out[8:], uint32(len(binaryRefusalText)))
	copy(out[12:16], hdr[12:16]) // opaque
	return append(out, binaryRefusalText...)
}

// sniffBinary looks at the start of a connection: it reports false while a request header that may be binary
// is still incomplete, and refuses a binary one (answer, then close).
func (c *conn) sniffBinary() bool {
	in := c.buf[c.r:c.w]
	if in[0] != binaryRequestMagic {
		c.sniffed = true
		return true
	}
	if len(in) < binaryHeaderLen {
		return false
	}
	c.sniffed = true
	c.out = append(c.out, binaryRefusal(in)...)
	c.r = c.w
	c.closing = true
	return true
}
