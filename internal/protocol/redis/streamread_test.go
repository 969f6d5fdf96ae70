package redis

import (
	"testing"
)

// xreadMaxIDScript: XREAD after the largest ID reads nothing, but its key's type is checked as every other key's
// (difffuzz seed 5300076, --groups stream,keys,exp,misc: anykv passed over a key of another type there, and
// answered the other streams' entries where Redis answers WRONGTYPE).
const xreadMaxIDScript = `DEL s x
XADD s 1-1 f a
SET x 1
XREAD STREAMS s 18446744073709551615-18446744073709551615
XREAD STREAMS x 18446744073709551615-18446744073709551615
XREAD STREAMS nosuch 18446744073709551615-18446744073709551615
XREAD STREAMS s x 0 18446744073709551615-18446744073709551615
XREAD COUNT 1 STREAMS x s 18446744073709551615-18446744073709551615 0
XADD s 18446744073709551615-18446744073709551615 f b
XREAD STREAMS s 18446744073709551615-18446744073709551615
XREAD STREAMS s 18446744073709551615-18446744073709551614
DEL s x`

// TestXReadMaxIDMatchesRedis: XREAD after the largest ID answers as redis-server does, byte for byte in RESP2 and
// RESP3.
func TestXReadMaxIDMatchesRedis(t *testing.T) {
	sameAsRedisLines(t, xreadMaxIDScript)
}
