package pebblestore

import (
	"context"
	"fmt"
	"os"

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
	if s.opts.FS == nil { // the OS's: Pebble made dest 0755, and the files in it are the store's (hard links)
		if err := os.Chmod(dest, dirMode); err != nil {
			return fmt.Errorf("pebblestore: checkpoint into %s: %w", dest, err)
		}
	}
	return nil
}

// dirMode is the mode of the directories the store creates (its own, a checkpoint's): the owner's only, as
// PostgreSQL's data directory, so that other users of the machine cannot read the data past the password (the
// files in them are created 0644 by Pebble; the directory is what keeps them private).
const dirMode = 0o700
