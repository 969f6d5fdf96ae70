package kv

import (
	"context"
	"errors"

	"anykv/internal/engine"
)

// Annotation returns the payload of the annotation of the string item it, read at table/key at now
// (engine/annotation.go), or nil when there is none or it describes another version of the item.
func (s *Store) Annotation(ctx context.Context, table string, key []byte, it engine.Item, now int64) ([]byte, error) {
	if err := checkTable(table); err != nil {
		return nil, err
	}
	a, err := s.eng.Get(ctx, engine.MemberTable(table), engine.AnnotationKey(key), now)
	if errors.Is(err, engine.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if v, payload, ok := engine.DecodeAnnotation(a.Value); ok && v == it.Version {
		return payload, nil
	}
	return nil, nil
}
