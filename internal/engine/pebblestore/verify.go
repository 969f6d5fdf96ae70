package pebblestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Pebble checks a block's checksum only when it reads the block, so a damaged block of a rarely read sstable
// stays unnoticed until a read (or a compaction) hits it. Verification reads every block of every live sstable
// and checks its checksum (sstable.Reader.ValidateBlockChecksums): at Open, in a slow background loop
// (Options.VerifyInterval), and offline in Verify.

// table is one live sstable.
type table struct {
	name    string // base name, "000123.sst"
	size    int64
	entries uint64
}

// liveTables lists the DB's live sstables (physical files; anykv ingests nothing, so there are no virtual ones).
// withEntries also reads each one's entry count from its properties block, which fails on a damaged sstable.
func liveTables(db *pebble.DB, withEntries bool) ([]table, error) {
	var opts []pebble.SSTablesOption
	if withEntries {
		opts = append(opts, pebble.WithProperties())
	}
	levels, err := db.SSTables(opts...)
	if err != nil {
		return nil, fmt.Errorf("pebblestore: list sstables: %w", err)
	}
	var ts []table
	for _, level := range levels {
		for _, t := range level {
			var entries uint64
			if t.Properties != nil {
				entries = t.Properties.NumEntries
			}
			ts = append(ts, table{name: t.BackingSSTNum.String() + ".sst", size: int64(t.Size), entries: entries})
		}
	}
	return ts, nil
}

// checkTable verifies every block checksum of one sstable. A missing file is reported as os.ErrNotExist (a
// compaction may have removed it meanwhile); any other error is damage.
func checkTable(fs vfs.FS, dir, name string) error {
	f, err := fs.Open(fs.PathJoin(dir, name))
	if err != nil {
		return err
	}
	readable, err := sstable.NewSimpleReadable(f)
	if err != nil {
		f.Close()
		return err
	}
	r, err := sstable.NewReader(context.Background(), readable, sstable.ReaderOptions{})
	if err != nil {
		readable.Close()
		return err
	}
	err = r.ValidateBlockChecksums()
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	return err
}

// tableCheck is the outcome of checking a set of sstables.
type tableCheck struct {
	files  int   // sstables checked
	bytes  int64 // their size
	damage []Damage
}

// checkTables verifies ts, stopping early if stop is closed (nil: never).
func checkTables(fs vfs.FS, dir string, ts []table, stop <-chan struct{}) tableCheck {
	var c tableCheck
	for _, t := range ts {
		select {
		case <-stop:
			return c
		default:
		}
		err := checkTable(fs, dir, t.name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		c.files++
		c.bytes += t.size
		if err != nil {
			c.damage = append(c.damage, Damage{File: t.name, Problem: fmt.Sprintf("sstable unreadable: %v", err),
				Lost: "reads of the keys in its damaged blocks fail"})
		}
	}
	return c
}

// verifyStats are the background verification's figures for Stats.
type verifyStats struct {
	runs        atomic.Int64
	lastUnix    atomic.Int64 // end of the last run, unix seconds; 0 before the first
	lastFiles   atomic.Int64 // sstables checked by the last run
	lastBytes   atomic.Int64
	lastCorrupt atomic.Int64 // damaged sstables found by the last run
	corrupt     atomic.Int64 // damaged sstables found by all runs
}

// VerifyNow checks every block checksum of every live sstable now and returns the damage found; the background
// loop runs it every Options.VerifyInterval. Damage is logged as an error and counted in Stats
// (verify_corrupt_files), but reads and writes go on: a read of a damaged block fails on its own.
func (s *Store) VerifyNow() ([]Damage, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	ts, err := liveTables(s.db, false)
	s.exit()
	if err != nil {
		return nil, err
	}
	c := checkTables(s.fs(), s.opts.Dir, ts, s.verifyStop)
	v := &s.verify
	v.runs.Add(1)
	v.lastUnix.Store(time.Now().Unix())
	v.lastFiles.Store(int64(c.files))
	v.lastBytes.Store(c.bytes)
	v.lastCorrupt.Store(int64(len(c.damage)))
	v.corrupt.Add(int64(len(c.damage)))
	for _, d := range c.damage {
		s.log.Error("sstable verification found damage: run `anykv verify` on the stopped store and restore a backup",
			"file", d.File, "problem", d.Problem)
	}
	return c.damage, nil
}

// verifyLoop runs VerifyNow every interval until Close.
func (s *Store) verifyLoop(interval time.Duration) {
	defer close(s.verifyDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.verifyStop:
			return
		case <-t.C:
			if _, err := s.VerifyNow(); err != nil {
				s.log.Warn("sstable verification did not run", "err", err)
			}
			if s.verifyRan != nil {
				select {
				case s.verifyRan <- struct{}{}:
				case <-s.verifyStop:
					return
				}
			}
		}
	}
}

// testVerifyRan, set by tests before Open, becomes the store's verifyRan.
var testVerifyRan chan struct{}

// startVerifier starts the background loop if the interval is positive.
func (s *Store) startVerifier() {
	s.verifyStop = make(chan struct{})
	s.verifyRan = testVerifyRan
	if s.opts.VerifyInterval > 0 {
		s.verifyDone = make(chan struct{})
		go s.verifyLoop(s.opts.VerifyInterval)
	}
}

// stopVerifier ends the loop (a run in progress stops after its current file) and waits for it.
func (s *Store) stopVerifier() {
	close(s.verifyStop)
	if s.verifyDone != nil {
		<-s.verifyDone
	}
}

// addVerifyStats adds the verification figures to a Stats map.
func (s *Store) addVerifyStats(m map[string]int64) {
	v := &s.verify
	m["verify_runs"] = v.runs.Load()
	m["verify_last_unix"] = v.lastUnix.Load()
	m["verify_last_files"] = v.lastFiles.Load()
	m["verify_last_bytes"] = v.lastBytes.Load()
	m["verify_last_corrupt_files"] = v.lastCorrupt.Load()
	m["verify_corrupt_files"] = v.corrupt.Load()
}

// fs is the file system the store lives on.
func (s *Store) fs() vfs.FS {
	if s.opts.FS != nil {
		return s.opts.FS
	}
	return vfs.Default
}
