package redis

import (
	"strconv"
	"strings"
	"testing"
)

// respArray is args as a RESP array, for a transcript step whose arguments hold spaces or NUL bytes.
func respArray(args ...string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}

// TestStreamIDTextsMatchRedis: stream IDs are read as Redis's streamGenericParseIDOrReply reads them, each number
// by string2ull, so strtoull's forms count: a leading '+', white space, leading zeros and a '-' that negates
// modulo 2^64 (" -1" is the largest number, "-01" too, "-1" none), a part read up to a NUL byte, at most 127
// bytes. anykv refused "+5-1", " 6-1", "7-+1" and "+9-*" as invalid IDs, where Redis adds those entries, and
// XRANGE, XDEL, XTRIM MINID and the group commands refused them likewise. (XPENDING in its summary form: the
// extended form's idle times differ by a millisecond from one server to the other.)
func TestStreamIDTextsMatchRedis(t *testing.T) {
	long := strings.Repeat("0", 130) + "1-1"
	var steps []transcriptStep
	for _, args := range [][]string{
		{"DEL", "s"}, {"XADD", "s", "+5-1", "a", "b"}, {"XADD", "s", " 6-1", "a", "b"}, {"XADD", "s", "7-+1", "a", "b"},
		{"XADD", "s", "+9-*", "a", "b"}, {"XADD", "s", "\t+10-\v3", "a", "b"}, {"XADD", "s", "11\x00zz", "a", "b"},
		{"XADD", "s", "12-*\x00", "a", "b"}, {"XADD", "s", "12-*\x00x", "a", "b"}, {"XADD", "s", "13-1 ", "a", "b"},
		{"XADD", "s", "-0", "a", "b"}, {"XADD", "s", "14--1", "a", "b"}, {"XADD", "s", "0x10-1", "a", "b"},
		{"XADD", "s", "1_5-1", "a", "b"}, {"XADD", "s", "++16-1", "a", "b"}, {"XADD", "s", long, "a", "b"},
		{"XADD", "s", "18446744073709551616-1", "a", "b"}, {"XLEN", "s"},
		{"XRANGE", "s", "+5", "+7"}, {"XRANGE", "s", "(+5", " 8"}, {"XREVRANGE", "s", "+", "00006-01"},
		{"XDEL", "s", "+5-1", "x"}, {"XDEL", "s", "+5-1"}, {"XTRIM", "s", "MINID", " 7"}, {"XLEN", "s"},
		{"XGROUP", "CREATE", "s", "g", "+0"}, {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"},
		{"XACK", "s", "g", "+7-1"}, {"XPENDING", "s", "g"}, {"XCLAIM", "s", "g", "d", "0", " 9"},
		{"XREAD", "STREAMS", "s", "+8"}, {"XSETID", "s", " -1"}, {"XINFO", "STREAM", "s"},
	} {
		steps = append(steps, transcriptStep{"pub", respArray(args...), 1})
	}
	sameAsRedis(t, func(t *testing.T, addr string) []string { return pubsubTranscript(t, addr, steps) })
}
