package engine

// Item is one stored value with its metadata. Engines return Items by value; Value may alias engine memory only
// where the engine documents it (the built-in engines always return a copy the caller owns).
type Item struct {
	Value []byte
	// Flags are opaque client flags (memcached), kept exactly.
	Flags uint32
	// Expires is the absolute expiry in unix milliseconds; 0 means never.
	Expires int64
	// Version grows with every write to any key and is never reused, also across restarts. It is the CAS token.
	Version uint64
	// Kind is the item's type: a string, or the meta item of a collection (see collection.go).
	Kind Kind
}

// Live reports whether the item is visible at now (unix ms).
func (it *Item) Live(now int64) bool { return it.Expires == 0 || it.Expires > now }

// Range selects keys of one table in byte order: Start inclusive, End exclusive, nil meaning unbounded.
type Range struct {
	Start, End []byte
}

// PrefixRange returns the range of keys that begin with prefix.
func PrefixRange(prefix []byte) Range {
	if len(prefix) == 0 {
		return Range{}
	}
	return Range{Start: prefix, End: PrefixEnd(prefix)}
}

// PrefixEnd returns the smallest key greater than every key with the prefix, or nil if there is none (all 0xff).
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// Contains reports whether key lies in the range.
func (r Range) Contains(key []byte) bool {
	if r.Start != nil && string(key) < string(r.Start) {
		return false
	}
	return r.End == nil || string(key) < string(r.End)
}
