package redis

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"

	"anykv/internal/atomicfile"
)

// The ACL file (--aclfile): ACL SAVE writes the users in Redis's format, ACL LOAD and the start read them back.

// saveACL is ACL SAVE: every user as a "user <name> <rules>" line, written beside the file, fsynced and renamed
// over it (mode 0600: the file holds password hashes).
func (h *Handler) saveACL() error {
	a := h.acl
	a.mu.Lock()
	var b strings.Builder
	for _, u := range a.sortedUsers() {
		b.WriteString("user " + fileWord(u.name, u.name[0] == '"' || u.name[0] == '\'') + " " + u.get().describeFile() + "\n")
	}
	a.mu.Unlock()
	return atomicfile.Write(h.opts.ACLFile, []byte(b.String()), 0o600)
}

// describeFile is describe as the ACL file writes it: a selector that would not read back as one word of its own
// (a pattern or first argument of it ending in ")" closed it early, the rules after it given to the root; a quote
// began a quoted word) is written quoted, as splitArgs (and Redis's sdssplitargs) read it.
func (r *aclRules) describeFile() string {
	b := []string{r.describeRoot()}
	for _, s := range r.selectors[1:] {
		d := s.describe()
		b = append(b, fileWord("("+d+")", strings.ContainsAny(d, `)"'\`)))
	}
	return strings.Join(b, " ")
}

// fileWord is w as a word of the ACL file: as it is, or double-quoted with its backslashes and quotes escaped when
// quote is set (a user name beginning with a quote was read as a quoted word: "ops" as ops).
func fileWord(w string, quote bool) string {
	if !quote {
		return w
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(w) + `"`
}

// LoadACLFile reads Options.ACLFile at start (see loadACL).
func (h *Handler) LoadACLFile() error { return h.loadACL(nil) }

// loadACL reads Options.ACLFile (at start, and for ACL LOAD from me) and replaces every user with its users,
// all or nothing: a line that fails leaves the users as they were and the error names the file and line, as
// Redis's. A default user the file lacks is the start's (every permission, --requirepass or nopass). Connections
// of the users replaced (all but default) are closed, as Redis 7.0 does.
func (h *Handler) loadACL(me *session) error {
	path := h.opts.ACLFile
	f, err := os.Open(path)
	if err != nil {
		return errors.New("Error loading ACLs, opening file '" + path + "': " + err.Error())
	}
	defer f.Close()
	users := map[string]*aclRules{}
	var errs []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		where := path + ":" + strconv.Itoa(line) + ": "
		words, err := splitArgs(text)
		switch {
		case err != nil:
			errs = append(errs, where+"unbalanced quotes in acl line. ")
			continue
		case len(words) == 0:
			continue
		case words[0] != "user" || len(words) < 2:
			errs = append(errs, where+"line should start with user keyword. ")
			continue
		case !validUserName(words[1]):
			errs = append(errs, where+"username '"+words[1]+"' contains invalid characters. ")
			continue
		case users[words[1]] != nil:
			errs = append(errs, where+"Duplicate user '"+words[1]+"' found. ")
			continue
		}
		r, err := applyRules(newRules(), words[2:])
		if err != nil {
			errs = append(errs, where+strings.TrimPrefix(err.Error(), "Error in ACL SETUSER modifier ")+". ")
			continue
		}
		users[words[1]] = r
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(errs) > 0 {
		return errors.New(strings.TrimSpace(strings.Join(errs, "")))
	}
	a := h.acl
	a.mu.Lock()
	var gone []*aclUser
	for name, u := range a.users {
		if name != "default" {
			gone = append(gone, u)
		}
	}
	a.users = map[string]*aclUser{"default": a.def}
	for name, r := range users {
		if name == "default" {
			continue
		}
		u := &aclUser{name: name}
		u.rules.Store(r)
		a.users[name] = u
	}
	def := users["default"]
	if def == nil {
		def = defaultRules(a.requirepass)
	}
	a.def.rules.Store(def)
	h.syncPolicy()
	a.mu.Unlock()
	h.dropUsers(me, gone)
	h.killSubscribersOutside(a.def, def)
	return nil
}

// splitArgs splits a line as Redis's sdssplitargs (an ACL file line): words, "double quoted" with escapes,
// 'single quoted'. A closing quote must end its word, as there: `"~app:*"+@all` is refused, not read as two rules
// (resp.SplitArgs is sdssplitargs in full, quotes mid-word too; this one reads a quote inside a word as itself,
// which the words ACL SAVE writes unquoted, a pattern ~a"b, need).
func splitArgs(line string) ([]string, error) {
	var out []string
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i >= len(line) {
			return out, nil
		}
		var b strings.Builder
		switch line[i] {
		case '"':
			i++
			for {
				if i >= len(line) {
					return nil, errors.New("unbalanced quotes")
				}
				c := line[i]
				if c == '"' {
					i++
					if !wordEnds(line, i) {
						return nil, errors.New("unbalanced quotes")
					}
					break
				}
				if c == '\\' && i+1 < len(line) {
					i++
					switch e := line[i]; e {
					case 'n':
						b.WriteByte('\n')
					case 'r':
						b.WriteByte('\r')
					case 't':
						b.WriteByte('\t')
					case 'a':
						b.WriteByte('\a')
					case 'b':
						b.WriteByte('\b')
					case 'x':
						if i+2 < len(line) {
							if v, err := strconv.ParseUint(line[i+1:i+3], 16, 8); err == nil {
								b.WriteByte(byte(v))
								i += 2
								break
							}
						}
						b.WriteByte('x')
					default:
						b.WriteByte(e)
					}
					i++
					continue
				}
				b.WriteByte(c)
				i++
			}
		case '\'':
			i++
			for {
				if i >= len(line) {
					return nil, errors.New("unbalanced quotes")
				}
				c := line[i]
				if c == '\'' {
					i++
					if !wordEnds(line, i) {
						return nil, errors.New("unbalanced quotes")
					}
					break
				}
				if c == '\\' && i+1 < len(line) && line[i+1] == '\'' {
					i++
					c = '\''
				}
				b.WriteByte(c)
				i++
			}
		default:
			for i < len(line) && line[i] != ' ' && line[i] != '\t' {
				b.WriteByte(line[i])
				i++
			}
		}
		out = append(out, b.String())
	}
}

// wordEnds reports whether a quoted word that closed before line[i] ends there: at a space, a tab or the end.
func wordEnds(line string, i int) bool { return i >= len(line) || line[i] == ' ' || line[i] == '\t' }
