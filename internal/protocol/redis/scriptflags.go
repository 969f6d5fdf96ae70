package redis

import (
	"bytes"
	"strings"

	"anykv/internal/protocol/resp"
)

// Redis 7's script shebang: a script may start with a line `#!lua [flags=f1,f2,...]`. Its flags say what the
// script may do; the one that matters here is no-writes, which makes it a read-only script (as EVAL_RO), and a
// script with a shebang but without no-writes is refused by EVAL_RO. allow-oom, allow-stale, no-cluster and
// allow-cross-slot-keys are accepted and change nothing (anykv neither evicts nor replicates, and its slots are
// not Redis Cluster's). The line is blanked before the script compiles, its newline kept, so line numbers in
// errors are the user's.

// scriptShebang is what a script's shebang line says: whether it has one, and whether it declares no-writes.
type scriptShebang struct{ present, noWrites bool }

// parseShebang reads src's shebang line, answering Redis's error text (without "ERR ") when it is malformed.
func parseShebang(src []byte) (sb scriptShebang, errMsg string) {
	if !bytes.HasPrefix(src, []byte("#!")) {
		return sb, ""
	}
	end := bytes.IndexByte(src, '\n')
	if end < 0 {
		return sb, "Invalid script shebang"
	}
	parts, ok := resp.SplitArgs(src[:end]) // as Redis: sdssplitargs (quotes: flags="no-writes")
	if !ok || len(parts) == 0 {
		return sb, "Invalid engine in script shebang" // Redis's words for a line sdssplitargs refuses
	}
	if parts[0] != "#!lua" {
		engine := ""
		if len(parts) > 0 {
			engine = parts[0]
		}
		return sb, "Unexpected engine in script shebang: " + engine
	}
	sb.present = true
	for _, p := range parts[1:] {
		list, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return sb, "Unknown lua shebang option: " + p
		}
		if list == "" {
			continue
		}
		for _, f := range strings.Split(list, ",") {
			switch f {
			case "no-writes":
				sb.noWrites = true
			case "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys":
			default:
				return sb, "Unexpected flag in script shebang: " + f
			}
		}
	}
	return sb, ""
}

// scriptBody is src with its shebang line (if any) blanked: the newline stays, so the script's lines keep their
// numbers.
func scriptBody(src []byte) []byte {
	if !bytes.HasPrefix(src, []byte("#!")) {
		return src
	}
	if end := bytes.IndexByte(src, '\n'); end >= 0 {
		return src[end:]
	}
	return src
}
