package redis

import (
	"encoding/json"
	"flag"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// redisDocs fetches each command's COMMAND DOCS entry from the redis-server at addr as RESP3 bytes (the value
// after the name); commands it does not know are left out.
func redisDocs(t *testing.T, addr string) map[string]string {
	t.Helper()
	rc := dialRaw(t, addr)
	rc.send("*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n")
	rc.reply()
	out := map[string]string{}
	for _, c := range sortedCommands() {
		rc.send("*3\r\n$7\r\nCOMMAND\r\n$4\r\nDOCS\r\n$" + itoa(int64(len(c.name))) + "\r\n" + c.name + "\r\n")
		r := rc.reply()
		head := "%1\r\n$" + itoa(int64(len(c.name))) + "\r\n" + c.name + "\r\n"
		if strings.HasPrefix(r, head) {
			out[c.name] = r[len(head):]
		}
	}
	return out
}

// TestCommandDocsFile: commanddocs.json documents every command anykv serves, in a Redis group, and (when
// redis-server is installed) is exactly what it answers; -rewrite regenerates the file from it.
func TestCommandDocsFile(t *testing.T) {
	if addr := startRedisServerIfAny(t); addr != "" {
		docs := redisDocs(t, addr)
		if rewriteJSON(t, "commanddocs.json", docs) {
			t.Skip("commanddocs.json rewritten: rebuild to embed it")
		}
		for n, d := range docs {
			mine, ok := commandDocs[n]
			if !ok {
				t.Errorf("commanddocs.json lacks %s, which redis-server documents: run with -rewrite", n)
				continue
			}
			if got := string(mine[1]); canonResp3(t, got) != canonResp3(t, d) {
				t.Errorf("COMMAND DOCS %s differs from redis-server's: run with -rewrite", n)
			}
		}
	}
	for _, c := range sortedCommands() {
		// A command Redis does not have (BACKUP) is documented from its own table, in the group it names.
		if _, ok := commandDocs[c.name]; !ok && c.groupName == "" {
			t.Errorf("commanddocs.json lacks %s, and the command names no group of its own", c.name)
		}
	}
}

// rewriteJSON, when the test runs with -rewrite, writes m to path as a JSON object of one name per line, in name
// order, and reports true.
func rewriteJSON(t *testing.T, path string, m map[string]string) bool {
	t.Helper()
	if f := flag.Lookup("rewrite"); f == nil || f.Value.String() != "true" {
		return false
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("{\n")
	for i, n := range names {
		k, _ := json.Marshal(n)
		v, _ := json.Marshal(m[n])
		b.Write(k)
		b.WriteString(": ")
		b.Write(v)
		if i < len(names)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return true
}

// canonResp3 prints a RESP3 value with each map's entries sorted: redis-server lists subcommands in its hash
// table's order, which changes from one run to the next.
func canonResp3(t *testing.T, v string) string {
	t.Helper()
	var walk func(i int) (string, int)
	walk = func(i int) (string, int) {
		end := i + strings.Index(v[i:], "\r\n")
		typ, head, next := v[i], v[i+1:end], end+2
		switch typ {
		case '$':
			n, _ := strconv.Atoi(head)
			return strconv.Quote(v[next : next+n]), next + n + 2
		case '*', '~', '%':
			n, _ := strconv.Atoi(head)
			var items []string
			for k := 0; k < n; k++ {
				item, after := walk(next)
				if typ == '%' {
					val, after2 := walk(after)
					item, after = item+":"+val, after2
				}
				items, next = append(items, item), after
			}
			if typ == '%' {
				sort.Strings(items)
			}
			return string(typ) + "[" + strings.Join(items, ",") + "]", next
		}
		return v[i:next], next
	}
	out, n := walk(0)
	if n != len(v) {
		t.Fatalf("trailing bytes in %q", v)
	}
	return out
}

// field returns the value of key in a RESP2 (flat array of pairs) or RESP3 (map) reply as go-redis decodes it.
func field(v any, key string) any {
	switch m := v.(type) {
	case map[any]any:
		return m[key]
	case []any:
		for i := 0; i+1 < len(m); i += 2 {
			if m[i] == key {
				return m[i+1]
			}
		}
	}
	return nil
}

// TestCommandDocsGroups: COMMAND DOCS puts commands in Redis's groups with their arguments, in RESP2 and RESP3
// alike, so redis-cli's help shows each command's syntax.
func TestCommandDocsGroups(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	groups := map[string]string{"set": "string", "hset": "hash", "lpush": "list", "sadd": "set", "zadd": "sorted-set",
		"xadd": "stream", "setbit": "bitmap", "publish": "pubsub", "eval": "scripting", "multi": "transactions",
		"ping": "connection", "config": "server", "del": "generic", "expire": "generic"}
	for _, proto := range []int{2, 3} {
		c := ts.client(t, &goredis.Options{Protocol: proto})
		args := []any{"COMMAND", "DOCS"}
		for name := range groups {
			args = append(args, name)
		}
		docs, err := c.Do(ctx, args...).Result()
		if err != nil {
			t.Fatal(err)
		}
		for name, group := range groups {
			if g := field(field(docs, name), "group"); g != group {
				t.Errorf("resp%d: %s in group %v, want %q", proto, name, g, group)
			}
		}
		setArgs, _ := field(field(docs, "set"), "arguments").([]any)
		if len(setArgs) != 5 || field(setArgs[0], "name") != "key" || field(setArgs[0], "type") != "key" {
			t.Errorf("resp%d: set's arguments %v", proto, setArgs)
		}
	}
}
