package redis

import (
	"regexp"
	"sort"
	"strings"
	"testing"
)

// subcommandStatsTranscript calls containers' subcommands directly, with a wrong arity (also queued in MULTI,
// which Redis refuses then: EXECABORT), unknown, and from a script, then reads INFO commandstats and errorstats
// with the times masked.
func subcommandStatsTranscript(t *testing.T, addr string) []string {
	c := dialRaw(t, addr)
	var out []string
	for _, args := range [][]string{
		{"FLUSHALL"}, {"XADD", "s", "1-1", "f", "v"}, {"CONFIG", "RESETSTAT"},
		{"CONFIG", "GET", "save"}, {"config", "get", "save"}, {"CONFIG", "GET"}, {"CONFIG", "FOO"},
		{"CONFIG"}, {"MULTI"}, {"CONFIG", "GET"}, {"CONFIG", "SET", "a"}, {"EXEC"}, {"XGROUP", "CREATE", "s", "g", "$"}, {"XGROUP", "CREATECONSUMER", "s", "nog", "c"},
		{"XINFO", "STREAM", "s"}, {"CLIENT", "GETNAME"}, {"OBJECT", "ENCODING", "nokey"}, {"MEMORY", "USAGE", "nokey"},
		{"EVAL", "redis.pcall('XGROUP', 'CREATECONSUMER', 's', 'nog', 'c') return redis.pcall('OBJECT', 'FREQ', 'nokey')", "0"},
		{"EVAL", "return redis.pcall('CONFIG', 'GET', 'save')", "0"},
		{"EVAL", "return redis.pcall('OBJECT', 'ENCODING')", "0"}, {"EVAL", "return redis.pcall('XINFO', 'STREAM')", "0"},
		{"EVAL", "return {redis.error_reply('E1 x'), 1, redis.error_reply('E2 y')}", "0"}, // a failed call, as Redis
		{"INFO", "commandstats"}, {"INFO", "errorstats"},
	} {
		out = append(out, c.do(args...))
	}
	// Times masked; lines sorted (Redis lists them in its hash table's order, anykv by name).
	usec := regexp.MustCompile(`usec=\d+,usec_per_call=[\d.]+`)
	for i := range out {
		out[i] = usec.ReplaceAllString(out[i], "usec=_")
		if strings.HasPrefix(out[i], "$") {
			lines := strings.Split(strings.TrimSpace(strings.SplitN(out[i], "\r\n", 2)[1]), "\r\n")
			sort.Strings(lines)
			out[i] = strings.Join(lines, "\n")
		}
	}
	return out
}

// TestSubcommandStatsMatchRedis: INFO commandstats counts a container's subcommands apart (cmdstat_config|get,
// cmdstat_xgroup|createconsumer), as Redis 7 does, calls from scripts included; an unknown subcommand counts in
// errorstats only. anykv counted them all under the container, and queued a subcommand of the wrong arity.
func TestSubcommandStatsMatchRedis(t *testing.T) {
	sameAsRedis(t, subcommandStatsTranscript)
}
