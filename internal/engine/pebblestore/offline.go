package pebblestore

import (
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// VerifyReport is what Verify found in a stopped store.
type VerifyReport struct {
	// Clean says the store was shut down cleanly (it has a clean-shutdown record).
	Clean           bool
	Manifest        string // the current MANIFEST's name
	ManifestRecords int
	Tables          int    // sstables whose every block checksum was verified
	TableBytes      int64  // their size
	Items           int64  // stored items (expired ones included), every key and value decoded
	Version         uint64 // the version record: exact after a clean shutdown, a ceiling after a crash
	// Damage is every problem found, each naming its file; empty for a healthy store.
	Damage []Damage
}

// Verify checks a stopped store in dir completely, without changing it: the files as Open checks them
// (fileDamage), the WAL replay (Pebble opened read-only, with its strict checks), every block checksum of every
// sstable, and every item's key, value and version. Damage goes into the report; the error is for a store that
// cannot be examined at all (no store in dir, I/O errors). fs nil means the real disk.
func Verify(dir string, fs vfs.FS) (VerifyReport, error) {
	if fs == nil {
		fs = vfs.Default
	}
	var rep VerifyReport
	manifest, err := manifestName(fs, dir)
	if err != nil {
		return rep, err
	}
	if manifest == "" {
		return rep, fmt.Errorf("pebblestore: no store in %s: %w", dir, os.ErrNotExist)
	}
	rep.Manifest = manifest
	// Pebble's directory lock, taken first, turns away a store in use: its files change under the checks.
	lock, err := pebble.LockDirectory(dir, fs)
	if err != nil {
		return rep, fmt.Errorf("pebblestore: %s is in use (is anykv running?): %w", dir, err)
	}
	defer lock.Close()
	rec, damage, err := fileDamage(fs, dir)
	if err != nil {
		return rep, err
	}
	rep.Clean, rep.Damage = rec != nil, damage
	if ls, err := scanRecords(fs, fs.PathJoin(dir, manifest)); err == nil {
		rep.ManifestRecords = ls.records
	}

	db, err := pebble.Open(dir, &pebble.Options{FS: fs, ReadOnly: true, Lock: lock, Logger: quietPebble{}})
	if err != nil {
		return rep, verifyFailed(&rep, fs, dir, err)
	}
	defer db.Close()
	live, err := liveTables(db, false)
	if err != nil {
		return rep, verifyFailed(&rep, fs, dir, err)
	}
	c := checkTables(fs, dir, live, nil)
	rep.Tables, rep.TableBytes = c.files, c.bytes
	rep.Damage = append(rep.Damage, c.damage...)
	if len(c.damage) > 0 {
		return rep, nil // reading the items would only stop at the same blocks
	}
	version, _, err := getUint64(db, metaVersionKey)
	if err != nil {
		return rep, verifyFailed(&rep, fs, dir, err)
	}
	rep.Version = version
	return rep, verifyItems(db, &rep, fs, dir)
}

// verifyItems decodes every stored item and checks that no version exceeds the highest allocated one.
func verifyItems(db *pebble.DB, rep *VerifyReport, fs vfs.FS, dir string) error {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: dataStart, UpperBound: dataEnd})
	if err != nil {
		return verifyFailed(rep, fs, dir, err)
	}
	defer it.Close()
	bad := 0
	for ok := it.First(); ok; ok = it.Next() {
		rep.Items++
		_, _, _, kerr := splitKey(it.Key())
		item, verr := decodeValue(it.Value())
		if kerr == nil && verr == nil && item.Version <= rep.Version {
			continue
		}
		if bad++; bad <= 10 {
			rep.Damage = append(rep.Damage, Damage{File: "(items)", Problem: fmt.Sprintf(
				"item %q: key %v, value %v, version %d of highest %d", it.Key(), kerr, verr, item.Version, rep.Version)})
		}
	}
	if err := it.Error(); err != nil {
		return verifyFailed(rep, fs, dir, err)
	}
	return nil
}

// verifyFailed records an error of Pebble's that names damaged files as damage (returning nil); other errors
// are returned.
func verifyFailed(rep *VerifyReport, fs vfs.FS, dir string, err error) error {
	var de *DamageError
	if errors.As(namedDamage(fs, dir, err), &de) {
		rep.Damage = append(rep.Damage, de.Damage...)
		return nil
	}
	if pebble.IsCorruptionError(err) {
		rep.Damage = append(rep.Damage, Damage{File: "(found by Pebble)", Problem: err.Error()})
		return nil
	}
	return err
}

// quietPebble drops Pebble's informational messages during Verify; its report says what matters.
type quietPebble struct{}

func (quietPebble) Infof(string, ...any)  {}
func (quietPebble) Errorf(string, ...any) {}
func (quietPebble) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebblestore: pebble fatal: "+format, args...))
}
