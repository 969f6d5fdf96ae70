package pebblestore

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Checkpoint writes a consistent copy of the store into dest, a directory that must not exist yet, while
// reads and writes go on. It holds every write acknowledged before the call (the WAL is flushed and synced
// first) and no partial batch: the copy opens as the store would after a crash at one instant. Pebble hard-links
// immutable sstables where dest is on the same file system and copies the rest, so it is cheap; nothing forks.
func (s *Store) Checkpoint(ctx context.Context, dest string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.db.Checkpoint(dest, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("pebblestore: checkpoint into %s: %w", dest, err)
	}
	return nil
}
