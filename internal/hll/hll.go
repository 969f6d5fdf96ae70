// Package hll implements Redis's HyperLogLog on string values, in Redis's own byte format (hyperloglog.c of Redis
// 7.0): the same hash, the same dense and sparse encodings, the same cardinality estimator. A value written by
// Redis reads here and the other way round, and a count is the number Redis gives for the same elements.
//
// A value is a 16-byte header ("HYLL", encoding, 3 unused bytes, 8-byte little-endian cached cardinality whose
// top bit marks it stale) followed by the registers: 16384 6-bit registers packed LSB first (dense) or a run
// length code of ZERO, XZERO and VAL opcodes (sparse).
package hll

import (
	"encoding/binary"
	"math"
)

const (
	// P is the number of hash bits that pick a register; Q the bits left for the run of zeros.
	P = 14
	Q = 64 - P
	// Registers is the number of registers.
	Registers = 1 << P
	// HeaderSize is the bytes before the registers.
	HeaderSize = 16
	// DenseSize is the exact length of a dense value.
	DenseSize = HeaderSize + (Registers*6+7)/8
	// Dense and Sparse are the encoding byte's values.
	Dense  = 0
	Sparse = 1
	// SparseMaxBytes is Redis's default hll-sparse-max-bytes: a sparse value that would grow past it turns dense.
	// anykv fixes it (CONFIG SET cannot change it).
	SparseMaxBytes = 3000

	regMax = 63
	seed   = 0xadc83b19
	// alphaInf is 0.5/ln(2), the estimator's constant for m registers as m grows.
	alphaInf = 0.721347520444481703680
)

// replyError is an error whose text is Redis's reply, word for word.
type replyError string

func (e replyError) Error() string { return string(e) }

var (
	// ErrNotHLL: the string is not a HyperLogLog (too short, wrong magic, unknown encoding, dense of the wrong
	// length). Its text is Redis's reply.
	ErrNotHLL error = replyError("WRONGTYPE Key is not a valid HyperLogLog string value.")
	// ErrCorrupt: a sparse value whose opcodes do not cover exactly the registers. Its text is Redis's reply.
	ErrCorrupt error = replyError("INVALIDOBJ Corrupted HLL object detected")
)

// Check reports whether v is a HyperLogLog value, as Redis's isHLLObjectOrReply judges it (the sparse opcodes are
// checked only when read).
func Check(v []byte) error {
	if len(v) < HeaderSize || string(v[:4]) != "HYLL" || v[4] > Sparse || v[4] == Dense && len(v) != DenseSize {
		return ErrNotHLL
	}
	return nil
}

// IsSparse reports whether the checked value v is sparse.
func IsSparse(v []byte) bool { return v[4] == Sparse }

// New returns an empty HyperLogLog: sparse, one XZERO opcode for all registers, cached cardinality 0 (valid).
func New() []byte {
	v := make([]byte, HeaderSize, HeaderSize+2)
	copy(v, "HYLL")
	v[4] = Sparse
	return append(v, xzero(Registers)...)
}

// Cached returns the cached cardinality of v, if valid.
func Cached(v []byte) (uint64, bool) {
	return binary.LittleEndian.Uint64(v[8:16]), v[15]&0x80 == 0
}

// invalidate marks v's cached cardinality stale.
func invalidate(v []byte) { v[15] |= 0x80 }

// MurmurHash64A is Austin Appleby's 64-bit MurmurHash2 as Redis has it (little-endian reads on every machine).
func MurmurHash64A(key []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ uint64(len(key))*m
	n := len(key) &^ 7
	for i := 0; i < n; i += 8 {
		k := binary.LittleEndian.Uint64(key[i:])
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
	}
	if tail := key[n:]; len(tail) > 0 {
		for i := len(tail) - 1; i >= 0; i-- {
			h ^= uint64(tail[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// PatLen is Redis's hllPatLen: the register ele falls in (the hash's low P bits) and the length of the run of
// zeros after them plus one (1..Q+1; bit Q of the rest is forced so the run ends).
func PatLen(ele []byte) (index int, count uint8) {
	h := MurmurHash64A(ele, seed)
	index = int(h & (Registers - 1))
	h >>= P
	h |= 1 << Q
	count = 1
	for bit := uint64(1); h&bit == 0; bit <<= 1 {
		count++
	}
	return index, count
}

// denseGet reads register i of the dense registers regs (Redis's bit layout: 6 bits from the LSB up).
func denseGet(regs []byte, i int) uint8 {
	b := i * 6 / 8
	fb := uint(i * 6 & 7)
	v := uint(regs[b]) >> fb
	if b+1 < len(regs) {
		v |= uint(regs[b+1]) << (8 - fb)
	}
	return uint8(v & regMax)
}

// denseSet writes val to register i of regs.
func denseSet(regs []byte, i int, val uint8) {
	b := i * 6 / 8
	fb := uint(i * 6 & 7)
	regs[b] &^= byte(regMax << fb)
	regs[b] |= byte(uint(val) << fb)
	if b+1 < len(regs) {
		regs[b+1] &^= byte(regMax >> (8 - fb))
		regs[b+1] |= byte(uint(val) >> (8 - fb))
	}
}

// histogram counts registers by value (a dense register holds up to 63).
type histogram [64]int

// denseHisto is the histogram of a dense value's registers.
func denseHisto(v []byte) *histogram {
	var h histogram
	regs := v[HeaderSize:]
	for i := 0; i < Registers; i++ {
		h[denseGet(regs, i)]++
	}
	return &h
}

// rawHisto is the histogram of registers held one per byte.
func rawHisto(regs *Max) *histogram {
	var h histogram
	for _, r := range regs {
		h[r&regMax]++
	}
	return &h
}

// estimate is Redis 5+'s cardinality estimate from the register histogram (Otmar Ertl, "New cardinality
// estimation algorithms for HyperLogLog sketches", arXiv:1702.01284), rounded half away from zero as llroundl.
// Every product is rounded on its own (float64(...)) so that no fused multiply-add changes a result bit.
func estimate(h *histogram) uint64 {
	const m = float64(Registers)
	z := float64(m * tau(float64(m-float64(h[Q+1]))/m))
	for j := Q; j >= 1; j-- {
		z += float64(h[j])
		z *= 0.5
	}
	z += float64(m * sigma(float64(h[0])/m))
	e := math.Round(float64(float64(alphaInf*m)*m) / z)
	if !(e < 1<<63) {
		// llroundl's answer out of range (registers no hash sets, from a crafted dense value): LLONG_MIN on x86.
		return 1 << 63
	}
	return uint64(e)
}

// sigma is Ertl's σ(x) = x + Σ x^(2^k)·2^(k-1), as Redis computes it.
func sigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x = float64(x * x)
		prev := z
		z += float64(x * y)
		y += y
		if prev == z {
			return z
		}
	}
}

// tau is Ertl's τ(x), as Redis computes it.
func tau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		prev := z
		y *= 0.5
		d := 1 - x
		z -= float64(float64(d*d) * y)
		if prev == z {
			return z / 3
		}
	}
}
