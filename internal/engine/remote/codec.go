package remote

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"anykv/internal/engine"
)

// ItemHeader is the size of the header AppendItem writes ahead of the value.
const ItemHeader = 24

// AppendItem appends the envelope of it to dst, for datastores that keep an item as one opaque value (etcd,
// memcached): flags and kind (8 bytes, PackFlags), absolute expiry (8), version (8), big-endian, then the value.
func AppendItem(dst []byte, it engine.Item) []byte {
	dst = binary.BigEndian.AppendUint64(dst, PackFlags(it))
	dst = binary.BigEndian.AppendUint64(dst, uint64(it.Expires))
	dst = binary.BigEndian.AppendUint64(dst, it.Version)
	return append(dst, it.Value...)
}

// DecodeItem parses an envelope AppendItem wrote; the item's value is a copy. Anything shorter than the header is
// an error wrapping engine.ErrCorrupt, never an absent item.
func DecodeItem(v []byte) (engine.Item, error) {
	if len(v) < ItemHeader {
		return engine.Item{}, fmt.Errorf("%w: not an anykv item (%d bytes)", engine.ErrCorrupt, len(v))
	}
	it := engine.Item{
		Expires: int64(binary.BigEndian.Uint64(v[8:])),
		Version: binary.BigEndian.Uint64(v[16:]),
		Value:   bytes.Clone(v[ItemHeader:]),
	}
	if it.Value == nil {
		it.Value = []byte{}
	}
	UnpackFlags(binary.BigEndian.Uint64(v), &it)
	return it, nil
}
