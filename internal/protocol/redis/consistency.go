package redis

import (
	"context"

	"anykv/internal/engine"
)

// READONLY and READWRITE choose this connection's read level, as Redis Cluster's commands of the same names
// choose whether a connection may read from replicas: READONLY lets its plain reads (GET, MGET, EXISTS, TYPE
// and other whole-item reads; KEYS, SCAN, DBSIZE, RANDOMKEY) be served at engine.Serializable, possibly stale (etcd: by any member, without a quorum
// round); READWRITE (and RESET) restore the server's --consistency. Reads inside MULTI, in a pipeline batch that
// also writes, and of collections are always linearizable (stronger).
func init() {
	register(
		&command{name: "readonly", arity: 1, flags: flagFast, imm: cmdReadonly,
			summary: "Lets this connection's reads be served stale (serializable) rather than linearizable."},
		&command{name: "readwrite", arity: 1, flags: flagFast, imm: cmdReadwrite,
			summary: "Restores the server's default read consistency on this connection."},
	)
}

// serializableReads is the context of a READONLY connection's reads.
var serializableReads = engine.WithConsistency(context.Background(), engine.Serializable)

func cmdReadonly(s *session, _ [][]byte) {
	if err := s.h.store.CheckConsistency(engine.Serializable); err != nil {
		s.w.Error(errText(err))
		return
	}
	s.reads = serializableReads
	s.w.SimpleString("OK")
}

func cmdReadwrite(s *session, _ [][]byte) {
	s.reads = nil
	s.w.SimpleString("OK")
}

// readCtx is the context of this connection's plain reads: it carries READONLY's level, if set.
func (s *session) readCtx() context.Context {
	if s.reads != nil {
		return s.reads
	}
	return context.Background()
}
