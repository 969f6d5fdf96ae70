package collections

import (
	"encoding/binary"

	"anykv/internal/engine"
)

// A reply tree: the consumer-group functions (XPENDING, XCLAIM, XINFO, ...) answer nested arrays and maps whose
// shape depends on what they read, so they build the reply itself, as a compact encoding in Result.New.Value
// that the protocol writes out (WalkReply) in the client's protocol: a map is a RESP3 map, or a flat array in
// RESP2. A function stays a value a log can carry, and no second reading of the stream is needed to answer.

// Reply tree node tags.
const (
	replyArray     = 'a' // uvarint n, then n nodes
	replyMap       = 'm' // uvarint n, then n key/value node pairs
	replyBulk      = 'b' // uvarint length, bytes
	replyInt       = 'i' // varint
	replyNull      = 'n' // a null bulk string
	replyNullArray = 'N' // a null array
)

// replyBuf builds a reply tree.
type replyBuf []byte

func (r *replyBuf) array(n int)     { *r = binary.AppendUvarint(append(*r, replyArray), uint64(n)) }
func (r *replyBuf) mapOf(n int)     { *r = binary.AppendUvarint(append(*r, replyMap), uint64(n)) }
func (r *replyBuf) integer(n int64) { *r = binary.AppendVarint(append(*r, replyInt), n) }
func (r *replyBuf) null()           { *r = append(*r, replyNull) }
func (r *replyBuf) nullArray()      { *r = append(*r, replyNullArray) }
func (r *replyBuf) bulk(b []byte) {
	*r = append(binary.AppendUvarint(append(*r, replyBulk), uint64(len(b))), b...)
}
func (r *replyBuf) str(s string) { r.bulk([]byte(s)) }
func (r *replyBuf) id(id ID)     { r.str(id.String()) }

// entry adds a stream entry as Redis answers one: [id, [field, value, ...]].
func (r *replyBuf) entry(id ID, fields []byte) error {
	fs, err := DecodeFields(fields)
	if err != nil {
		return err
	}
	r.array(2)
	r.id(id)
	r.array(len(fs))
	for _, f := range fs {
		r.bulk(f)
	}
	return nil
}

func (r replyBuf) result() engine.Result {
	return engine.Result{New: engine.Item{Value: r}, NewFound: true}
}

// ReplyWriter is what WalkReply writes a reply tree to (resp.Writer is one).
type ReplyWriter interface {
	ArrayHeader(n int)
	MapHeader(n int)
	Bulk(b []byte)
	Int(n int64)
	Null()
	NullArray()
}

// WalkReply writes the reply tree in b to w.
func WalkReply(b []byte, w ReplyWriter) error {
	rest, err := walkReply(b, w)
	if err == nil && len(rest) > 0 {
		err = engine.ErrCorrupt
	}
	return err
}

func walkReply(b []byte, w ReplyWriter) ([]byte, error) {
	if len(b) == 0 {
		return nil, engine.ErrCorrupt
	}
	tag, b := b[0], b[1:]
	switch tag {
	case replyNull:
		w.Null()
		return b, nil
	case replyNullArray:
		w.NullArray()
		return b, nil
	case replyInt:
		n, k := binary.Varint(b)
		if k <= 0 {
			return nil, engine.ErrCorrupt
		}
		w.Int(n)
		return b[k:], nil
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, engine.ErrCorrupt
	}
	b = b[k:]
	switch tag {
	case replyBulk:
		w.Bulk(b[:n])
		return b[n:], nil
	case replyArray, replyMap:
		items := int(n)
		if tag == replyMap {
			w.MapHeader(items)
			items *= 2
		} else {
			w.ArrayHeader(items)
		}
		var err error
		for range items {
			if b, err = walkReply(b, w); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	return nil, engine.ErrCorrupt
}
