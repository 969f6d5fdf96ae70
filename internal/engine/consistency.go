package engine

import (
	"context"
	"fmt"
	"strings"
)

// Consistency is how fresh a read must be. A request carries its level to the engine in its context
// (WithConsistency); an engine serves each Get and Scan at that level or a stronger one, never a weaker one.
// Levels are ordered from the strongest (Linearizable, the zero value and the default) to the weakest.
type Consistency uint8

// The read consistency levels.
const (
	// Linearizable: the read sees every write acknowledged before it began (etcd: a quorum round through the
	// leader's read index).
	Linearizable Consistency = iota
	// Serializable: the read sees a consistent state the datastore committed, possibly behind the latest
	// (etcd: any member answers from its local copy, also while cut off from the others; no quorum round).
	Serializable
)

var consistencyNames = [...]string{Linearizable: "linearizable", Serializable: "serializable"}

// String returns the level's name, as ParseConsistency reads it.
func (c Consistency) String() string {
	if int(c) < len(consistencyNames) {
		return consistencyNames[c]
	}
	return fmt.Sprintf("consistency(%d)", uint8(c))
}

// ParseConsistency reads a level's name, case-insensitively: linearizable or serializable.
func ParseConsistency(name string) (Consistency, error) {
	for c, n := range consistencyNames {
		if strings.EqualFold(name, n) {
			return Consistency(c), nil
		}
	}
	return 0, fmt.Errorf("unknown consistency level %q (known: %s)", name, strings.Join(consistencyNames[:], ", "))
}

// Covers reports whether a read served at c keeps every promise of d: c is d or stronger.
func (c Consistency) Covers(d Consistency) bool { return c <= d }

type consistencyKey struct{}

// WithConsistency returns ctx carrying the read level c for the engine.
func WithConsistency(ctx context.Context, c Consistency) context.Context {
	return context.WithValue(ctx, consistencyKey{}, c)
}

// ConsistencyOf returns the read level ctx carries and whether it carries one; without one it is Linearizable.
func ConsistencyOf(ctx context.Context) (Consistency, bool) {
	c, ok := ctx.Value(consistencyKey{}).(Consistency)
	return c, ok
}

// ReadLeveler is an engine that serves reads at levels other than Linearizable; it lists every level it serves as
// asked. An engine without it serves every read linearizably, which covers every level.
type ReadLeveler interface {
	ReadLevels() []Consistency
}

// ReadLevelsOf returns the levels e serves as asked: its ReadLevels, or Linearizable alone.
func ReadLevelsOf(e Engine) []Consistency {
	if l, ok := e.(ReadLeveler); ok {
		return l.ReadLevels()
	}
	return []Consistency{Linearizable}
}

// CheckConsistency returns nil if e can serve reads at c (at c or stronger), else an error wrapping
// ErrNotSupported that names the engine (name, as the operator knows it), the level and the levels it offers.
func CheckConsistency(e Engine, name string, c Consistency) error {
	levels := ReadLevelsOf(e)
	names := make([]string, len(levels))
	for i, l := range levels {
		if l.Covers(c) {
			return nil
		}
		names[i] = l.String()
	}
	return fmt.Errorf("%w: %s reads on engine %s (it serves %s)", ErrNotSupported, c, name, strings.Join(names, ", "))
}

// Viewer is an engine whose reads can skip the copy Get makes of the value: View is Get, but the returned Value
// may be shared with the engine (a cache's stored copy) and other readers, so the caller must not modify it (its
// capacity is its length: an append copies). Readers that only format the value into a reply use it.
type Viewer interface {
	View(ctx context.Context, table string, key []byte, now int64) (Item, error)
}

// ViewOf reads as Viewer.View if e has it, else with Get; either way the caller must not modify the Value.
func ViewOf(e Engine, ctx context.Context, table string, key []byte, now int64) (Item, error) {
	if v, ok := e.(Viewer); ok {
		return v.View(ctx, table, key, now)
	}
	return e.Get(ctx, table, key, now)
}
