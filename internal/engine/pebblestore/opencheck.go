package pebblestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Open's damage checks, around pebble.Open: before it, the clean-shutdown record (cleanshutdown.go) and the
// MANIFEST (manifestscan.go), since Pebble changes the directory as it opens; after it, what the opened store
// holds against the record, and every sstable's checksums. Damage makes Open fail with a DamageError, unless
// Options.Recover: then Open goes on, keeps hard links to the sstables it drops, and reports (Store.Recovered).

// recoveredPrefix starts the name of the subdirectory where Recover keeps the sstables the opened store dropped.
const recoveredPrefix = "recovered-"

// recoveringName is an empty file saying that an Open went past damage (Recover) and has not yet recorded, durably,
// versions above every item left (versionAfterRecovery): the next Open does it, whether or not it finds the damage.
// It outlives the evidence, which the Open removes (the clean-shutdown record) or Pebble does (obsolete files):
// a kill in between, or an Open read-only on a full disk, which hands out no version, left a store whose next
// Open saw no damage and handed out the versions of the items the damage dropped again.
const recoveringName = "ANYKV-RECOVERING"

// openCheck carries the checks' state from before pebble.Open to after it.
type openCheck struct {
	lock    *pebble.Lock // Pebble's directory lock, taken first: no other process changes the files under the checks
	fs      vfs.FS
	dir     string
	recover bool
	clean   *cleanRecord // the clean-shutdown record, nil after a crash
	damage  []Damage
	keep    string // Recover with damage: the directory of hard links to the sstables found on disk
	// keptJournals counts the damaged journal files copied into keep (it stays then, whatever was dropped).
	keptJournals int
	onDisk       map[string]int64 // ... and those sstables, name → size
	// recovering: recoveringName was found, or written by this Open (see there).
	recovering bool
	// liveAtOpen are the sstables the MANIFEST lists, read by a read-only open before the real one: a compaction
	// the real Open starts may replace some before afterOpen looks, which is no damage.
	liveAtOpen map[string]bool
}

// readLive opens the store read-only (no compaction runs) under the check's lock and records the sstables its
// MANIFEST lists, for afterOpen to compare with the clean-shutdown record. Only needed when there is one.
func (c *openCheck) readLive(po *pebble.Options) error {
	if c.clean == nil {
		return nil
	}
	ro := *po
	ro.ReadOnly = true
	db, err := pebble.Open(c.dir, &ro)
	if err != nil {
		return err // the real Open meets it too, and reports it (openFailed)
	}
	defer db.Close()
	live, err := liveTables(db, false)
	if err != nil {
		return err
	}
	c.liveAtOpen = make(map[string]bool, len(live))
	for _, t := range live {
		c.liveAtOpen[t.name] = true
	}
	return nil
}

// beforeOpen checks the directory before Pebble reads it.
func beforeOpen(opts Options, fs vfs.FS) (*openCheck, error) {
	c := &openCheck{fs: fs, dir: opts.Dir, recover: opts.Recover}
	if err := fs.MkdirAll(opts.Dir, dirMode); err != nil {
		return nil, fmt.Errorf("pebblestore: %w", err)
	}
	lock, err := pebble.LockDirectory(opts.Dir, fs)
	// Another process holds the lock (EWOULDBLOCK), or this one does (Pebble's own words, in tests).
	if errors.Is(err, syscall.EWOULDBLOCK) || err != nil && strings.Contains(err.Error(), "lock held by current process") {
		return nil, fmt.Errorf("pebblestore: %s is locked by another process (another anykv serving it, or anykv "+
			"verify): stop that one or choose another --dir: %w", opts.Dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("pebblestore: %s cannot be locked: %w", opts.Dir, err)
	}
	c.lock = lock
	if _, serr := fs.Stat(fs.PathJoin(opts.Dir, recoveringName)); serr == nil {
		c.recovering = true
	}
	if c.clean, c.damage, err = fileDamage(fs, opts.Dir); err == nil && len(c.damage) > 0 {
		if !c.recover {
			err = &DamageError{Dir: opts.Dir, Damage: c.damage}
		} else if err = c.keepTables(); err == nil && !c.recovering {
			err = markRecovering(fs, opts.Dir) // before the record goes, and before Pebble changes anything
			c.recovering = err == nil
		}
	}
	if err == nil && (c.clean != nil || c.hasDamage(cleanName)) {
		// Pebble changes the directory as it opens (a new WAL and OPTIONS file, obsolete files deleted): a crash
		// from then on must not be judged against the record, which would call the store damaged. afterOpen puts
		// the record back if it refuses the store for a difference from it.
		err = removeClean(fs, opts.Dir)
	}
	if err != nil {
		_ = lock.Close()
		return nil, err
	}
	return c, nil
}

// fileDamage checks a store's files as they lie, before Pebble opens them: against the clean-shutdown record
// if there is one (returned), else the WALs; and the MANIFEST to its end.
func fileDamage(fs vfs.FS, dir string) (*cleanRecord, []Damage, error) {
	var damage []Damage
	rec, err := readClean(fs, dir)
	switch {
	case errors.Is(err, errBadRecord):
		damage = append(damage, Damage{File: cleanName, Problem: err.Error(),
			Lost: "nothing by itself, but damage since the clean shutdown can no longer be told apart"})
	case err != nil:
		return nil, nil, err
	}
	var d []Damage
	if rec != nil {
		d, err = rec.compare(fs, dir)
	} else { // with a record, the WALs' checksums are in it
		d, err = walDamage(fs, dir)
	}
	if err != nil {
		return nil, nil, err
	}
	damage = append(damage, d...)
	d, err = checkManifest(fs, dir)
	if err != nil {
		return nil, nil, err
	}
	damage = append(damage, d...)
	if d, err = journalDamage(fs, dir); err != nil {
		return nil, nil, err
	}
	return rec, append(damage, d...), nil
}

// openFailed is Open's error when pebble.Open fails: Pebble's, as a DamageError if it names damaged files, and
// with the damage found before, if any (Recover went past it, Pebble could not).
func (c *openCheck) openFailed(err error) error {
	_ = c.lock.Close()
	err = namedDamage(c.fs, c.dir, fmt.Errorf("pebblestore: open %s: %w", c.dir, err))
	if len(c.damage) == 0 {
		return err
	}
	if c.keep != "" && c.keptJournals == 0 {
		_ = c.fs.RemoveAll(c.keep) // nothing was dropped
	}
	de := &DamageError{Dir: c.dir, Damage: c.damage, cause: err}
	var named *DamageError
	if errors.As(err, &named) {
		de.Damage = append(de.Damage, named.Damage...)
	} else {
		de.Damage = append(de.Damage, Damage{File: "(Pebble)", Problem: err.Error(),
			Lost: "Pebble cannot open past the damage above: restore a backup"})
	}
	return de
}

// keepTables hard-links every sstable into a new subdirectory, so that the ones Pebble drops as unlisted are
// not deleted for good.
func (c *openCheck) keepTables() error {
	names, err := c.fs.List(c.dir)
	if err != nil {
		return fmt.Errorf("pebblestore: list %s: %w", c.dir, err)
	}
	c.keep = c.fs.PathJoin(c.dir, fmt.Sprintf("%s%d", recoveredPrefix, time.Now().UnixNano()))
	c.onDisk = map[string]int64{}
	if err := c.fs.MkdirAll(c.keep, dirMode); err != nil {
		return fmt.Errorf("pebblestore: %w", err)
	}
	for _, name := range names {
		if !strings.HasSuffix(name, ".sst") {
			continue
		}
		path := c.fs.PathJoin(c.dir, name)
		st, err := c.fs.Stat(path)
		if err != nil {
			return fmt.Errorf("pebblestore: %w", err)
		}
		if err := c.fs.Link(path, c.fs.PathJoin(c.keep, name)); err != nil {
			return fmt.Errorf("pebblestore: keep %s: %w", name, err)
		}
		c.onDisk[name] = st.Size()
	}
	// A damaged journal file is copied (Open truncates it, so a link would not keep it): its records after the
	// damage are not replayed, and may still be read out of the copy.
	for i := range c.damage {
		d := &c.damage[i]
		if !strings.HasPrefix(d.File, journalPrefix) {
			continue
		}
		kept := c.fs.PathJoin(c.keep, d.File)
		if err := vfs.Copy(c.fs, c.fs.PathJoin(c.dir, d.File), kept); err != nil {
			return fmt.Errorf("pebblestore: keep %s: %w", d.File, err)
		}
		d.Lost += "; a copy is kept as " + kept
		c.keptJournals++
	}
	return nil
}

// afterOpen checks the opened store: against the clean-shutdown record (its sstables, its version), and every
// sstable's checksums unless skipTables. It reads the meta records (readMeta) and returns the version record.
//
// beforeOpen removed the record, since Pebble changes the directory (a new WAL and OPTIONS file, obsolete files
// deleted) and a later Open could not compare the two any more; but when the store is refused for a difference
// from the record itself, the record is put back, so that the next Open refuses it too.
func (c *openCheck) afterOpen(db *pebble.DB, skipTables bool) (version uint64, err error) {
	differs := false // the opened store differs from the record
	defer func() {
		if c.clean != nil && err != nil && differs {
			if perr := putClean(c.fs, c.dir, *c.clean); perr != nil {
				err = fmt.Errorf("%w (and the clean-shutdown record could not be put back: %v)", err, perr)
			}
		}
	}()
	live, err := liveTables(db, false)
	if err != nil {
		return 0, namedDamage(c.fs, c.dir, err)
	}
	isLive := c.liveAtOpen
	if isLive == nil {
		isLive = map[string]bool{}
		for _, t := range live {
			isLive[t.name] = true
		}
	}
	if c.clean != nil {
		for _, f := range c.clean.Files {
			_, dropped := c.onDisk[f.Name] // reportDropped tells exactly what those lost
			if strings.HasSuffix(f.Name, ".sst") && !isLive[f.Name] && !dropped {
				c.damage = append(c.damage, Damage{File: f.Name, Problem: "live at the clean shutdown, not in the opened store",
					Lost: fmt.Sprintf("its %d entries", f.Entries)})
				differs = true
			}
		}
	}
	if !skipTables {
		c.damage = append(c.damage, checkTables(c.fs, c.dir, live, nil).damage...)
	}
	if err := c.judge(); err != nil {
		return 0, err
	}
	if version, err = readMeta(db); err != nil {
		return 0, namedDamage(c.fs, c.dir, err)
	}
	if c.clean != nil && version != c.clean.Version {
		c.damage = append(c.damage, Damage{File: "(version record)", Problem: fmt.Sprintf(
			"highest version %d, the clean shutdown recorded %d", version, c.clean.Version), Lost: "writes after the version found"})
		differs = true
		if err := c.judge(); err != nil {
			return 0, err
		}
	}
	c.reportDropped(db, isLive)
	return version, nil
}

// versionAfterRecovery is the version a store goes on from (after its journal's replay). When Recover went past
// damage, the version record may have been in what was dropped (after compactions it lives in one sstable), or
// be older than items a dropped file or WAL tail held: versions then go on above every item left, by a margin
// no lost item's version can be near, so that none is ever handed out twice.
func (c *openCheck) versionAfterRecovery(db *pebble.DB, version uint64) (uint64, error) {
	if (!c.recover || len(c.damage) == 0) && !c.recovering {
		return version, nil
	}
	top, err := highestItemVersion(db)
	if err != nil {
		return 0, namedDamage(c.fs, c.dir, err)
	}
	version = max(version, top) + recoverMargin
	// Recorded at once: a crash before the first write must not take the store back to the record it had.
	if err := db.Set(metaVersionKey, beUint64(version), pebble.Sync); err != nil {
		return 0, fmt.Errorf("pebblestore: version record: %w", err)
	}
	if c.recovering {
		if err := c.fs.Remove(c.fs.PathJoin(c.dir, recoveringName)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, fmt.Errorf("pebblestore: %w", err)
		}
		if err := syncDir(c.fs, c.dir); err != nil {
			return 0, fmt.Errorf("pebblestore: %w", err)
		}
	}
	return version, nil
}

// markRecovering writes recoveringName durably.
func markRecovering(fs vfs.FS, dir string) error {
	f, err := fs.Create(fs.PathJoin(dir, recoveringName), vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("pebblestore: %w", err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(fs, dir)
	}
	if err != nil {
		return fmt.Errorf("pebblestore: %w", err)
	}
	return nil
}

// recoverMargin is how far above the stored items a recovering Open that went past damage starts its versions:
// more than the writes of any one lost file, and 2^24 such opens still stay below 2^56.
const recoverMargin = 1 << 32

// highestItemVersion reads every stored item for the highest version (a recovering Open's, once).
func highestItemVersion(db *pebble.DB) (uint64, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: dataStart, UpperBound: dataEnd})
	if err != nil {
		return 0, err
	}
	var top uint64
	for ok := it.First(); ok; ok = it.Next() {
		if item, err := decodeValue(it.Value()); err == nil {
			top = max(top, item.Version)
		}
	}
	return top, errors.Join(it.Error(), it.Close())
}

// judge returns the DamageError unless recovering.
func (c *openCheck) judge() error {
	if len(c.damage) > 0 && !c.recover {
		return &DamageError{Dir: c.dir, Damage: c.damage}
	}
	return nil
}

func (c *openCheck) hasDamage(file string) bool {
	for _, d := range c.damage {
		if d.File == file {
			return true
		}
	}
	return false
}

// reportDropped adds the sstables found on disk that the opened store does not hold, and removes the kept links
// of the others (and the directory, if nothing was dropped).
func (c *openCheck) reportDropped(db *pebble.DB, isLive map[string]bool) {
	if c.keep == "" {
		return
	}
	dropped := 0
	for name, size := range c.onDisk {
		link := c.fs.PathJoin(c.keep, name)
		if isLive[name] {
			_ = c.fs.Remove(link)
			continue
		}
		dropped++
		lost := "its keys could not be compared"
		if keys, differ, err := compareTable(c.fs, link, db); err == nil {
			lost = fmt.Sprintf("%d of its %d keys differ in the opened store (lost, or an older value)", differ, keys)
		}
		c.damage = append(c.damage, Damage{File: name, Problem: "on disk but not listed by the MANIFEST Pebble read: dropped",
			Lost: fmt.Sprintf("%s; %d bytes; a hard link is kept as %s", lost, size, link)})
	}
	if dropped == 0 && c.keptJournals == 0 {
		_ = c.fs.RemoveAll(c.keep)
	}
}

// report logs the damage a recovering Open went past, one warning per file, and returns it.
func (c *openCheck) report(log *slog.Logger) []Damage {
	for _, d := range c.damage {
		log.Warn("opened a damaged store (--recover)", "file", d.File, "problem", d.Problem, "lost", d.Lost)
	}
	return c.damage
}

// Recovered returns the damage Open went past with Options.Recover (nil for a healthy store): each damaged or
// dropped file, what was wrong and what was lost.
func (s *Store) Recovered() []Damage { return s.recovered }

// compareTable reads the sstable at path and counts its keys and those whose newest entry in it the opened db
// does not hold: a value absent or different, or a deletion the db does not reflect.
func compareTable(fs vfs.FS, path string, db *pebble.DB) (keys, differ int, err error) {
	f, err := fs.Open(path)
	if err != nil {
		return 0, 0, err
	}
	readable, err := sstable.NewSimpleReadable(f)
	if err != nil {
		f.Close()
		return 0, 0, err
	}
	r, err := sstable.NewReader(context.Background(), readable, sstable.ReaderOptions{})
	if err != nil {
		readable.Close()
		return 0, 0, err
	}
	defer r.Close()
	it, err := r.NewPointIter(context.Background(), sstable.IterOptions{})
	if err != nil {
		return 0, 0, err
	}
	defer it.Close()
	var prev []byte
	for kv := it.First(); kv != nil; kv = it.Next() {
		if prev != nil && bytes.Equal(kv.K.UserKey, prev) {
			continue // an older entry of the same key
		}
		prev = append(prev[:0], kv.K.UserKey...)
		keys++
		want, _, err := kv.V.Value(nil)
		if err != nil {
			return keys, differ, err
		}
		got, closer, err := db.Get(kv.K.UserKey)
		switch {
		case errors.Is(err, pebble.ErrNotFound):
			if kv.K.Kind() == pebble.InternalKeyKindSet || kv.K.Kind() == pebble.InternalKeyKindSetWithDelete {
				differ++
			}
		case err != nil:
			return keys, differ, err
		default:
			if kv.K.Kind() != pebble.InternalKeyKindSet && kv.K.Kind() != pebble.InternalKeyKindSetWithDelete || !bytes.Equal(got, want) {
				differ++
			}
			closer.Close()
		}
	}
	return keys, differ, it.Error()
}
