// Package rdb reads and writes the payloads of Redis's DUMP and RESTORE: one value in Redis's RDB serialization
// (an object type byte and the encoded value), then the RDB version (2 bytes, little endian) and a CRC64 of all
// before it (8 bytes, little endian).
//
// Decode reads every encoding redis-server 7.0 writes (and the older ones it still loads, but zipmaps, modules and
// streams): plain, int-encoded and LZF-compressed strings; plain, listpack, ziplist and intset collections;
// quicklists of listpacks or ziplists. Everything in a payload is untrusted: every length and offset is checked
// against the bytes that are there before anything is read or allocated, what the value decodes to is bounded by
// Limits, and a malformed payload is ErrFormat, never a panic. Encode writes the plain encodings Redis 7.0 loads.
package rdb

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
)

// Version is the RDB version of the payloads Encode writes, Redis 7.0's; Decode refuses later ones, as 7.0 does.
const Version = 10

// The RDB object types (rdb.h).
const (
	TypeString          = 0
	TypeList            = 1
	TypeSet             = 2
	TypeZSet            = 3
	TypeHash            = 4
	TypeZSet2           = 5
	TypeModule          = 6
	TypeModule2         = 7
	TypeHashZipmap      = 9
	TypeListZiplist     = 10
	TypeSetIntset       = 11
	TypeZSetZiplist     = 12
	TypeHashZiplist     = 13
	TypeListQuicklist   = 14
	TypeStreamListpacks = 15
	TypeHashListpack    = 16
	TypeZSetListpack    = 17
	TypeListQuicklist2  = 18
	TypeStreamListpack2 = 19
)

// Errors. Redis answers RESTORE's with "ERR DUMP payload version or checksum are wrong" (ErrChecksum) and "ERR Bad
// data format" (ErrFormat).
var (
	ErrChecksum = errors.New("DUMP payload version or checksum are wrong")
	ErrFormat   = errors.New("bad data format")
	// ErrTooLarge: the value decodes to more than Limits allow (a string or member over MaxValue, or more than
	// MaxTotal in all).
	ErrTooLarge = errors.New("the restored value exceeds the server's limits")
	// ErrStream: a stream's payload, which anykv does not restore.
	ErrStream = errors.New("anykv does not restore streams from DUMP payloads")
)

// Kind is what a payload holds.
type Kind uint8

// The kinds of values.
const (
	String Kind = iota
	Hash
	List
	Set
	ZSet
)

// Value is a decoded payload. Elems holds a list's elements in order, a set's members, a hash's fields and values
// alternately, or a sorted set's members (their scores in Scores, at the same index). Members of sets, hashes
// and sorted sets are distinct (a payload naming one twice is ErrFormat).
type Value struct {
	Kind   Kind
	Str    []byte
	Elems  [][]byte
	Scores []float64
}

// Limits bound what Decode builds. MaxValue bounds each string, element, field and value; MaxTotal the bytes of
// all of them together, ElemOverhead counted for each beside its length (what storing it costs beyond its
// bytes). Zero means no bound. Reserve, if set, is called with what each string counts (its bytes and
// ElemOverhead) before it is built, once it passed the bounds: an error stops the decode and Decode returns it
// (the caller releases what the calls before reserved).
type Limits struct {
	MaxValue, MaxTotal, ElemOverhead int
	Reserve                          func(n int) error
}

// Check verifies a payload's footer as Redis's verifyDumpPayload does: at least the 10 bytes of the footer, an
// RDB version no later than Version, and the CRC64.
func Check(p []byte) error {
	if len(p) < 10 {
		return ErrChecksum
	}
	footer := p[len(p)-10:]
	if binary.LittleEndian.Uint16(footer) > Version {
		return ErrChecksum
	}
	if CRC64(0, p[:len(p)-8]) != binary.LittleEndian.Uint64(footer[2:]) {
		return ErrChecksum
	}
	return nil
}

// Decode checks a payload (Check) and decodes its value. As Redis, it reads the value from the whole payload:
// bytes between the value and the footer are ignored, and a value may reach into the footer.
func Decode(p []byte, lim Limits) (Value, error) {
	if err := Check(p); err != nil {
		return Value{}, err
	}
	d := decoder{r: reader{b: p}, lim: lim}
	v, err := d.value()
	if err != nil {
		return Value{}, err
	}
	return v, nil
}

// reader reads the payload's bytes; every read checks that the bytes are there.
type reader struct {
	b   []byte
	off int
}

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, ErrFormat
	}
	r.off++
	return r.b[r.off-1], nil
}

// take returns the next n bytes (a view of the payload).
func (r *reader) take(n uint64) ([]byte, error) {
	if n > uint64(len(r.b)-r.off) {
		return nil, ErrFormat
	}
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return s, nil
}

// length reads an RDB length; enc is set when the byte announced a special encoding (its kind in n).
func (r *reader) length() (n uint64, enc bool, err error) {
	b, err := r.byte()
	if err != nil {
		return 0, false, err
	}
	switch b >> 6 {
	case 0:
		return uint64(b & 0x3f), false, nil
	case 1:
		b2, err := r.byte()
		return uint64(b&0x3f)<<8 | uint64(b2), false, err
	case 3:
		return uint64(b & 0x3f), true, nil
	}
	switch b {
	case 0x80:
		s, err := r.take(4)
		if err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(s)), false, nil
	case 0x81:
		s, err := r.take(8)
		if err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(s), false, nil
	}
	return 0, false, ErrFormat
}

// count reads a length that counts things (not a special encoding).
func (r *reader) count() (uint64, error) {
	n, enc, err := r.length()
	if err == nil && enc {
		err = ErrFormat
	}
	return n, err
}

type decoder struct {
	r     reader
	lim   Limits
	total int
	// counting: the string being read holds an encoded structure whose elements are counted (and reserved) as
	// they are decoded (blob).
	counting bool
}

// add counts n bytes of one decoded string against the limits.
func (d *decoder) add(n uint64) error {
	if d.lim.MaxValue > 0 && n > uint64(d.lim.MaxValue) {
		return ErrTooLarge
	}
	size := int(min(n, math.MaxInt32)) + d.lim.ElemOverhead
	d.total += size
	if d.lim.MaxTotal > 0 && d.total > d.lim.MaxTotal {
		return ErrTooLarge
	}
	if d.lim.Reserve != nil && !d.counting {
		return d.lim.Reserve(size)
	}
	return nil
}

// str reads an RDB string: raw, an integer (RDB_ENC_INT8/16/32) or LZF-compressed. It is a view of the payload
// unless it had to be built.
func (d *decoder) str() ([]byte, error) {
	n, enc, err := d.r.length()
	if err != nil {
		return nil, err
	}
	if !enc {
		s, err := d.r.take(n)
		if err != nil {
			return nil, err
		}
		return s, d.add(n)
	}
	var v int64
	switch n {
	case 0, 1, 2:
		s, err := d.r.take(1 << n)
		if err != nil {
			return nil, err
		}
		switch n {
		case 0:
			v = int64(int8(s[0]))
		case 1:
			v = int64(int16(binary.LittleEndian.Uint16(s)))
		default:
			v = int64(int32(binary.LittleEndian.Uint32(s)))
		}
	case 3:
		return d.lzf()
	default:
		return nil, ErrFormat
	}
	b := strconv.AppendInt(nil, v, 10)
	return b, d.add(uint64(len(b)))
}

// lzf reads an LZF-compressed string: compressed length, length, the compressed bytes.
func (d *decoder) lzf() ([]byte, error) {
	clen, err := d.r.count()
	if err != nil {
		return nil, err
	}
	n, err := d.r.count()
	if err != nil {
		return nil, err
	}
	c, err := d.r.take(clen)
	if err != nil {
		return nil, err
	}
	if n/lzfMaxRatio > clen { // more than the compressed bytes can expand to: malformed
		return nil, ErrFormat
	}
	if err := d.add(n); err != nil { // bounds what lzfDecompress allocates before it runs
		return nil, err
	}
	if n == 0 { // liblzf expands anything into nothing without complaint, and so Redis loads it
		return []byte{}, nil
	}
	out, ok := lzfDecompress(c, int(n))
	if !ok {
		return nil, ErrFormat
	}
	return out, nil
}

// lzfMaxRatio bounds how much LZF expands: a back reference of 3 bytes yields at most 264.
const lzfMaxRatio = 88

// blob reads a string that holds an encoded structure (a listpack, ziplist or intset), checked as it is read.
func (d *decoder) blob() ([]byte, error) {
	save := d.total
	d.counting = true
	b, err := d.str()
	d.total, d.counting = save, false // what it holds is counted as it is decoded
	return b, err
}

// value reads the object type and the value.
func (d *decoder) value() (Value, error) {
	t, err := d.r.byte()
	if err != nil {
		return Value{}, err
	}
	switch t {
	case TypeString:
		s, err := d.str()
		return Value{Kind: String, Str: s}, err
	case TypeList:
		return d.plain(List, 1)
	case TypeSet:
		return d.plain(Set, 1)
	case TypeHash:
		return d.plain(Hash, 2)
	case TypeZSet, TypeZSet2:
		return d.zset(t == TypeZSet2)
	case TypeListQuicklist, TypeListQuicklist2:
		return d.quicklist(t == TypeListQuicklist2)
	case TypeListZiplist, TypeHashZiplist, TypeZSetZiplist, TypeHashListpack, TypeZSetListpack:
		kind := map[byte]Kind{TypeListZiplist: List, TypeHashZiplist: Hash, TypeHashListpack: Hash,
			TypeZSetZiplist: ZSet, TypeZSetListpack: ZSet}[t]
		v := Value{Kind: kind}
		if err := d.packed(t == TypeHashListpack || t == TypeZSetListpack, &v.Elems); err != nil {
			return Value{}, err
		}
		return finish(v)
	case TypeSetIntset:
		b, err := d.blob()
		if err != nil {
			return Value{}, err
		}
		v := Value{Kind: Set}
		if err := d.intset(b, &v.Elems); err != nil {
			return Value{}, err
		}
		return finish(v)
	case TypeStreamListpacks, TypeStreamListpack2:
		return Value{}, ErrStream
	}
	return Value{}, ErrFormat // modules, zipmaps, types Redis 7.0 does not know
}

// plain reads a value of the plain encodings: a count, then count times per strings.
func (d *decoder) plain(kind Kind, per uint64) (Value, error) {
	n, err := d.r.count()
	if err != nil {
		return Value{}, err
	}
	v := Value{Kind: kind}
	if n > uint64(len(d.r.b)) { // every string takes a byte at least
		return Value{}, ErrFormat
	}
	v.Elems = make([][]byte, 0, min(n*per, 1<<16))
	for i := uint64(0); i < n*per; i++ {
		s, err := d.str()
		if err != nil {
			return Value{}, err
		}
		v.Elems = append(v.Elems, s)
	}
	return finish(v)
}

// zset reads a plain sorted set: count, then members each with its score, 8 bytes (binary) or text.
func (d *decoder) zset(binaryScores bool) (Value, error) {
	n, err := d.r.count()
	if err != nil {
		return Value{}, err
	}
	if n > uint64(len(d.r.b)) {
		return Value{}, ErrFormat
	}
	v := Value{Kind: ZSet, Elems: make([][]byte, 0, min(n, 1<<16)), Scores: make([]float64, 0, min(n, 1<<16))}
	for range n {
		s, err := d.str()
		if err != nil {
			return Value{}, err
		}
		var f float64
		if binaryScores {
			b, err := d.r.take(8)
			if err != nil {
				return Value{}, err
			}
			f = math.Float64frombits(binary.LittleEndian.Uint64(b))
		} else if f, err = d.textScore(); err != nil {
			return Value{}, err
		}
		if math.IsNaN(f) {
			return Value{}, ErrFormat
		}
		v.Elems, v.Scores = append(v.Elems, s), append(v.Scores, f)
	}
	return finishZSet(v)
}

// textScore reads RDB_TYPE_ZSET's score: a length byte (253 NaN, 254 +inf, 255 -inf) and that much text.
func (d *decoder) textScore() (float64, error) {
	b, err := d.r.byte()
	if err != nil {
		return 0, err
	}
	switch b {
	case 253:
		return math.NaN(), nil
	case 254:
		return math.Inf(1), nil
	case 255:
		return math.Inf(-1), nil
	}
	s, err := d.r.take(uint64(b))
	if err != nil {
		return 0, err
	}
	return parseScore(s)
}

// parseScore reads a score written as text (in a listpack or ziplist, or RDB_TYPE_ZSET).
func parseScore(s []byte) (float64, error) {
	f, err := strconv.ParseFloat(string(s), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(f) {
		return 0, ErrFormat
	}
	return f, nil
}

// quicklist reads a list of nodes: each a listpack (quicklist 2: or a plain element, by its container) or a
// ziplist.
func (d *decoder) quicklist(v2 bool) (Value, error) {
	n, err := d.r.count()
	if err != nil {
		return Value{}, err
	}
	v := Value{Kind: List}
	for range n {
		container := uint64(2) // packed
		if v2 {
			if container, err = d.r.count(); err != nil {
				return Value{}, err
			}
			if container != 1 && container != 2 {
				return Value{}, ErrFormat
			}
		}
		if container == 1 { // plain: the element itself
			s, err := d.str()
			if err != nil {
				return Value{}, err
			}
			if len(s) == 0 {
				return Value{}, ErrFormat
			}
			v.Elems = append(v.Elems, s)
			continue
		}
		if err := d.packed(v2, &v.Elems); err != nil {
			return Value{}, err
		}
	}
	return finish(v)
}

// packed reads a string holding a listpack (or a ziplist) and appends its entries to out.
func (d *decoder) packed(listpack bool, out *[][]byte) error {
	b, err := d.blob()
	switch {
	case err != nil:
		return err
	case len(b) == 0:
		return ErrFormat
	case listpack:
		return d.listpack(b, out)
	}
	return d.ziplist(b, out)
}

// finish checks what a collection's elements must satisfy: at least one (Redis refuses an empty key), pairs for
// hashes and sorted sets (whose scores it then parses), no member twice.
func finish(v Value) (Value, error) {
	if len(v.Elems) == 0 {
		return Value{}, ErrFormat
	}
	switch v.Kind {
	case Hash:
		if len(v.Elems)%2 != 0 || !distinct(v.Elems, 2) {
			return Value{}, ErrFormat
		}
	case Set:
		if !distinct(v.Elems, 1) {
			return Value{}, ErrFormat
		}
	case ZSet:
		if v.Scores == nil { // pairs of member and score, from a listpack or ziplist
			if len(v.Elems)%2 != 0 {
				return Value{}, ErrFormat
			}
			members := make([][]byte, 0, len(v.Elems)/2)
			for i := 0; i < len(v.Elems); i += 2 {
				f, err := parseScore(v.Elems[i+1])
				if err != nil {
					return Value{}, err
				}
				members, v.Scores = append(members, v.Elems[i]), append(v.Scores, f)
			}
			v.Elems = members
		}
		return finishZSet(v)
	}
	return v, nil
}

func finishZSet(v Value) (Value, error) {
	if len(v.Elems) == 0 || !distinct(v.Elems, 1) {
		return Value{}, ErrFormat
	}
	return v, nil
}

// distinct reports whether every step-th element of elems, from the first, differs from the others.
func distinct(elems [][]byte, step int) bool {
	seen := make(map[string]struct{}, len(elems)/step)
	for i := 0; i < len(elems); i += step {
		if _, dup := seen[string(elems[i])]; dup {
			return false
		}
		seen[string(elems[i])] = struct{}{}
	}
	return true
}

// Stream reads bytes and RDB strings one after another from a payload's body (its footer checked and cut off by
// the caller), as FUNCTION DUMP's payload holds them: an opcode, then a library's code. Its strings are bounded
// by lim as Decode's are.
type Stream struct{ d decoder }

// NewStream reads body.
func NewStream(body []byte, lim Limits) *Stream {
	return &Stream{d: decoder{r: reader{b: body}, lim: lim}}
}

// More reports whether bytes are left.
func (s *Stream) More() bool { return s.d.r.off < len(s.d.r.b) }

// Byte reads one byte.
func (s *Stream) Byte() (byte, error) { return s.d.r.byte() }

// String reads an RDB string (raw, an integer or LZF-compressed).
func (s *Stream) String() ([]byte, error) { return s.d.str() }
