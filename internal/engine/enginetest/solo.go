package enginetest

import (
	"context"

	"anykv/internal/engine"
)

// SoloOnly is an engine decorator for tests that refuses, with engine.ErrBatchTooBig and nothing applied, every
// batch of more than one mutation: it stands for an engine's bound on what one batch may hold (the 256 MiB a
// batch may build, a datastore's transaction size), which front ends must meet by splitting a pipeline.
type SoloOnly struct{ engine.Engine }

// Apply implements engine.Engine.
func (s SoloOnly) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	if len(b.Muts) > 1 {
		return nil, engine.ErrBatchTooBig
	}
	return s.Engine.Apply(ctx, b)
}
