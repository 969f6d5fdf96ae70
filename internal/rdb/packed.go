package rdb

import (
	"encoding/binary"
	"strconv"
)

// The packed encodings: listpacks (Redis 7's small hashes, sorted sets and list nodes), ziplists (their
// predecessor) and intsets (small sets of integers). Each is read with every offset checked against its bytes;
// its integers become their decimal text, as Redis answers them.

// listpack appends the entries of the listpack b to out: a header (total bytes, 4; entry count, 2), entries
// (encoding and data, then the entry's length backwards), and the end byte 0xff, the last.
func (d *decoder) listpack(b []byte, out *[][]byte) error {
	if len(b) < 7 || binary.LittleEndian.Uint32(b) != uint32(len(b)) || b[len(b)-1] != 0xff {
		return ErrFormat
	}
	declared := int(binary.LittleEndian.Uint16(b[4:]))
	count := 0
	p := 6
	for b[p] != 0xff {
		start := p
		c := b[p]
		var v []byte
		var n int64
		isInt := true
		var size, hdr int // the entry's bytes before its backwards length; a string's header
		need := func(k int) bool { return k <= len(b)-1-start }
		switch {
		case c&0x80 == 0: // 7-bit unsigned integer
			n, size = int64(c), 1
		case c&0xc0 == 0x80: // string up to 63 bytes
			size, hdr, isInt = 1+int(c&0x3f), 1, false
		case c&0xe0 == 0xc0: // 13-bit integer
			if !need(2) {
				return ErrFormat
			}
			n, size = signExtend(uint64(c&0x1f)<<8|uint64(b[p+1]), 13), 2
		case c&0xf0 == 0xe0: // string up to 4095 bytes
			if !need(2) {
				return ErrFormat
			}
			size, hdr, isInt = 2+(int(c&0x0f)<<8|int(b[p+1])), 2, false
		case c == 0xf0: // string with a 32-bit length
			if !need(5) {
				return ErrFormat
			}
			l := binary.LittleEndian.Uint32(b[p+1:])
			if uint64(l) > uint64(len(b)) {
				return ErrFormat
			}
			size, hdr, isInt = 5+int(l), 5, false
		case c >= 0xf1 && c <= 0xf4: // 16, 24, 32, 64-bit integers
			w := int(c-0xf1) + 2
			if c == 0xf4 {
				w = 8
			}
			if !need(1 + w) {
				return ErrFormat
			}
			var u uint64
			for i := w - 1; i >= 0; i-- {
				u = u<<8 | uint64(b[p+1+i])
			}
			n, size = signExtend(u, 8*w), 1+w
		default:
			return ErrFormat
		}
		if !need(size) {
			return ErrFormat
		}
		if isInt {
			v = strconv.AppendInt(nil, n, 10)
		} else {
			v = b[p+hdr : p+size]
		}
		p += size + backlenSize(size)
		if p >= len(b) { // the entry's backwards length would reach the end byte
			return ErrFormat
		}
		if err := d.add(uint64(len(v))); err != nil {
			return err
		}
		*out = append(*out, v)
		count++
	}
	if p != len(b)-1 || declared != 0xffff && declared != count {
		return ErrFormat
	}
	return nil
}

// backlenSize is how many bytes a listpack entry of size bytes stores its length backwards in.
func backlenSize(size int) int {
	switch {
	case size <= 127:
		return 1
	case size < 16383:
		return 2
	case size < 2097151:
		return 3
	case size < 268435455:
		return 4
	}
	return 5
}

// signExtend reads the low bits of u as a two's complement integer.
func signExtend(u uint64, bits int) int64 {
	if bits < 64 && u&(1<<(bits-1)) != 0 {
		return int64(u) - 1<<bits
	}
	return int64(u)
}

// ziplist appends the entries of the ziplist b to out: a header (total bytes, 4; offset of the last entry, 4;
// entry count, 2), entries (the previous entry's length, 1 or 5 bytes; an encoding; data) and the end byte 0xff.
func (d *decoder) ziplist(b []byte, out *[][]byte) error {
	if len(b) < 11 || binary.LittleEndian.Uint32(b) != uint32(len(b)) || b[len(b)-1] != 0xff {
		return ErrFormat
	}
	declared := int(binary.LittleEndian.Uint16(b[8:]))
	count := 0
	end := len(b) - 1
	p := 10
	for b[p] != 0xff {
		if b[p] == 0xfe { // the previous entry's length, in 4 more bytes
			p += 5
		} else {
			p++
		}
		if p >= end {
			return ErrFormat
		}
		c := b[p]
		var v []byte
		var data, hdr int
		var n int64
		isInt := true
		switch {
		case c>>6 == 0:
			hdr, data, isInt = 1, int(c&0x3f), false
		case c>>6 == 1:
			if p+1 >= end {
				return ErrFormat
			}
			hdr, data, isInt = 2, int(c&0x3f)<<8|int(b[p+1]), false
		case c>>6 == 2:
			if p+5 > end {
				return ErrFormat
			}
			l := binary.BigEndian.Uint32(b[p+1:])
			if uint64(l) > uint64(len(b)) {
				return ErrFormat
			}
			hdr, data, isInt = 5, int(l), false
		case c == 0xc0, c == 0xd0, c == 0xe0, c == 0xf0, c == 0xfe:
			w := zipIntWidth(c)
			if p+1+w > end {
				return ErrFormat
			}
			var u uint64
			for i := w - 1; i >= 0; i-- {
				u = u<<8 | uint64(b[p+1+i])
			}
			hdr, data, n = 1, w, signExtend(u, 8*w)
		case c >= 0xf1 && c <= 0xfd: // an integer 0..12 in the encoding byte
			hdr, n = 1, int64(c&0x0f)-1
		default:
			return ErrFormat
		}
		if p+hdr+data > end {
			return ErrFormat
		}
		if isInt {
			v = strconv.AppendInt(nil, n, 10)
		} else {
			v = b[p+hdr : p+hdr+data]
		}
		p += hdr + data
		if err := d.add(uint64(len(v))); err != nil {
			return err
		}
		*out = append(*out, v)
		count++
	}
	if p != end || declared != 0xffff && declared != count {
		return ErrFormat
	}
	return nil
}

// intset appends the members of the intset b to out: encoding (2, 4 or 8: bytes per member), count, then the
// members, little endian, ascending and distinct.
func (d *decoder) intset(b []byte, out *[][]byte) error {
	if len(b) < 8 {
		return ErrFormat
	}
	w := binary.LittleEndian.Uint32(b)
	n := binary.LittleEndian.Uint32(b[4:])
	if w != 2 && w != 4 && w != 8 || n == 0 || uint64(len(b)) != 8+uint64(w)*uint64(n) {
		return ErrFormat
	}
	var prev int64
	for i := 0; i < int(n); i++ {
		s := b[8+i*int(w):]
		var v int64
		switch w {
		case 2:
			v = int64(int16(binary.LittleEndian.Uint16(s)))
		case 4:
			v = int64(int32(binary.LittleEndian.Uint32(s)))
		default:
			v = int64(binary.LittleEndian.Uint64(s))
		}
		if i > 0 && v <= prev {
			return ErrFormat
		}
		prev = v
		e := strconv.AppendInt(nil, v, 10)
		if err := d.add(uint64(len(e))); err != nil {
			return err
		}
		*out = append(*out, e)
	}
	return nil
}

// zipIntWidth is the bytes of a ziplist integer of encoding c.
func zipIntWidth(c byte) int {
	switch c {
	case 0xc0:
		return 2
	case 0xd0:
		return 4
	case 0xe0:
		return 8
	case 0xf0:
		return 3
	}
	return 1
}
