package redis

// configSetters are the parameters CONFIG SET changes while anykv runs; every other parameter CONFIG GET shows is
// fixed by a flag at start. A setter checks the value and returns how to apply it, or the reason Redis gives for
// refusing it.
var configSetters = map[string]func(h *Handler, v string) (apply func(), err error){
	"notify-keyspace-events": func(h *Handler, v string) (func(), error) {
		f, err := ParseNotifyEvents(v)
		return func() { h.notifyFlags.Store(int32(f)) }, err
	},
}

// configSet applies CONFIG SET's name/value pairs: all of them, or none when one is refused (Redis 7 checks
// every pair before applying any). It returns the error reply, or "".
func (h *Handler) configSet(pairs [][]byte) string {
	known, seen := h.settings(), map[string]bool{}
	for i := 0; i < len(pairs); i += 2 {
		name := lower(pairs[i])
		if _, ok := known[name]; !ok {
			return "ERR Unknown option or number of arguments for CONFIG SET - '" + clip(pairs[i]) + "'"
		}
		if seen[name] {
			return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - duplicate parameter"
		}
		seen[name] = true
		if configSetters[name] == nil {
			return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set immutable config; restart anykv with the matching flag"
		}
	}
	var apply []func()
	for i := 0; i < len(pairs); i += 2 {
		name := lower(pairs[i])
		fn, err := configSetters[name](h, string(pairs[i+1]))
		if err != nil {
			return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + err.Error()
		}
		apply = append(apply, fn)
	}
	for _, fn := range apply {
		fn()
	}
	return ""
}
