package gen

import (
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"strconv"
)

// Every value written by a workload starts with a printable header naming
// the key it belongs to and the write that produced it, and is covered by a
// CRC, so a read can tell right, wrong, stale and corrupt data apart:
//
//	KV1:<keyhash 16 hex>:<seq 16 hex>:<length 8 hex>:<crc32c 8 hex>:<payload>
//
// The CRC covers the header up to and including the length field and the
// payload. The payload is printable (lower-case letters and digits) derived
// from the key hash and sequence number. Values are never shorter than
// HeaderLen bytes.
const HeaderLen = 56

const (
	offKey = 4
	offSeq = 21
	offLen = 38
	offCRC = 47
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// KeyHash identifies the key (and table) a value belongs to.
func KeyHash(table, key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(table))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return h.Sum64()
}

// Header is the decoded header of a value.
type Header struct {
	KeyHash uint64
	Seq     uint64
	Len     int
}

// Encode returns a value of size bytes (at least HeaderLen) for the write
// number seq of the key with hash keyHash. dst is reused when large enough.
func Encode(dst []byte, keyHash, seq uint64, size int) []byte {
	if size < HeaderLen {
		size = HeaderLen
	}
	if cap(dst) < size {
		dst = make([]byte, size)
	}
	v := dst[:size]
	copy(v, "KV1:")
	putHex(v[offKey:offKey+16], keyHash)
	v[offSeq-1] = ':'
	putHex(v[offSeq:offSeq+16], seq)
	v[offLen-1] = ':'
	putHex(v[offLen:offLen+8], uint64(size))
	v[offCRC-1] = ':'
	v[HeaderLen-1] = ':'
	fillPayload(v[HeaderLen:], keyHash^(seq*0x9E3779B97F4A7C15))
	crc := crc32.Update(crc32.Checksum(v[:offCRC], castagnoli), castagnoli, v[HeaderLen:])
	putHex(v[offCRC:offCRC+8], uint64(crc))
	return v
}

// ErrCorrupt is wrapped by every Decode error.
var ErrCorrupt = errors.New("corrupt value")

// Decode checks a value's framing, length and CRC and returns its header.
func Decode(v []byte) (Header, error) {
	if len(v) < HeaderLen || string(v[:4]) != "KV1:" || v[offSeq-1] != ':' || v[offLen-1] != ':' ||
		v[offCRC-1] != ':' || v[HeaderLen-1] != ':' {
		return Header{}, fmt.Errorf("%w: bad header %q", ErrCorrupt, clip(v))
	}
	kh, err1 := strconv.ParseUint(string(v[offKey:offKey+16]), 16, 64)
	seq, err2 := strconv.ParseUint(string(v[offSeq:offSeq+16]), 16, 64)
	n, err3 := strconv.ParseUint(string(v[offLen:offLen+8]), 16, 32)
	crc, err4 := strconv.ParseUint(string(v[offCRC:offCRC+8]), 16, 32)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return Header{}, fmt.Errorf("%w: bad header %q", ErrCorrupt, clip(v))
	}
	if int(n) != len(v) {
		return Header{}, fmt.Errorf("%w: length %d, header says %d", ErrCorrupt, len(v), n)
	}
	got := crc32.Update(crc32.Checksum(v[:offCRC], castagnoli), castagnoli, v[HeaderLen:])
	if uint64(got) != crc {
		return Header{}, fmt.Errorf("%w: crc %08x, header says %08x", ErrCorrupt, got, crc)
	}
	return Header{KeyHash: kh, Seq: seq, Len: int(n)}, nil
}

func clip(v []byte) []byte {
	if len(v) > 24 {
		return v[:24]
	}
	return v
}

const hexdigits = "0123456789abcdef"

func putHex(dst []byte, x uint64) {
	for i := len(dst) - 1; i >= 0; i-- {
		dst[i] = hexdigits[x&0xf]
		x >>= 4
	}
}

const payloadChars = "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz01"

func fillPayload(p []byte, state uint64) {
	if state == 0 {
		state = 1
	}
	for i := 0; i < len(p); {
		// xorshift64*
		state ^= state >> 12
		state ^= state << 25
		state ^= state >> 27
		x := state * 2685821657736338717
		for j := 0; j < 8 && i < len(p); j++ {
			p[i] = payloadChars[x&63]
			x >>= 8
			i++
		}
	}
}
