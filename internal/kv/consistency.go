package kv

import (
	"context"
	"fmt"

	"anykv/internal/engine"
)

// levels applies the read consistency of a Store: the server's default for requests that ask for none, and the
// refusal of a level the engine cannot serve, decided once at New so a read pays one context lookup.
type levels struct {
	def     engine.Consistency
	refusal [engine.Serializable + 1]error // nil for the levels the engine serves; indexed by every known level
}

func newLevels(e engine.Engine, name string, def engine.Consistency) levels {
	l := levels{def: def}
	for c := range l.refusal {
		l.refusal[c] = engine.CheckConsistency(e, name, engine.Consistency(c))
	}
	return l
}

// read returns ctx carrying the level the read is served at (the request's, else the default), or the refusal
// (wrapping engine.ErrNotSupported) if the engine cannot serve it. ctx is returned as it is when nothing changes.
func (l *levels) read(ctx context.Context) (context.Context, error) {
	c, asked := engine.ConsistencyOf(ctx)
	if !asked {
		c = l.def
	}
	if err := l.check(c); err != nil {
		return ctx, err
	}
	if !asked && c != engine.Linearizable {
		ctx = engine.WithConsistency(ctx, c)
	}
	return ctx, nil
}

// ReadsLinearizable reports whether reads at ctx's level (the request's, else Options.Consistency) are
// linearizable: a protocol may then serve several of them as one batch, whose reads always are.
func (s *Store) ReadsLinearizable(ctx context.Context) bool {
	c, asked := engine.ConsistencyOf(ctx)
	if !asked {
		c = s.levels.def
	}
	return c == engine.Linearizable
}

// Consistency returns the read level of requests that ask for none (Options.Consistency).
func (s *Store) Consistency() engine.Consistency { return s.levels.def }

// CheckConsistency returns nil if the engine serves reads at c, else the refusal reads at c would get (wrapping
// engine.ErrNotSupported): a protocol asks before it accepts a per-connection level.
func (s *Store) CheckConsistency(c engine.Consistency) error {
	return s.levels.check(c)
}

// check returns the refusal of reads at c, nil if the engine serves them.
func (l *levels) check(c engine.Consistency) error {
	if int(c) >= len(l.refusal) {
		return fmt.Errorf("%w: unknown read level %s", engine.ErrNotSupported, c)
	}
	return l.refusal[c]
}

// fresh reports whether a read at ctx's level was linearizable, so that its answer may be cached for later reads
// of any level; a possibly stale answer is not.
func fresh(ctx context.Context) bool {
	c, _ := engine.ConsistencyOf(ctx)
	return c == engine.Linearizable
}
