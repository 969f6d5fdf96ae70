package redis

import (
	"testing"
)

// xdelScript: XDEL looks at the key before its IDs, as Redis: a missing key answers 0 and one of another type
// WRONGTYPE whatever the IDs (difffuzz seed 5000039 of --groups stream: anykv answered a bad ID's error for a
// missing key), and a bad ID among good ones deletes none of them.
const xdelScript = `DEL s x
XDEL s 1-x
XDEL s 1-1 x 0
SET x 1
XDEL x 1-x
XADD s 1-1 f a
XADD s 2-0 f b
XDEL s 1-1 x
XLEN s
XDEL s 1-1 2-0 3-0
XRANGE s - +
DEL s x`

// TestXDelMatchesRedis: XDEL's checks come in redis-server's order, byte for byte in RESP2 and RESP3.
func TestXDelMatchesRedis(t *testing.T) {
	sameAsRedisLines(t, xdelScript)
}
