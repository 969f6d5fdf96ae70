package enginetest

import (
	"context"
	"sync/atomic"

	"anykv/internal/engine"
)

// Copies is an engine for tests of the read budget: the wrapped engine's Engine methods alone (no View, so every
// read is a Get that copies), counting the Gets that copied out a value of engine.GateFrom bytes or more.
type Copies struct {
	engine.Engine
	N atomic.Int32 // big values copied out
}

// Get implements engine.Engine, counting big values.
func (c *Copies) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	it, err := c.Engine.Get(ctx, table, key, now)
	if err == nil && len(it.Value) >= engine.GateFrom {
		c.N.Add(1)
	}
	return it, err
}

// FailsAfterGet is an engine whose Get of Key fails with Err after the wrapped engine's Get succeeded (copied its
// value, and had a read's engine.ValueGate admit it), as pebblestore's wait for a write to be durable can: what
// the gate reserved must be given back with the failed read.
type FailsAfterGet struct {
	engine.Engine
	Key string
	Err error
}

// Get implements engine.Engine.
func (f FailsAfterGet) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	it, err := f.Engine.Get(ctx, table, key, now)
	if err == nil && string(key) == f.Key {
		return engine.Item{}, f.Err
	}
	return it, err
}
