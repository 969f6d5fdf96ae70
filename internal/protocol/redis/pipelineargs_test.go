package redis

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// bigSAdd is a command of more arguments than keepArgsMax, whose slice the parser leaves to it (Detach).
var bigSAdd = func() string {
	b := "SADD big"
	for i := range 70 {
		b += " m" + strconv.Itoa(i)
	}
	return b
}()

// pipelineArgsScript is sent in one write: every command joins one batch, answered after the parser read them all.
var pipelineArgsScript = []string{"SET a 1", "SET bb 2", "HSET hh f v", bigSAdd, "LPUSH ll x y", "EXPIRE a 100", "DEL bb zz"}

// pipelineArgsWant: each command's keyspace event, MONITOR line and slow-log entry, named by its own arguments
// (the slow log keeps 31 of them and counts the rest, as Redis).
var pipelineArgsWant = func() []string {
	want := []string{"event set a", "event set bb", "event hset hh", "event sadd big", "event lpush ll", "event expire a", "event del bb"}
	for _, cmd := range pipelineArgsScript {
		want = append(want, "monitor "+strings.Join(quoteAll(strings.Fields(cmd)), " "))
	}
	for i := len(pipelineArgsScript) - 1; i >= 0; i-- {
		f := strings.Fields(pipelineArgsScript[i])
		if len(f) > 32 {
			f = append(f[:31:31], "... ("+strconv.Itoa(len(f)-31)+" more arguments)")
		}
		want = append(want, "slowlog "+strings.Join(f, " "))
	}
	return want
}()

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = `"` + a + `"`
	}
	return out
}

var slowlogArgs = regexp.MustCompile(`\*([0-9]+)\r\n((?:\$[0-9]+\r\n[^\r]*\r\n)+)`)

// runPipelineArgs sends pipelineArgsScript in one write with keyspace events on, a monitor and every command
// slow-logged, and returns what each of them told of the commands.
func runPipelineArgs(t *testing.T, addr string) []string {
	c := dialRaw(t, addr)
	for _, cmd := range []string{"FLUSHALL", "CONFIG SET notify-keyspace-events KEA", "CONFIG SET slowlog-log-slower-than 0"} {
		c.send(respCmd(strings.Fields(cmd)...))
		c.reply()
	}
	t.Cleanup(func() {
		c.send(respCmds("CONFIG SET notify-keyspace-events", "CONFIG SET slowlog-log-slower-than 10000"))
		c.reply()
		c.reply()
	})
	sub := dialRaw(t, addr)
	sub.send(respCmd("PSUBSCRIBE", "__keyevent@0__:*"))
	sub.reply()
	mon := dialRaw(t, addr)
	mon.send(respCmd("MONITOR"))
	mon.reply()
	c.send(respCmd("SLOWLOG", "RESET"))
	c.reply()
	c.send(respCmds(pipelineArgsScript...))
	for range pipelineArgsScript {
		c.reply()
	}
	var got []string
	for range pipelineArgsScript {
		m := pubsubFields(sub.reply()) // pmessage, pattern, channel, key
		got = append(got, "event "+strings.TrimPrefix(m[2], "__keyevent@0__:")+" "+m[3])
	}
	for len(got) < 2*len(pipelineArgsScript) {
		line := mon.reply()
		if strings.Contains(line, `"SLOWLOG"`) || strings.Contains(line, `"CONFIG"`) {
			continue
		}
		got = append(got, "monitor "+strings.TrimSuffix(line[strings.Index(line, "] ")+2:], "\r\n"))
	}
	c.send(respCmd("SLOWLOG", "GET", strconv.Itoa(len(pipelineArgsScript))))
	for _, m := range slowlogArgs.FindAllStringSubmatch(c.reply(), -1) {
		n, _ := strconv.Atoi(m[1])
		var args []string
		for _, part := range strings.Split(m[2], "\r\n") {
			if part != "" && part[0] != '$' && len(args) < n { // the entry's arguments, not the client's address
				args = append(args, part)
			}
		}
		got = append(got, "slowlog "+strings.Join(args, " "))
	}
	return got
}

// pubsubFields is the bulk strings of a RESP2 push message.
func pubsubFields(reply string) []string {
	var out []string
	for _, part := range strings.Split(reply, "\r\n") {
		if part != "" && part[0] != '*' && part[0] != '$' {
			out = append(out, part)
		}
	}
	return out
}

// TestPipelinedCommandsKeepTheirArgs: the keyspace events, MONITOR lines and slow-log entries of pipelined
// commands name each command's own arguments. Those of a batch's commands were told after the parser had read
// the commands after them, into the argument slice it reuses: every event of the pipeline above named "bb",
// the last command's key (compared with redis-server when one is installed).
func TestPipelinedCommandsKeepTheirArgs(t *testing.T) {
	matchRedis(t, runPipelineArgs, pipelineArgsWant)
}
