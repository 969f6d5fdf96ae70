package redis

import (
	"bufio"
	"errors"
	"net"
	"strconv"
	"time"

	"anykv/internal/collections"
	"anykv/internal/engine"
)

func init() {
	register(&command{name: "migrate", arity: -6, flags: flagWrite, firstKey: 3, lastKey: 3, imm: cmdMigrate, movable: migrateKeys,
		summary: "Atomically transfers a key from one Redis instance to another."})
}

// migrateKeys finds MIGRATE's keys as Redis's migrateGetKeys does, and as cmdMigrate reads its options: the key at
// 3, or those after KEYS (AUTH's password and AUTH2's user and password passed over on the way), none when KEYS
// comes with a key at 3 (the command refuses that). ACL checks these keys alone, as Redis does for a command with
// an incomplete key spec.
func migrateKeys(args [][]byte) []int {
	if len(args) < 4 {
		return nil
	}
	for j := 6; j < len(args); j++ {
		switch {
		case eq(args[j], "keys"):
			if len(args[3]) > 0 {
				return nil
			}
			idx := make([]int, 0, len(args)-j-1)
			for i := j + 1; i < len(args); i++ {
				idx = append(idx, i)
			}
			return idx
		case eq(args[j], "auth"):
			j++
		case eq(args[j], "auth2"):
			j += 2
		}
	}
	return []int{3}
}

// migrateMaxReply bounds a line of the target's replies (Redis reads them into 1 KiB).
const migrateMaxReply = 4096

// cmdMigrate sends keys to another Redis-protocol server as RESTOREs (after AUTH and SELECT), as Redis 7.0's
// MIGRATE does, and deletes each one the target answered +OK to unless COPY: a key that changed meanwhile (its
// version differs from the one dumped) is left where it is. Redis takes any reply but an error for +OK, and so
// deleted the keys it "migrated" to an HTTP server or any other that answers lines; anykv stops at such a reply. A fresh connection each time: nothing is cached.
func cmdMigrate(s *session, args [][]byte) {
	var copyKeys, replace bool
	var user, pass []byte
	keys := [][]byte{args[3]}
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eq(args[j], "copy"):
			copyKeys = true
		case eq(args[j], "replace"):
			replace = true
		case eq(args[j], "auth") && more >= 1:
			pass = args[j+1]
			j++
		case eq(args[j], "auth2") && more >= 2:
			user, pass = args[j+1], args[j+2]
			j += 2
		case eq(args[j], "keys"):
			if len(args[3]) != 0 {
				s.w.Error("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
				return
			}
			keys, j = args[j+1:], len(args)
		default:
			s.w.Error(errSyntax)
			return
		}
	}
	timeout, ok1 := argInt(args[5])
	db, ok2 := argInt(args[4])
	if !ok1 || !ok2 {
		s.w.Error(errNotInt)
		return
	}
	if timeout <= 0 {
		timeout = 1000
	}
	// Each key's payload, and its version and expiry, read in one batch.
	muts := make([]engine.Mutation, 0, 2*len(keys))
	for _, k := range keys {
		muts = append(muts, collections.Dump(s.table(), k),
			engine.Mutation{Op: engine.OpGet, Table: s.table(), Key: k, AnyKind: true, NoValue: true})
	}
	res, err := s.apply(muts)
	if err != nil {
		s.w.Error(errText(err))
		return
	}
	type found struct {
		key, payload []byte
		version      uint64
		expires      int64
	}
	var send []found
	for i, k := range keys {
		d, it := res[2*i], res[2*i+1]
		switch {
		case errors.Is(d.Err, engine.ErrNotFound) || it.Err != nil:
			continue
		case d.Err != nil:
			s.w.Error(errText(d.Err))
			return
		}
		send = append(send, found{k, d.New.Value, it.New.Version, it.New.Expires})
	}
	if len(send) == 0 {
		s.w.SimpleString("NOKEY")
		return
	}
	wait := time.Duration(timeout) * time.Millisecond
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(string(args[1]), string(args[2])), wait)
	if err != nil {
		// Redis connects without waiting and learns of a refusal when it writes.
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			s.w.Error("IOERR error or timeout connecting to the client")
		} else {
			s.w.Error("IOERR error or timeout writing to target instance")
		}
		return
	}
	defer conn.Close()
	var out []byte
	command := func(parts ...[]byte) {
		out = append(out, '*')
		out = strconv.AppendInt(out, int64(len(parts)), 10)
		out = append(out, '\r', '\n')
		for _, p := range parts {
			out = append(out, '$')
			out = strconv.AppendInt(out, int64(len(p)), 10)
			out = append(append(append(out, '\r', '\n'), p...), '\r', '\n')
		}
	}
	if pass != nil {
		if user != nil {
			command([]byte("AUTH"), user, pass)
		} else {
			command([]byte("AUTH"), pass)
		}
	}
	command([]byte("SELECT"), []byte(strconv.FormatInt(db, 10)))
	now := s.h.store.Now()
	for _, f := range send {
		ttl := int64(0)
		if f.expires != 0 {
			ttl = max(f.expires-now, 1)
		}
		if replace {
			command([]byte("RESTORE"), f.key, []byte(strconv.FormatInt(ttl, 10)), f.payload, []byte("REPLACE"))
		} else {
			command([]byte("RESTORE"), f.key, []byte(strconv.FormatInt(ttl, 10)), f.payload)
		}
	}
	conn.SetWriteDeadline(time.Now().Add(wait + time.Duration(len(out)>>20)*time.Second))
	if _, err := conn.Write(out); err != nil {
		s.w.Error("IOERR error or timeout writing to target instance")
		return
	}
	// The target's replies are read a line of at most migrateMaxReply bytes at a time: a target that sends
	// endless bytes without a newline (MIGRATE names any host) held them all, gigabytes within the timeout.
	r := bufio.NewReaderSize(conn, migrateMaxReply)
	unexpected := false // a reply neither +OK nor an error: the target is not a Redis server, or out of step
	readLine := func() (string, bool) {
		conn.SetReadDeadline(time.Now().Add(wait))
		line, err := r.ReadSlice('\n')
		if err != nil || len(line) < 2 || line[len(line)-2] != '\r' {
			return "", false
		}
		reply := string(line[:len(line)-2])
		if reply != "+OK" && (reply == "" || reply[0] != '-') {
			unexpected = true
			return "", false
		}
		return reply, true
	}
	var authReply, selReply string
	ok := true
	if pass != nil {
		authReply, ok = readLine()
	}
	if ok {
		selReply, ok = readLine()
	}
	failure := ""
	switch {
	case !ok:
	case authReply != "" && authReply[0] == '-':
		failure = authReply[1:]
	case selReply[0] == '-':
		failure = selReply[1:]
	}
	var del []engine.Mutation
	for _, f := range send {
		if !ok {
			break
		}
		var line string
		if line, ok = readLine(); !ok {
			break
		}
		switch {
		case failure != "":
		case line[0] == '-':
			failure = line[1:]
		case !copyKeys: // +OK: the target holds the key
			del = append(del, engine.Mutation{Op: engine.OpDelete, Table: s.table(), Key: f.key, AnyKind: true,
				Cond: engine.CondVersion, Version: f.version})
		}
	}
	if len(del) > 0 {
		res, err := s.apply(del)
		if err != nil {
			s.w.Error(errText(err))
			return
		}
		for i, m := range del {
			if res[i].Err == nil {
				s.h.notify(notifyGeneric, "del", s.db, m.Key)
			}
		}
	}
	switch {
	case failure != "":
		s.w.Error("ERR Target instance replied with error: " + failure)
	case unexpected:
		s.w.Error("IOERR the target instance's reply is not +OK nor an error (is it a Redis server?)")
	case !ok:
		s.w.Error("IOERR error or timeout reading to target instance")
	default:
		s.w.SimpleString("OK")
	}
}
