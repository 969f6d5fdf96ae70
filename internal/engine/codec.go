package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// errCodec reports a malformed encoded batch.
var errCodec = errors.New("engine: malformed encoded batch")

// codecVersion is the version AppendBatch writes. DecodeBatch reads it and every earlier one; each has a golden
// encoding in testdata/codec-vN.hex. Version 1 carried every field of the flat mutation of its day; version 2
// carries, per mutation, only the fields its op reads.
const codecVersion = 2

// Bits of an encoded mutation's flag byte; each op reads only its own. Version 1 used other bits (mutationV1).
const (
	fGuard = 1 << iota
	fTouch
	fKeepTTL
	fBlind
	fUnsigned
	fDecr
	fCreate
	fAnyKind
)

// fAnyKey is OpCall's Call.AnyKey; it reuses fAnyKind's bit, which only OpGet, OpSet and OpDelete read, so
// version-2 encodings made before AnyKey existed decode as before.
const fAnyKey = fAnyKind

// AppendBatch appends the binary encoding of b to dst. The encoding is what a replication log carries; it is
// versioned so that a newer anykv can read an older log. Fields a mutation's op does not read are not encoded,
// so they decode as zero.
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

// usesItem reports which of Value, Flags and Expires op m reads.
func usesItem(m *Mutation) (value, flags, expires bool) {
	switch m.Op {
	case OpSet, OpAppend, OpPrepend:
		return true, true, true
	case OpSetRange, OpIncrFloat, OpMemberSet, OpMemberIncrFloat:
		return true, false, false
	case OpIncr, OpExpire:
		return false, false, true
	case OpGet:
		return false, false, m.Touch
	}
	return false, false, false
}

func appendMutation(dst []byte, m *Mutation) []byte {
	var f byte
	set := func(bit byte, on bool) {
		if on {
			f |= bit
		}
	}
	set(fGuard, m.Guard)
	switch m.Op {
	case OpGet, OpSet, OpDelete:
		set(fAnyKind, m.AnyKind)
	}
	switch m.Op {
	case OpGet:
		set(fTouch, m.Touch)
	case OpSet:
		set(fKeepTTL, m.Set.KeepTTL)
		set(fBlind, m.Set.Blind)
	case OpIncr, OpMemberIncr:
		set(fTouch, m.Touch && m.Op == OpIncr)
		set(fUnsigned, m.Incr.Unsigned)
		set(fDecr, m.Incr.Decr)
		set(fCreate, m.Incr.Create)
	case OpAppend, OpPrepend:
		set(fCreate, m.Edit.Create)
	case OpCall:
		set(fAnyKey, m.Call.AnyKey)
	}
	dst = append(dst, byte(m.Op), byte(m.Cond), f)
	dst = appendBytes(dst, []byte(m.Table))
	dst = appendBytes(dst, m.Key)
	if m.Cond == CondVersion {
		dst = binary.AppendUvarint(dst, m.Version)
	}
	dst = binary.AppendUvarint(dst, uint64(m.Group))
	value, flags, expires := usesItem(m)
	if value {
		dst = appendBytes(dst, m.Value)
	}
	if flags {
		dst = binary.AppendUvarint(dst, uint64(m.Flags))
	}
	if expires {
		dst = binary.AppendVarint(dst, m.Expires)
	}
	if m.Op >= OpMemberGet && m.Op <= OpMembers || m.Op == OpCheck {
		dst = append(dst, byte(m.Coll.Kind))
		dst = appendBytes(dst, m.Coll.Member)
	}
	switch m.Op {
	case OpIncr, OpMemberIncr:
		dst = binary.AppendVarint(dst, m.Incr.Delta)
		dst = binary.AppendUvarint(dst, m.Incr.UDelta)
		dst = binary.AppendUvarint(dst, m.Incr.Initial)
	case OpAppend, OpPrepend, OpSetRange:
		dst = binary.AppendVarint(dst, m.Edit.Offset)
		dst = binary.AppendUvarint(dst, uint64(m.Edit.MaxSize))
	case OpExpire:
		dst = append(dst, byte(m.Expire.Cond))
	case OpRename, OpCopy, OpSwap:
		dst = appendBytes(dst, []byte(m.Target.Table))
		dst = appendBytes(dst, m.Target.Key)
	case OpCall:
		dst = appendBytes(dst, []byte(m.Target.Table))
		dst = appendBytes(dst, m.Target.Key)
		dst = appendBytes(dst, []byte(m.Call.Name))
		dst = binary.AppendUvarint(dst, uint64(len(m.Call.Args)))
		for _, a := range m.Call.Args {
			dst = appendBytes(dst, a)
		}
		dst = binary.AppendUvarint(dst, uint64(len(m.Call.Keys)))
		for _, k := range m.Call.Keys {
			dst = appendBytes(dst, k)
		}
	}
	return dst
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

// DecodeBatch parses an encoding made by AppendBatch of this or an earlier codec version.
func DecodeBatch(data []byte) (*Batch, error) {
	d := decoder{b: data}
	v := d.byte()
	if d.err == nil && (v < 1 || v > codecVersion) {
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
		if v == 1 {
			d.mutationV1(&m)
		} else {
			d.mutation(&m)
		}
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

func (d *decoder) uint32() uint32 {
	n := d.uvarint()
	if n > math.MaxUint32 {
		d.fail()
	}
	return uint32(n)
}

// mutation reads one mutation of the current version.
func (d *decoder) mutation(m *Mutation) {
	m.Op, m.Cond = Op(d.byte()), Cond(d.byte())
	f := d.byte()
	m.Guard = f&fGuard != 0
	switch m.Op {
	case OpGet, OpSet, OpDelete:
		m.AnyKind = f&fAnyKind != 0
	}
	switch m.Op { // a bit another op would read means nothing here
	case OpGet:
		m.Touch = f&fTouch != 0
	case OpSet:
		m.Set.KeepTTL, m.Set.Blind = f&fKeepTTL != 0, f&fBlind != 0
	case OpIncr, OpMemberIncr:
		m.Touch, m.Incr.Create = f&fTouch != 0 && m.Op == OpIncr, f&fCreate != 0
		m.Incr.Unsigned, m.Incr.Decr = f&fUnsigned != 0, f&fDecr != 0
	case OpAppend, OpPrepend:
		m.Edit.Create = f&fCreate != 0
	case OpCall:
		m.Call.AnyKey = f&fAnyKey != 0
	}
	m.Table = string(d.bytes())
	m.Key = d.bytes()
	if m.Cond == CondVersion {
		m.Version = d.uvarint()
	}
	m.Group = d.uint32()
	value, flags, expires := usesItem(m)
	if value {
		m.Value = d.bytes()
	}
	if flags {
		m.Flags = d.uint32()
	}
	if expires {
		m.Expires = d.varint()
	}
	if m.Op >= OpMemberGet && m.Op <= OpMembers || m.Op == OpCheck {
		m.Coll.Kind = Kind(d.byte())
		m.Coll.Member = d.bytes()
	}
	switch m.Op {
	case OpIncr, OpMemberIncr:
		m.Incr.Delta, m.Incr.UDelta, m.Incr.Initial = d.varint(), d.uvarint(), d.uvarint()
	case OpAppend, OpPrepend, OpSetRange:
		m.Edit.Offset, m.Edit.MaxSize = d.varint(), int(d.uvarint())
	case OpExpire:
		m.Expire.Cond = ExpireCond(d.byte())
	case OpRename, OpCopy, OpSwap:
		m.Target.Table, m.Target.Key = string(d.bytes()), d.bytes()
	case OpCall:
		m.Target.Table, m.Target.Key = string(d.bytes()), d.bytes()
		m.Call.Name = string(d.bytes())
		n := d.uvarint()
		if n > uint64(len(d.b)) { // each argument takes at least a byte: bound the allocation by the input
			d.fail()
			return
		}
		for i := uint64(0); i < n; i++ {
			m.Call.Args = append(m.Call.Args, d.bytes())
		}
		if n = d.uvarint(); n > uint64(len(d.b)) {
			d.fail()
			return
		}
		for i := uint64(0); i < n; i++ {
			m.Call.Keys = append(m.Call.Keys, d.bytes())
		}
	}
}

// mutationV1 reads a version-1 mutation: every field of the flat mutation, whatever its op. Create went to
// whichever op it belonged to.
func (d *decoder) mutationV1(m *Mutation) {
	const ( // version 1's flag bits
		guard = 1 << iota
		keepTTL
		create
		touch
		unsigned
		decr
		blind
	)
	m.Op, m.Cond, m.Expire.Cond = Op(d.byte()), Cond(d.byte()), ExpireCond(d.byte())
	f := d.byte()
	m.Guard, m.Set.KeepTTL, m.Touch = f&guard != 0, f&keepTTL != 0, f&touch != 0
	m.Incr.Unsigned, m.Incr.Decr, m.Set.Blind = f&unsigned != 0, f&decr != 0, f&blind != 0
	if f&create != 0 {
		if m.Op == OpIncr {
			m.Incr.Create = true
		} else {
			m.Edit.Create = true
		}
	}
	m.Table = string(d.bytes())
	m.Key = d.bytes()
	m.Value = d.bytes()
	m.Flags = d.uint32()
	m.Expires = d.varint()
	m.Version = d.uvarint()
	m.Incr.Delta = d.varint()
	m.Incr.UDelta = d.uvarint()
	m.Incr.Initial = d.uvarint()
	m.Group = d.uint32()
	m.Edit.Offset = d.varint()
	m.Edit.MaxSize = int(d.uvarint())
	m.Target.Table = string(d.bytes())
	m.Target.Key = d.bytes()
}
