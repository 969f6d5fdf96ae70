package memstore_test

import (
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/memstore"
)

func TestConformance(t *testing.T) {
	enginetest.Run(t, func(*testing.T) engine.Engine { return memstore.New() }, engine.AllAbilities)
}
