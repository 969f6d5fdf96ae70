package rdb

// CRC64 is the checksum a DUMP payload ends with: Redis's crc64 (the Jones polynomial, reflected, initial value
// 0 and no final inversion, which is why hash/crc64 cannot compute it), over the bytes before it.
func CRC64(crc uint64, p []byte) uint64 {
	for _, b := range p {
		crc = crcTable[byte(crc)^b] ^ crc>>8
	}
	return crc
}

// jones is the Jones polynomial 0xad93d23594c935a9, bits reversed.
const jones = 0x95ac9329ac4bc9b5

var crcTable = func() (t [256]uint64) {
	for i := range t {
		c := uint64(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ jones
			} else {
				c >>= 1
			}
		}
		t[i] = c
	}
	return t
}()
