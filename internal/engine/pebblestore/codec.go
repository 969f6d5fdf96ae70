package pebblestore

import (
	"encoding/binary"
	"errors"
	"fmt"

	"anykv/internal/engine"
)

// On-disk layout.
//
// Every Pebble key starts with a one-byte namespace tag:
//
//	meta:  0x00 name                      small records about the store itself
//	data:  0x01 uvarint(len(table)) table userkey
//
// The table name is length-prefixed, and uvarint encodings are prefix-free, so the prefix of one table can never
// be a prefix of another table's prefix: table "a" and table "a\x00b" have disjoint, contiguous key spans, and
// within a span keys sort in user-key byte order. Any byte may appear in table names and keys.
//
// A data value is a fixed 20-byte little-endian header followed by the value bytes:
//
//	kind<<56 | version uint64 | expires int64 (unix ms, 0 = never) | flags uint32 | value...
//
// The item's kind (engine.Kind: 0 for a string) rides in the top byte of the version field: versions stay below
// 2^56 (the writer refuses to go past), and every item written before kinds existed reads as a string.
const (
	nsMeta byte = 0x00
	nsData byte = 0x01

	headerLen = 8 + 8 + 4

	// formatVersion is stored under metaFormatKey; Open refuses a store written in another format.
	formatVersion = 1
)

var (
	// metaVersionKey holds a version at least as high as any allocated (8 bytes, big endian), written in the same
	// Pebble batch as the items whose versions pass it, so it is never behind the items it covers. With a journal
	// (SyncInterval) every group rewrites it with its exact version; otherwise it is a ceiling the writer raises
	// by versionReserve at a time (writer.recordVersion).
	metaVersionKey = []byte{nsMeta, 'v', 'e', 'r', 's', 'i', 'o', 'n'}
	// metaFloorKey holds, under SyncInterval, a version above every one allocated, written with a sync of its own
	// whenever the versions pass it (raised versionReserve past them): the exact record of journaled groups is not
	// synced, so an OS crash or power loss could take it back below versions clients hold as CAS uniques. Open
	// starts at least there; a clean close removes it.
	metaFloorKey = []byte{nsMeta, 'f', 'l', 'o', 'o', 'r'}
	// metaFormatKey holds formatVersion (8 bytes, big endian).
	metaFormatKey = []byte{nsMeta, 'f', 'o', 'r', 'm', 'a', 't'}

	// dataStart and dataEnd bound the whole data namespace.
	dataStart = []byte{nsData}
	dataEnd   = []byte{nsData + 1}
)

// errCorrupt reports a stored key or value that does not follow the layout above.
var errCorrupt = errors.New("pebblestore: corrupt record")

// appendTablePrefix appends the key prefix shared by every item of table.
func appendTablePrefix(dst []byte, table string) []byte {
	dst = append(dst, nsData)
	dst = binary.AppendUvarint(dst, uint64(len(table)))
	return append(dst, table...)
}

// appendKey appends the Pebble key of table/key.
func appendKey(dst []byte, table string, key []byte) []byte {
	return append(appendTablePrefix(dst, table), key...)
}

// prefixEnd returns the first key after every key that starts with the table prefix p. A prefix starts with
// nsData, so it is never all 0xff and the result always exists.
func prefixEnd(p []byte) []byte { return engine.PrefixEnd(p) }

// splitKey splits a data key into the table name and the user key; prefixLen is the length of the table prefix.
func splitKey(k []byte) (table, user []byte, prefixLen int, err error) {
	if len(k) < 2 || k[0] != nsData {
		return nil, nil, 0, fmt.Errorf("%w: key %q", errCorrupt, k)
	}
	n, w := binary.Uvarint(k[1:])
	if w <= 0 || uint64(len(k)-1-w) < n {
		return nil, nil, 0, fmt.Errorf("%w: key %q", errCorrupt, k)
	}
	end := 1 + w + int(n)
	return k[1+w : end], k[end:], end, nil
}

// maxVersion is the highest version the header can hold beside the kind.
const maxVersion = 1<<56 - 1

// putHeader writes the value header of it into dst[:headerLen].
func putHeader(dst []byte, it *engine.Item) {
	binary.LittleEndian.PutUint64(dst[0:], it.Version&maxVersion|uint64(it.Kind)<<56)
	binary.LittleEndian.PutUint64(dst[8:], uint64(it.Expires))
	binary.LittleEndian.PutUint32(dst[16:], it.Flags)
}

// decodeValue decodes a stored value; the returned Item's Value aliases v.
func decodeValue(v []byte) (engine.Item, error) {
	if len(v) < headerLen {
		return engine.Item{}, fmt.Errorf("%w: value of %d bytes", errCorrupt, len(v))
	}
	vk := binary.LittleEndian.Uint64(v[0:])
	return engine.Item{
		Version: vk & maxVersion,
		Kind:    engine.Kind(vk >> 56),
		Expires: int64(binary.LittleEndian.Uint64(v[8:])),
		Flags:   binary.LittleEndian.Uint32(v[16:]),
		Value:   v[headerLen:],
	}, nil
}

// beUint64 encodes n as 8 big-endian bytes, the format of the meta records.
func beUint64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }
