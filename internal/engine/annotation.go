package engine

import "encoding/binary"

// Annotations: a few bytes of protocol state attached to one version of a string item.
//
// memcached's meta protocol keeps per-item bits besides the value (an item is stale, a "win" token was handed
// out). Item has no room for them, and a field every engine stores would change every engine's layout for one
// protocol's sake. So such state is an item of its own in the table's member table (MemberTable), at
// AnnotationKey: generation 0, which no collection has (generations are versions, and versions start at 1).
// Its value is the version of the item it describes followed by the payload, and it counts only while that
// version is the item's: any later write of the item, by any protocol, makes it void at once. Annotations are
// written by functions (OpCall) addressed to the item's key, so they are atomic with the item and durable like
// it; kv's background reclaim deletes void ones.

// AnnotationKey is the member-table key of key's annotation.
func AnnotationKey(key []byte) []byte { return MemberPrefix(make([]byte, 0, 10+len(key)), key, 0) }

// AppendAnnotation encodes an annotation of the item version: version (8 bytes, big endian), then payload.
func AppendAnnotation(dst []byte, version uint64, payload []byte) []byte {
	return append(binary.BigEndian.AppendUint64(dst, version), payload...)
}

// DecodeAnnotation returns the version an annotation describes and its payload; ok is false if v is too
// short to be one.
func DecodeAnnotation(v []byte) (version uint64, payload []byte, ok bool) {
	if len(v) < 8 {
		return 0, nil, false
	}
	return binary.BigEndian.Uint64(v), v[8:], true
}
