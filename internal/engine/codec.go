package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// errCodec reports a malformed encoded batch.
var errCodec = errors.New("engine: malformed encoded batch")

const codecVersion = 1

// bool flags of an encoded mutation.
const (
	fGuard = 1 << iota
	fKeepTTL
	fCreate
	fSetExpiry
	fUnsigned
	fDecr
	fBlind
)

// AppendBatch appends the binary encoding of b to dst. The encoding is what a replication log carries; it is
// versioned so that a newer anykv can read an older log.
func AppendBatch(dst []byte, b *Batch) []byte {
	dst = append(dst, codecVersion)
	dst = binary.AppendVarint(dst, b.Now)
	dst = binary.AppendUvarint(dst, uint64(len(b.Muts)))
	for i := range b.Muts {
		dst = appendMutation(dst, &b.Muts[i])
	}
	return dst
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func appendMutation(dst []byte, m *Mutation) []byte {
	var f byte
	for bit, on := range [...]bool{m.Guard, m.KeepTTL, m.Create, m.SetExpiry, m.Unsigned, m.Decr, m.Blind} {
		if on {
			f |= 1 << bit
		}
	}
	dst = append(dst, byte(m.Op), byte(m.Cond), byte(m.ExpireCond), f)
	dst = appendBytes(dst, []byte(m.Table))
	dst = appendBytes(dst, m.Key)
	dst = appendBytes(dst, m.Value)
	dst = binary.AppendUvarint(dst, uint64(m.Flags))
	dst = binary.AppendVarint(dst, m.Expires)
	dst = binary.AppendUvarint(dst, m.Version)
	dst = binary.AppendVarint(dst, m.Delta)
	dst = binary.AppendUvarint(dst, m.UDelta)
	dst = binary.AppendUvarint(dst, m.Initial)
	dst = binary.AppendUvarint(dst, uint64(m.Group))
	dst = binary.AppendVarint(dst, m.Offset)
	dst = binary.AppendUvarint(dst, uint64(m.MaxSize))
	dst = appendBytes(dst, []byte(m.Table2))
	return appendBytes(dst, m.Key2)
}

// decoder reads an encoding, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errCodec
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes returns a copy, or nil for an empty field, so decoded batches own their memory.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	if n == 0 {
		return nil
	}
	v := append([]byte(nil), d.b[:n]...)
	d.b = d.b[n:]
	return v
}

// DecodeBatch parses an encoding made by AppendBatch.
func DecodeBatch(data []byte) (*Batch, error) {
	d := decoder{b: data}
	if v := d.byte(); d.err == nil && v != codecVersion {
		return nil, fmt.Errorf("%w: version %d", errCodec, v)
	}
	b := &Batch{Now: d.varint()}
	n := d.uvarint()
	if n > uint64(len(d.b)) { // each mutation takes several bytes: bound the allocation by the input
		return nil, errCodec
	}
	b.Muts = make([]Mutation, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		var m Mutation
		m.Op, m.Cond, m.ExpireCond = Op(d.byte()), Cond(d.byte()), ExpireCond(d.byte())
		f := d.byte()
		m.Guard, m.KeepTTL, m.Create = f&fGuard != 0, f&fKeepTTL != 0, f&fCreate != 0
		m.SetExpiry, m.Unsigned, m.Decr = f&fSetExpiry != 0, f&fUnsigned != 0, f&fDecr != 0
		m.Blind = f&fBlind != 0
		m.Table = string(d.bytes())
		m.Key = d.bytes()
		m.Value = d.bytes()
		flags := d.uvarint()
		if flags > math.MaxUint32 {
			d.fail()
		}
		m.Flags = uint32(flags)
		m.Expires = d.varint()
		m.Version = d.uvarint()
		m.Delta = d.varint()
		m.UDelta = d.uvarint()
		m.Initial = d.uvarint()
		group := d.uvarint()
		if group > math.MaxUint32 {
			d.fail()
		}
		m.Group = uint32(group)
		m.Offset = d.varint()
		m.MaxSize = int(d.uvarint())
		m.Table2 = string(d.bytes())
		m.Key2 = d.bytes()
		b.Muts = append(b.Muts, m)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	if d.err != nil {
		return nil, d.err
	}
	return b, nil
}
