package hll

import (
	"strconv"
	"strings"
)

// The sparse encoding, byte for byte as Redis's: ZERO 00xxxxxx (1..64 zero registers), XZERO 01xxxxxx yyyyyyyy
// (1..16384 zero registers), VAL 1vvvvvxx (1..4 registers of value 1..32). A byte read past the end of the value
// reads as 0, as Redis reads the terminating NUL of its string.

const (
	valMax     = 32
	valMaxLen  = 4
	zeroMaxLen = 64
)

func isZero(b byte) bool  { return b&0xc0 == 0 }
func isXZero(b byte) bool { return b&0xc0 == 0x40 }
func isVal(b byte) bool   { return b&0x80 != 0 }
func zeroLen(b byte) int  { return int(b&0x3f) + 1 }
func valValue(b byte) int { return int(b>>2&0x1f) + 1 }
func valLen(b byte) int   { return int(b&3) + 1 }
func xzeroLen(v []byte, p int) int {
	return (int(v[p]&0x3f)<<8 | int(at(v, p+1))) + 1
}
func valOp(val, n int) byte { return byte((val-1)<<2|(n-1)) | 0x80 }
func zeroOp(n int) byte     { return byte(n - 1) }
func xzero(n int) []byte    { return []byte{byte((n-1)>>8) | 0x40, byte(n - 1)} }

// at is v[i], or 0 past the end.
func at(v []byte, i int) byte {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// zeros appends the opcode for a run of n zero registers, as Redis splits one: ZERO up to 64, XZERO beyond.
func zeros(seq []byte, n int) []byte {
	if n > zeroMaxLen {
		return append(seq, xzero(n)...)
	}
	return append(seq, zeroOp(n))
}

// sparseSet raises register index of the sparse value v to count (if count is larger), in place as Redis's
// hllSparseSet: it splits the opcode holding the register and merges equal VAL opcodes around it, or promotes
// v to dense when count exceeds a VAL's range or v would grow past maxBytes. It returns the value (maybe a new
// slice) and whether the register changed; ErrCorrupt when the opcodes do not lead to the register.
func sparseSet(v []byte, index int, count uint8, maxBytes int) ([]byte, bool, error) {
	if count > valMax {
		return promote(v, index, count)
	}
	// Step 1: find the opcode covering index.
	p, end := HeaderSize, len(v)
	first, span, prev := 0, 0, -1
	for p < end {
		oplen := 1
		switch b := v[p]; {
		case isZero(b):
			span = zeroLen(b)
		case isVal(b):
			span = valLen(b)
		default:
			span, oplen = xzeroLen(v, p), 2
		}
		if index <= first+span-1 {
			break
		}
		prev = p
		p += oplen
		first += span
	}
	if span == 0 || p >= end {
		return v, false, ErrCorrupt
	}
	op := v[p]
	var runlen int
	switch {
	case isZero(op):
		runlen = zeroLen(op)
	case isXZero(op):
		runlen = xzeroLen(v, p)
	default:
		runlen = valLen(op)
	}
	// Step 2: the cases that change one byte in place.
	switch {
	case isVal(op) && valValue(op) >= int(count):
		return v, false, nil
	case isVal(op) && runlen == 1, isZero(op) && runlen == 1:
		v[p] = valOp(int(count), 1)
		return mergeVals(v, prev), true, nil
	}
	// The general case: split the opcode into up to three (XZERO-VAL-XZERO at most, 5 bytes).
	seq := make([]byte, 0, 5)
	last := first + span - 1
	if isVal(op) {
		cur := valValue(op)
		if index != first {
			seq = append(seq, valOp(cur, index-first))
		}
		seq = append(seq, valOp(int(count), 1))
		if index != last {
			seq = append(seq, valOp(cur, last-index))
		}
	} else {
		if index != first {
			seq = zeros(seq, index-first)
		}
		seq = append(seq, valOp(int(count), 1))
		if index != last {
			seq = zeros(seq, last-index)
		}
	}
	// Step 3: put the sequence in the opcode's place.
	oldlen := 1
	if isXZero(op) {
		oldlen = 2
	}
	delta := len(seq) - oldlen
	if delta > 0 && len(v)+delta > maxBytes {
		return promote(v, index, count)
	}
	if delta == 0 { // in place, as Redis (a copy here cost a copy of a crafted value of megabytes per element)
		copy(v[p:], seq) // (an XZERO cut short by the end of the value: its first byte only, as below)
		return mergeVals(v, prev), true, nil
	}
	out := make([]byte, 0, len(v)+delta+3)
	out = append(out, v[:p]...)
	out = append(out, seq...)
	out = append(out, v[min(p+oldlen, len(v)):]...)
	// (an XZERO cut short by the end of the value: Redis keeps the length it computed)
	out = out[:min(len(out), len(v)+delta)]
	return mergeVals(out, prev), true, nil
}

// mergeVals is Step 4 of Redis's hllSparseSet: from the opcode before the changed one, over up to five opcodes,
// adjacent VAL opcodes of one value merge while their length fits.
func mergeVals(v []byte, prev int) []byte {
	p := prev
	if p < 0 {
		p = HeaderSize
	}
	for scan := 5; p < len(v) && scan > 0; {
		scan--
		switch {
		case isXZero(v[p]):
			p += 2
			continue
		case isZero(v[p]):
			p++
			continue
		}
		if p+1 < len(v) && isVal(v[p+1]) && valValue(v[p]) == valValue(v[p+1]) {
			if n := valLen(v[p]) + valLen(v[p+1]); n <= valMaxLen {
				v[p+1] = valOp(valValue(v[p]), n)
				v = append(v[:p], v[p+1:]...)
				continue
			}
		}
		p++
	}
	return v
}

// promote converts v to dense and sets the register, as Redis does when a sparse value cannot hold it.
func promote(v []byte, index int, count uint8) ([]byte, bool, error) {
	d, err := toDense(v)
	if err != nil {
		return v, false, err
	}
	regs := d[HeaderSize:]
	if denseGet(regs, index) < count {
		denseSet(regs, index, count)
	}
	return d, true, nil
}

// walkSparse calls fn for each register a VAL opcode of the sparse value v sets, in order, with Redis's checks of
// hllSparseToDense and hllMerge: a VAL reaching past the last register stops the walk, and the opcodes must cover
// exactly the registers.
func walkSparse(v []byte, fn func(i int, val uint8)) error {
	i := 0
	for p := HeaderSize; p < len(v); {
		switch b := v[p]; {
		case isZero(b):
			i += zeroLen(b)
			p++
		case isXZero(b):
			i += xzeroLen(v, p)
			p += 2
		default:
			n, val := valLen(b), valValue(b)
			if i+n > Registers {
				return ErrCorrupt
			}
			for ; n > 0; n-- {
				fn(i, uint8(val))
				i++
			}
			p++
		}
	}
	if i != Registers {
		return ErrCorrupt
	}
	return nil
}

// toDense returns the dense form of v (v itself if dense), header and cached cardinality kept, as Redis's
// hllSparseToDense.
func toDense(v []byte) ([]byte, error) {
	if v[4] == Dense {
		return v, nil
	}
	d := make([]byte, DenseSize)
	copy(d, v[:HeaderSize])
	d[4] = Dense
	regs := d[HeaderSize:]
	if err := walkSparse(v, func(i int, val uint8) { denseSet(regs, i, val) }); err != nil {
		return nil, err
	}
	return d, nil
}

// sparseHisto is the register histogram of a sparse value as Redis's hllSparseRegHisto counts it (no early
// stop); ErrCorrupt unless the opcodes cover exactly the registers.
func sparseHisto(v []byte) (*histogram, error) {
	var h histogram
	i := 0
	for p := HeaderSize; p < len(v); {
		switch b := v[p]; {
		case isZero(b):
			h[0] += zeroLen(b)
			i += zeroLen(b)
			p++
		case isXZero(b):
			n := xzeroLen(v, p)
			h[0] += n
			i += n
			p += 2
		default:
			h[valValue(b)] += valLen(b)
			i += valLen(b)
			p++
		}
	}
	if i != Registers {
		return nil, ErrCorrupt
	}
	return &h, nil
}

// Decode is PFDEBUG DECODE's text of a sparse value's opcodes: "z:N" (ZERO), "Z:N" (XZERO), "v:VALUE,N" (VAL),
// separated by spaces.
func Decode(v []byte) string {
	var b strings.Builder
	for p := HeaderSize; p < len(v); {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		switch c := v[p]; {
		case isZero(c):
			b.WriteString("z:" + strconv.Itoa(zeroLen(c)))
			p++
		case isXZero(c):
			b.WriteString("Z:" + strconv.Itoa(xzeroLen(v, p)))
			p += 2
		default:
			b.WriteString("v:" + strconv.Itoa(valValue(c)) + "," + strconv.Itoa(valLen(c)))
			p++
		}
	}
	return b.String()
}
