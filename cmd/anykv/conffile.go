package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"anykv/internal/atomicfile"
	"anykv/internal/protocol/redis"
)

// The config file of `anykv serve --config FILE`: redis.conf's format (one `name value` per line, # comments,
// values quoted as redis.conf quotes them), with the serve flags' names. Flags on the command line win over the
// file, the file over the environment. CONFIG REWRITE writes the settings in force back into it, in place.

// configAliases are names a config file may use for a serve flag (Redis's older names).
var configAliases = map[string]string{"lua-time-limit": "busy-reply-threshold"}

// notInConfig are flags a config file may not set and CONFIG REWRITE never writes: the file itself, and
// one-shot repair switches that must not stick.
var notInConfig = map[string]bool{"config": true, "recover": true}

// confDirective is one `name value` line of a config file.
type confDirective struct {
	line  int
	name  string
	value string
}

// readConfigFile parses a config file's directives; lines that are blank or comments yield none.
func readConfigFile(path string) ([]confDirective, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []confDirective
	for i, raw := range strings.Split(string(b), "\n") {
		args, err := splitConfigLine(raw)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, i+1, err)
		}
		if len(args) == 0 {
			continue
		}
		name := strings.ToLower(args[0])
		if len(args) != 2 {
			return nil, fmt.Errorf("%s:%d: %s takes exactly one value", path, i+1, name)
		}
		out = append(out, confDirective{line: i + 1, name: name, value: args[1]})
	}
	return out, nil
}

// applyConfigFile sets every flag the file names and the command line did not. An unknown name, a second
// value of one line or a value the flag refuses is an error naming the file and line.
func applyConfigFile(fs *flag.FlagSet, path string) error {
	dirs, err := readConfigFile(path)
	if err != nil {
		return err
	}
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	for _, d := range dirs {
		name := d.name
		if a, ok := configAliases[name]; ok {
			name = a
		}
		f := fs.Lookup(name)
		if f == nil || notInConfig[name] {
			return fmt.Errorf("%s:%d: unknown setting %q (the names are the serve flags', see anykv serve --help)", path, d.line, d.name)
		}
		if onCommandLine[name] {
			continue
		}
		v := d.value
		if isBoolFlag(f) {
			switch strings.ToLower(v) {
			case "yes":
				v = "true"
			case "no":
				v = "false"
			}
		}
		if err := f.Value.Set(v); err != nil {
			if n, ok := redis.ParseMemory(v); ok && f.Value.Set(strconv.FormatInt(n, 10)) == nil { // 1gb, 64mb
				continue
			}
			return fmt.Errorf("%s:%d: %s %q: %v", path, d.line, d.name, d.value, err)
		}
	}
	return nil
}

// splitConfigLine splits one line as redis.conf's sdssplitargs does: words, "double quoted" with \n \r \t \\ \"
// \xHH escapes, 'single quoted' with \' only; a # starting a word begins a comment.
func splitConfigLine(line string) ([]string, error) {
	var args []string
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
			i++
		}
		if i >= len(line) || line[i] == '#' {
			return args, nil
		}
		var b strings.Builder
		switch q := line[i]; q {
		case '"', '\'':
			i++
			for {
				if i >= len(line) {
					return nil, errors.New("unbalanced quotes")
				}
				c := line[i]
				switch {
				case c == q:
					i++
					if i < len(line) && line[i] != ' ' && line[i] != '\t' && line[i] != '\r' {
						return nil, errors.New("a closing quote must be followed by a space")
					}
					args = append(args, b.String())
					goto next
				case c == '\\' && q == '\'' && i+1 < len(line) && line[i+1] == '\'':
					b.WriteByte('\'')
					i += 2
				case c == '\\' && q == '"' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					n, _ := strconv.ParseUint(line[i+2:i+4], 16, 8)
					b.WriteByte(byte(n))
					i += 4
				case c == '\\' && q == '"' && i+1 < len(line):
					e := line[i+1]
					switch e {
					case 'n':
						e = '\n'
					case 'r':
						e = '\r'
					case 't':
						e = '\t'
					case 'b':
						e = '\b'
					case 'a':
						e = '\a'
					}
					b.WriteByte(e)
					i += 2
				default:
					b.WriteByte(c)
					i++
				}
			}
		default:
			for i < len(line) && line[i] != ' ' && line[i] != '\t' && line[i] != '\r' {
				b.WriteByte(line[i])
				i++
			}
			args = append(args, b.String())
		}
	next:
	}
}

func isHex(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }

// quoteConfigValue writes a value so splitConfigLine reads it back: bare when it is a plain word, else double
// quoted with escapes.
func quoteConfigValue(v string) string {
	plain := v != ""
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= ' ' || c > '~' || c == '"' || c == '\'' || c == '\\' || (i == 0 && c == '#') {
			plain = false
		}
	}
	if plain {
		return v
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < ' ' || c > '~':
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// rewriteMarker precedes the settings CONFIG REWRITE appends, as in Redis.
const rewriteMarker = "# Generated by CONFIG REWRITE"

// configRewriter rewrites one config file with the settings in force: those set at start (flags, file,
// environment) overlaid with what CONFIG SET changed since.
type configRewriter struct {
	mu       sync.Mutex
	path     string
	start    map[string]string // every flag's value at start, as a config file writes it
	defaults map[string]string
}

func newConfigRewriter(fs *flag.FlagSet, path string) *configRewriter {
	r := &configRewriter{path: path, start: map[string]string{}, defaults: map[string]string{}}
	fs.VisitAll(func(f *flag.Flag) {
		if notInConfig[f.Name] {
			return
		}
		r.start[f.Name], r.defaults[f.Name] = confValue(f, f.Value.String()), confValue(f, f.DefValue)
	})
	return r
}

func isBoolFlag(f *flag.Flag) bool {
	bf, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && bf.IsBoolFlag()
}

// confValue writes booleans as redis.conf does (yes, no).
func confValue(f *flag.Flag, v string) string {
	if isBoolFlag(f) {
		if b, err := strconv.ParseBool(v); err == nil {
			return map[bool]string{true: "yes", false: "no"}[b]
		}
	}
	return v
}

// rewrite is CONFIG REWRITE: each setting's first line in the file gets its current value and its other lines
// go; settings absent from the file are appended at its end when they differ from their default, after
// rewriteMarker unless an earlier rewrite left it, as Redis does.
// Comments, blank lines and the order of the rest stay. The new file replaces the old atomically.
func (r *configRewriter) rewrite(changed map[string]string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := make(map[string]string, len(r.start))
	for k, v := range r.start {
		cur[k] = v
	}
	for k, v := range changed {
		cur[k] = v
	}
	old, err := os.ReadFile(r.path)
	if err != nil {
		return err
	}
	var out []string
	written := map[string]bool{}
	lines := strings.Split(strings.TrimSuffix(string(old), "\n"), "\n")
	marked := false // the file has the marker already (from an earlier rewrite): appended lines go after it
	for _, line := range lines {
		if strings.TrimSpace(line) == rewriteMarker {
			marked = true
		}
		args, err := splitConfigLine(line)
		if err != nil || len(args) == 0 {
			out = append(out, line)
			continue
		}
		name := strings.ToLower(args[0])
		if a, ok := configAliases[name]; ok {
			name = a
		}
		v, known := cur[name]
		switch {
		case !known:
			out = append(out, line)
		case !written[name]:
			out = append(out, name+" "+quoteConfigValue(v))
			written[name] = true
		}
	}
	var extra []string
	for name, v := range cur {
		if !written[name] && v != r.defaults[name] {
			extra = append(extra, name+" "+quoteConfigValue(v))
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 && !marked {
		out = append(out, rewriteMarker)
	}
	out = append(out, extra...)
	return writeFileAtomic(r.path, []byte(strings.Join(out, "\n")+"\n"))
}

// writeFileAtomic replaces path with data (internal/atomicfile); the file keeps its mode.
func writeFileAtomic(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	return atomicfile.Write(path, data, mode)
}
