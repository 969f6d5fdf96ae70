package rdb

// lzfDecompress expands LZF data (liblzf's format, which RDB strings compressed with RDB_ENC_LZF use) into
// exactly n bytes; ok is false when the data is malformed or does not expand to exactly n bytes. It never writes
// past n bytes, so a hostile input costs at most the n bytes its caller already bounded.
func lzfDecompress(in []byte, n int) (out []byte, ok bool) {
	out = make([]byte, 0, n)
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 1<<5 { // a literal run of ctrl+1 bytes
			ctrl++
			if len(out)+ctrl > n || i+ctrl > len(in) {
				return nil, false
			}
			out = append(out, in[i:i+ctrl]...)
			i += ctrl
			continue
		}
		// A back reference: length ctrl>>5 (7: one more byte adds to it), plus 2; distance from the next byte.
		length := ctrl >> 5
		if i >= len(in) {
			return nil, false
		}
		if length == 7 {
			length += int(in[i])
			i++
			if i >= len(in) {
				return nil, false
			}
		}
		ref := len(out) - (ctrl&0x1f)<<8 - 1 - int(in[i])
		i++
		if len(out)+length+2 > n || ref < 0 {
			return nil, false
		}
		for k := 0; k < length+2; k++ { // byte by byte: the source may overlap what it writes
			out = append(out, out[ref+k])
		}
	}
	return out, len(out) == n
}
