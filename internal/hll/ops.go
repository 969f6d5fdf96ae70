package hll

import "encoding/binary"

// The operations behind PFADD, PFCOUNT, PFMERGE and PFDEBUG, on values already checked with Check. Functions
// that change a value work on a copy and return it; the caller's slice is never written.

// Add adds elems to v (nil: a new HyperLogLog is created) as PFADD does: each element's register is raised, a
// sparse value turning dense when it must (maxBytes: hll-sparse-max-bytes). It returns the new value and whether
// any register changed or the value was created (PFADD's 1), and invalidates the cached cardinality if so.
func Add(v []byte, elems [][]byte, maxBytes int) ([]byte, bool, error) {
	updated := v == nil
	if v == nil {
		v = New()
	} else {
		v = append(make([]byte, 0, len(v)+8), v...)
	}
	for _, e := range elems {
		index, count := PatLen(e)
		changed := false
		if v[4] == Dense {
			if regs := v[HeaderSize:]; denseGet(regs, index) < count {
				denseSet(regs, index, count)
				changed = true
			}
		} else {
			var err error
			if v, changed, err = sparseSet(v, index, count, maxBytes); err != nil {
				return nil, false, err
			}
		}
		updated = updated || changed
	}
	if updated {
		invalidate(v)
	}
	return v, updated, nil
}

// Count is PFCOUNT of one key: the cached cardinality when valid, else the estimate from the registers (the
// cache is not written back). ErrCorrupt for a sparse value whose opcodes do not cover the registers.
func Count(v []byte) (uint64, error) {
	if c, ok := Cached(v); ok {
		return c, nil
	}
	if v[4] == Dense {
		return estimate(denseHisto(v)), nil
	}
	h, err := sparseHisto(v)
	if err != nil {
		return 0, err
	}
	return estimate(h), nil
}

// Max holds registers one per byte: the union of several HyperLogLogs (PFCOUNT of several keys, PFMERGE).
type Max [Registers]uint8

// Merge raises m's registers to v's, as Redis's hllMerge (ErrCorrupt for a sparse value it cannot read).
func (m *Max) Merge(v []byte) error {
	if v[4] == Dense {
		regs := v[HeaderSize:]
		for i := range m {
			m[i] = max(m[i], denseGet(regs, i))
		}
		return nil
	}
	return walkSparse(v, func(i int, val uint8) { m[i] = max(m[i], val) })
}

// Count is the estimated cardinality of the union m holds.
func (m *Max) Count() uint64 { return estimate(rawHisto(m)) }

// Store writes m into dest as PFMERGE does (dest nil: a new HyperLogLog), dense first if dense is set (an input
// was dense), else register by register into the sparse value (which may turn dense); the cached cardinality is
// invalidated.
func (m *Max) Store(dest []byte, dense bool, maxBytes int) ([]byte, error) {
	if dest == nil {
		dest = New()
	} else {
		dest = append(make([]byte, 0, len(dest)+8), dest...)
	}
	if dense {
		d, err := toDense(dest)
		if err != nil {
			return nil, err
		}
		dest = d
	}
	for i, r := range m {
		if r == 0 {
			continue
		}
		if dest[4] == Dense {
			if regs := dest[HeaderSize:]; denseGet(regs, i) < r {
				denseSet(regs, i, r)
			}
			continue
		}
		// As Redis, a failure here (the destination was read as valid by Merge) is not reported.
		dest, _, _ = sparseSet(dest, i, r, maxBytes)
	}
	invalidate(dest)
	return dest, nil
}

// ToDense returns v in the dense encoding (a copy), and whether it was sparse (PFDEBUG TODENSE and GETREG).
func ToDense(v []byte) ([]byte, bool, error) {
	if v[4] == Dense {
		return v, false, nil
	}
	d, err := toDense(v)
	return d, err == nil, err
}

// RegisterValues returns the 16384 register values of the dense value v.
func RegisterValues(v []byte) []uint8 {
	out := make([]uint8, Registers)
	regs := v[HeaderSize:]
	for i := range out {
		out[i] = denseGet(regs, i)
	}
	return out
}

// SetCached returns a copy of v whose cached cardinality is card (valid), as Redis's PFCOUNT leaves it.
func SetCached(v []byte, card uint64) []byte {
	out := append([]byte(nil), v...)
	binary.LittleEndian.PutUint64(out[8:16], card)
	return out
}
