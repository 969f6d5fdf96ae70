package pebblestore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

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
	if s.opts.FS != nil { // a file system of the caller's (tests): as Pebble makes it
		if err := s.db.Checkpoint(dest, pebble.WithFlushedWAL()); err != nil {
			return fmt.Errorf("pebblestore: checkpoint into %s: %w", dest, err)
		}
		return nil
	}
	if err := privateCheckpoint(s.db, dest); err != nil {
		return fmt.Errorf("pebblestore: checkpoint into %s: %w", dest, err)
	}
	return nil
}

// privateCheckpoint writes the checkpoint inside a new directory of mode dirMode beside dest and renames it to
// dest once complete: Pebble makes a checkpoint's directory 0755 and the files in it are the store's (0644), so
// written in place another user could read them while it was written, a long time when they are copied.
func privateCheckpoint(db *pebble.DB, dest string) error {
	if _, err := os.Lstat(dest); err == nil {
		return fmt.Errorf("%s already exists", dest)
	}
	parent := filepath.Dir(dest)
	if err := os.MkdirAll(parent, dirMode); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dest)+".tmp-") // mode 0700
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	inner := filepath.Join(tmp, "copy")
	if err := db.Checkpoint(inner, pebble.WithFlushedWAL()); err != nil {
		return err
	}
	if err := os.Chmod(inner, dirMode); err != nil {
		return err
	}
	return os.Rename(inner, dest)
}

// dirMode is the mode of the directories the store creates (its own, a checkpoint's): the owner's only, as
// PostgreSQL's data directory, so that other users of the machine cannot read the data past the password (the
// files in them are created 0644 by Pebble; the directory is what keeps them private).
const dirMode = 0o700
