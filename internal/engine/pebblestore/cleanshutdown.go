package pebblestore

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// The clean-shutdown record. Pebble tolerates an unreadable tail of the last WAL (a crash may tear it), so after
// a clean shutdown a damaged tail would silently lose acknowledged writes. Close therefore flushes the memtable
// (the WAL then holds nothing that is not also in an sstable) and, once Pebble is closed, writes this record:
// the highest version and every file of the store with its size, and a checksum of every file but sstables and
// blob files (their blocks carry checksums of their own, verified separately). The next Open compares the
// directory with it before Pebble reads anything, so any damage since the clean shutdown is an error naming the
// file, and removes the record once the store is open for writing: after a crash there is none.

// cleanName is the clean-shutdown record's file name in the store's directory.
const cleanName = "ANYKV-CLEAN-SHUTDOWN"

// cleanRecord is the content of the clean-shutdown record.
type cleanRecord struct {
	Version uint64      `json:"version"`
	Files   []cleanFile `json:"files"`
}

// cleanFile is one file as the clean shutdown left it.
type cleanFile struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	// CRC is the CRC-32C of the content; absent for sstables and blob files.
	CRC *uint32 `json:"crc,omitempty"`
	// Entries is an sstable's number of entries, for reports of what was lost.
	Entries uint64 `json:"entries,omitempty"`
}

// pebbleFile says whether a directory entry is one of Pebble's files, which the record covers; other files
// (Pebble's LOCK, the record itself, the subdirectories Recover creates, anything a user put there) are left out.
func pebbleFile(name string) bool {
	for _, p := range []string{"MANIFEST-", "OPTIONS-", "marker."} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	num, ext, ok := strings.Cut(name, ".")
	if _, err := strconv.ParseUint(num, 10, 64); !ok || err != nil {
		return false
	}
	return ext == "log" || ext == "sst" || ext == "blob"
}

// summed says whether a file's content is checksummed in the record.
func summed(name string) bool {
	return !strings.HasSuffix(name, ".sst") && !strings.HasSuffix(name, ".blob")
}

// listFiles describes every file of dir as the record does; entries gives sstables' entry counts by name.
func listFiles(fs vfs.FS, dir string, entries map[string]uint64) ([]cleanFile, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, fmt.Errorf("pebblestore: list %s: %w", dir, err)
	}
	sort.Strings(names)
	var files []cleanFile
	for _, name := range names {
		if !pebbleFile(name) {
			continue
		}
		path := fs.PathJoin(dir, name)
		st, err := fs.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("pebblestore: %w", err)
		}
		if st.IsDir() {
			continue
		}
		f := cleanFile{Name: name, Size: st.Size(), Entries: entries[name]}
		if summed(name) {
			sum, err := fileCRC(fs, path)
			if err != nil {
				return nil, err
			}
			f.CRC = &sum
		}
		files = append(files, f)
	}
	return files, nil
}

// fileCRC is the CRC-32C of a whole file.
func fileCRC(fs vfs.FS, path string) (uint32, error) {
	f, err := fs.Open(path)
	if err != nil {
		return 0, fmt.Errorf("pebblestore: %w", err)
	}
	defer f.Close()
	h := crc32.New(castagnoli)
	if _, err := io.Copy(h, f); err != nil {
		return 0, fmt.Errorf("pebblestore: read %s: %w", path, err)
	}
	return h.Sum32(), nil
}

// writeClean writes the record for the closed store in dir: to a temporary file, synced, renamed into place,
// and the directory synced, so that a crash leaves either no record or a whole one.
func writeClean(fs vfs.FS, dir string, version uint64, entries map[string]uint64) error {
	files, err := listFiles(fs, dir, entries)
	if err != nil {
		return err
	}
	return putClean(fs, dir, cleanRecord{Version: version, Files: files})
}

// putClean writes rec as the clean-shutdown record, as writeClean says.
func putClean(fs vfs.FS, dir string, rec cleanRecord) error {
	body, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("pebblestore: encode the clean-shutdown record: %w", err)
	}
	content := fmt.Sprintf("%08x\n%s\n", crc32.Checksum(body, castagnoli), body)
	tmp := fs.PathJoin(dir, cleanName+".tmp")
	f, err := fs.Create(tmp, "")
	if err != nil {
		return fmt.Errorf("pebblestore: %w", err)
	}
	_, err = io.WriteString(f, content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, fs.PathJoin(dir, cleanName))
	}
	if err == nil {
		err = syncDir(fs, dir)
	}
	if err != nil {
		return fmt.Errorf("pebblestore: write the clean-shutdown record: %w", err)
	}
	return nil
}

// syncDir fsyncs a directory, making renames and removals in it durable.
func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// readClean reads dir's record: nil without one (a new store, or after a crash), an error wrapping
// errBadRecord if it is damaged.
func readClean(fs vfs.FS, dir string) (*cleanRecord, error) {
	f, err := fs.Open(fs.PathJoin(dir, cleanName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pebblestore: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("pebblestore: read %s: %w", cleanName, err)
	}
	sum, body, ok := strings.Cut(strings.TrimSuffix(string(data), "\n"), "\n")
	want, perr := strconv.ParseUint(sum, 16, 32)
	if !ok || perr != nil || uint32(want) != crc32.Checksum([]byte(body), castagnoli) {
		return nil, fmt.Errorf("%w: checksum mismatch", errBadRecord)
	}
	var rec cleanRecord
	if err := json.Unmarshal([]byte(body), &rec); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadRecord, err)
	}
	return &rec, nil
}

// errBadRecord is a clean-shutdown record that does not read back.
var errBadRecord = errors.New("clean-shutdown record damaged")

// removeClean deletes the record durably: from now on the store changes, and a crash must not be judged against
// it.
func removeClean(fs vfs.FS, dir string) error {
	if err := fs.Remove(fs.PathJoin(dir, cleanName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pebblestore: remove the clean-shutdown record: %w", err)
	}
	if err := syncDir(fs, dir); err != nil {
		return fmt.Errorf("pebblestore: remove the clean-shutdown record: %w", err)
	}
	return nil
}

// compare returns every difference between dir's files and the record: a missing file, another size, another
// content. Files created since (none should be) are not damage.
func (rec *cleanRecord) compare(fs vfs.FS, dir string) ([]Damage, error) {
	var damage []Damage
	for _, want := range rec.Files {
		path := fs.PathJoin(dir, want.Name)
		st, err := fs.Stat(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			damage = append(damage, Damage{File: want.Name, Lost: lostWith(want),
				Problem: fmt.Sprintf("missing (the clean shutdown left %d bytes)", want.Size)})
			continue
		case err != nil:
			return nil, fmt.Errorf("pebblestore: %w", err)
		case st.Size() != want.Size:
			damage = append(damage, Damage{File: want.Name, Lost: lostWith(want),
				Problem: fmt.Sprintf("%d bytes, the clean shutdown left %d", st.Size(), want.Size)})
			continue
		case want.CRC == nil:
			continue
		}
		sum, err := fileCRC(fs, path)
		if err != nil {
			return nil, err
		}
		if sum != *want.CRC {
			damage = append(damage, Damage{File: want.Name, Lost: lostWith(want),
				Problem: "content changed since the clean shutdown (checksum mismatch)"})
		}
	}
	return damage, nil
}

// lostWith says what damage to f can lose.
func lostWith(f cleanFile) string {
	switch {
	case strings.HasSuffix(f.Name, ".sst"):
		return fmt.Sprintf("its %d entries, if the store cannot read it", f.Entries)
	case strings.HasSuffix(f.Name, ".log"):
		return "no data: the memtable was flushed at the clean shutdown, so the WAL held nothing else"
	case strings.HasPrefix(f.Name, "MANIFEST"):
		return "sstables the MANIFEST no longer lists (the report after opening names them)"
	}
	return ""
}

// cleanState is what Close learns before closing Pebble, for the record it writes after.
type cleanState struct {
	version uint64
	entries map[string]uint64
}

// prepareClean flushes the memtable and reads what the record needs. ok is false when the store cannot vouch
// for its state (an earlier error, a failed commit or flush): Close then writes no record, and the next Open
// treats the store as after a crash.
func (s *Store) prepareClean(closeErr error) (st cleanState, ok bool) {
	if closeErr != nil || s.failed.Load() != nil {
		return st, false
	}
	if s.space.full.Load() || s.space.readOnly.Load() {
		// A flush needs room the disk does not have, and Pebble would retry it until space returns.
		s.log.Warn("disk full at close: no flush and no clean-shutdown record; the next start checks as after a crash")
		return st, false
	}
	// The version record, a ceiling while the store ran without a journal, becomes exact again (the writer has
	// stopped), so that a clean restart goes on from the last version allocated. A store that wrote nothing has
	// it exact already, and its close writes nothing (no sstable of one record per open and close).
	recorded, _, err := getUint64(s.db, metaVersionKey)
	if err != nil {
		s.log.Warn("no clean-shutdown record", "err", err)
		return st, false
	}
	version := s.version.Load()
	if recorded != version {
		if err := s.db.Set(metaVersionKey, beUint64(version), pebble.NoSync); err != nil {
			s.log.Warn("version record at close failed: no clean-shutdown record", "err", err)
			return st, false
		}
	}
	if _, ok, _ := getUint64(s.db, metaFloorKey); ok { // exact now: a clean restart need not skip past it
		if err := s.db.Delete(metaFloorKey, pebble.NoSync); err != nil {
			s.log.Warn("version floor at close failed: no clean-shutdown record", "err", err)
			return st, false
		}
	}
	if err := s.db.Flush(); err != nil {
		s.log.Warn("flush at close failed: no clean-shutdown record", "err", err)
		return st, false
	}
	ts, err := liveTables(s.db, true)
	if err != nil {
		s.log.Warn("no clean-shutdown record", "err", err)
		return st, false
	}
	st = cleanState{version: version, entries: map[string]uint64{}}
	for _, t := range ts {
		st.entries[t.name] = t.entries
	}
	return st, true
}
