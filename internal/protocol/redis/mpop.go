package redis

// LMPOP, BLMPOP, ZMPOP and BZMPOP (Redis 7.0): pop up to COUNT elements from the first of several lists or sorted
// sets that has any. Each pop is atomic on its key and the keys are tried in order; like the blocking pops they
// are immediate commands, which inside MULTI run in their place in the transaction's batch (tximm.go). Scripts
// may call them, the blocking forms answering at once, as in Redis 7 (which refuses BLPOP and its kin there).

func init() {
	rw := flagWrite
	register(
		&command{name: "lmpop", arity: -4, flags: rw, firstKey: -1, movable: numKeys(1), imm: cmdMPop, inScript: true, groupName: "list", since: "7.0.0", summary: "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped."},
		&command{name: "blmpop", arity: -5, flags: rw, firstKey: -1, movable: numKeys(2), imm: cmdMPop, inScript: true, groupName: "list", since: "7.0.0", summary: "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped."},
		&command{name: "zmpop", arity: -4, flags: rw, firstKey: -1, movable: numKeys(1), imm: cmdMPop, inScript: true, groupName: "sorted-set", since: "7.0.0", summary: "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped."},
		&command{name: "bzmpop", arity: -5, flags: rw, firstKey: -1, movable: numKeys(2), imm: cmdMPop, inScript: true, groupName: "sorted-set", since: "7.0.0", summary: "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped."},
	)
}

// cmdMPop parses `[timeout] numkeys key... LEFT|RIGHT|MIN|MAX [COUNT n]` in Redis's order and with its errors.
func cmdMPop(s *session, args [][]byte) {
	name := lower(args[0])
	blocking := name[0] == 'b'
	i := 1 // numkeys
	if blocking {
		i = 2
	}
	n, ok := argInt(args[i])
	if !ok || n <= 0 {
		s.w.Error("ERR numkeys should be greater than 0")
		return
	}
	if n >= int64(len(args)-i-1) {
		s.w.Error("ERR syntax error")
		return
	}
	where := i + 1 + int(n)
	p := popSpec{zset: name[len(name)-5] == 'z', count: -1, multi: true}
	switch w := lower(args[where]); {
	case p.zset && (w == "min" || w == "max"):
		p.front = w == "min"
	case !p.zset && (w == "left" || w == "right"):
		p.front = w == "left"
	default:
		s.w.Error("ERR syntax error")
		return
	}
	for j := where + 1; j < len(args); j++ {
		if p.count != -1 || !eq(args[j], "count") || j+1 == len(args) {
			s.w.Error("ERR syntax error")
			return
		}
		j++
		if p.count, ok = argInt(args[j]); !ok || p.count <= 0 {
			s.w.Error("ERR count should be greater than 0")
			return
		}
	}
	p.count = max(p.count, 1)
	keys := copyArgs(args[i+1 : where]) // waiting may refill the parser's buffer
	if !blocking {
		if !s.popFirst(keys, false, p) {
			s.w.NullArray()
		}
		return
	}
	if timeout, ok := s.blockTimeout(args[1]); ok {
		s.blockPop(keys, timeout, p)
	}
}
