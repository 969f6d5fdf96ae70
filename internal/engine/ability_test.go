package engine_test

import (
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/memstore"
)

// TestExposeShowsExactlyTheGivenAbilities: every subset of abilities comes out of Expose as exactly that subset.
func TestExposeShowsExactlyTheGivenAbilities(t *testing.T) {
	m := memstore.New()
	if got := engine.AbilitiesOf(m); got != engine.CanScan|engine.CanTables|engine.CanSweep|engine.CanStats {
		t.Fatalf("memstore abilities = %v", got)
	}
	for a := engine.Ability(0); a < 16; a++ {
		if got := engine.AbilitiesOf(engine.Expose(m, a)); got != a {
			t.Errorf("Expose(%v) has %v", a, got)
		}
	}
}
