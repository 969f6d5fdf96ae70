package enginetest

import (
	"errors"
	"testing"

	"anykv/internal/engine"
)

// scoped reports whether e keeps each batch within one table (engine.TableScoped).
func scoped(e engine.Engine) bool {
	_, ok := e.(engine.TableScoped)
	return ok
}

// spansTables reports whether a TableScoped engine refuses muts (engine.Span).
func spansTables(muts []engine.Mutation) bool {
	_, second, all := engine.Span(muts)
	return second != "" || all
}

// wantRefused requires a TableScoped engine to refuse the batch muts with ErrNotSupported.
func wantRefused(t *testing.T, e engine.Engine, muts ...engine.Mutation) {
	t.Helper()
	if _, err := e.Apply(ctx, &engine.Batch{Now: now, Muts: muts}); !errors.Is(err, engine.ErrNotSupported) {
		t.Fatalf("%T is TableScoped but a batch across tables got %v, want ErrNotSupported", e, err)
	}
}

// applyEach is apply for a batch a TableScoped engine refuses: it checks the refusal, then applies each mutation
// as a batch of its own (the suite's batches across tables set up independent items).
func applyEach(t *testing.T, e engine.Engine, muts []engine.Mutation) []engine.Result {
	t.Helper()
	wantRefused(t, e, muts...)
	var out []engine.Result
	for _, m := range muts {
		out = append(out, apply(t, e, m)...)
	}
	return out
}

// oneTable rewrites a random batch of the model test to stay in its first mutation's table, for a TableScoped
// engine (which refusing it would teach nothing).
func oneTable(muts []engine.Mutation) {
	t := muts[0].Table
	if t == "" {
		t = "default"
	}
	for i := range muts {
		muts[i].Table = t
		if muts[i].Target.Table != "" {
			muts[i].Target.Table = t
		}
	}
}
