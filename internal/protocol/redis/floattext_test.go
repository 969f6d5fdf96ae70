package redis

import (
	"strconv"
	"strings"
	"testing"
)

// floatTexts are numbers as text at the edges of strtold's syntax and of long double's range: hexadecimal, infinities,
// signs, Go's own syntax that C does not read (underscores, 0b and 0o), spaces, and values that overflow a 64-bit
// count of milliseconds or round to zero.
var floatTexts = []string{"1", ".5", "5.", "+.5", "-0", "0.0001", "1e-5", "0x10", "0X10", "+0x10", "-0x10", "0x.8",
	"0x1p-2", "0x1P4", "0x10.8", "0x1.8p1", "00x10", "0x", "1e", "1e2", "1E2", "inf", "+inf", "-inf", "Infinity",
	"nan", "-nan", "1_0", "0x_10", "0b1", "0o7", "-0b1", "+-1", " 1", "1 ", "1e15", "9.2e15", "9.3e15",
	"9223372036854775", "9223372036854776", "1e18", "1e20", "1e400", "1e4933", "1e5000", "-0.0001", "-0.0009",
	"-0.001", "-0.0011", "-1", "-1e-400", "1e-400", "1e-4950", "3.6e-4951", "1e-4951", "1e-5000", "-1e-5000",
	"1e-700000000", "1e700000000", "0x1p-16446", "0x1p-16445", "1p5", "1e5p1", "0.000" + strings.Repeat("1", 5114),
	"0.000" + strings.Repeat("1", 5115)} // 5119 and 5120 characters: Redis reads at most 5119

// timeoutTranscript sends every text above as the timeout of BLPOP, BZPOPMIN and BLMOVE on keys that hold
// something (so no valid one blocks) and as INCRBYFLOAT's and HINCRBYFLOAT's increment: Redis reads all of them with
// strtold in long double, and either answers at once or refuses the text with its error.
func timeoutTranscript(t *testing.T, addr string) []string {
	steps := []transcriptStep{{"pub", "FLUSHALL", 1}}
	for i, f := range floatTexts {
		steps = append(steps, transcriptStep{"pub", "RPUSH l a b", 1}, transcriptStep{"pub", "ZADD z 1 m", 1},
			transcriptStep{"pub", respCmd("BLPOP", "l", f), 1}, transcriptStep{"pub", respCmd("BZPOPMIN", "z", f), 1},
			transcriptStep{"pub", respCmd("BLMOVE", "l", "l2", "LEFT", "RIGHT", f), 1},
			transcriptStep{"pub", respCmd("INCRBYFLOAT", "n"+strconv.Itoa(i), f), 1},
			transcriptStep{"pub", respCmd("HINCRBYFLOAT", "h", f, f), 1}, transcriptStep{"pub", "DEL l l2", 1})
	}
	return pubsubTranscript(t, addr, steps)
}

// TestFloatTextsMatchRedis: blocking timeouts and float increments accept and refuse what redis-server does, with
// its errors ("timeout is negative" for what overflows a 64-bit count of milliseconds, as x86-64's conversion
// makes it). anykv refused hexadecimal timeouts and those over 292 years, and took 1_0 and 1e-5000 as numbers.
func TestFloatTextsMatchRedis(t *testing.T) {
	sameAsRedis(t, timeoutTranscript)
}
