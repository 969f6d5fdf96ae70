package pebblestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
)

// TestIntervalModeSurvivesKill: under SyncInterval, every acknowledged write is in the files the OS holds the
// moment Apply returns, long before the background fsync, so SIGKILL loses none (Redis's appendfsync everysec
// promise); a power loss may still lose the last second.
func TestIntervalModeSurvivesKill(t *testing.T) {
	for _, n := range []int{1, 10, 300} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			s, err := Open(Options{Dir: dir, Sync: SyncInterval, CacheBytes: 8 << 20, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var last []engine.Result
			for i := 0; i < n; i++ {
				muts := []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint("v", i))}}
				if i%3 == 2 {
					muts = append(muts, engine.Mutation{Op: engine.OpDelete, Table: "t", Key: []byte(fmt.Sprint("k", i-1))})
				}
				if last, err = s.Apply(ctx, &engine.Batch{Muts: muts}); err != nil {
					t.Fatal(err)
				}
			}
			// The files as the OS holds them now, before the background sync (at most once a second): what a
			// process killed with SIGKILL leaves behind (its own memory is lost, the page cache is not).
			killed := copyDir(t, dir)
			r, err := Open(Options{Dir: killed, Sync: SyncInterval, CacheBytes: 8 << 20, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for i := 0; i < n; i++ {
				deleted := i%3 == 1 && i+1 < n
				it, err := r.Get(ctx, "t", []byte(fmt.Sprint("k", i)), 0)
				switch {
				case deleted && err == nil:
					t.Fatalf("k%d: deleted before the kill, present after", i)
				case !deleted && (err != nil || string(it.Value) != fmt.Sprint("v", i)):
					t.Fatalf("k%d after the kill: %q, %v (of %d acknowledged writes)", i, it.Value, err, n)
				}
			}
			// Versions stay unique: the next write gets a version above every acknowledged one.
			res, err := r.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("after"), Value: []byte("x")}}})
			if err != nil || res[0].New.Version <= last[0].New.Version {
				t.Fatalf("version after recovery %d (%v), last acknowledged %d", res[0].New.Version, err, last[0].New.Version)
			}
		})
	}
}

// TestJournalTornTailAndSwap: a record cut short or damaged ends a journal file (its writer died before
// answering); a swapped-out file is emptied, the other keeps taking appends.
func TestJournalTornTailAndSwap(t *testing.T) {
	fs := vfs.NewMem()
	j, err := openJournal(fs, "")
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	for v := uint64(1); v <= 3; v++ {
		if err := j.append(v, []byte(fmt.Sprint("batch", v))); err != nil {
			t.Fatal(err)
		}
	}
	name := j.names[j.cur]
	recs, err := readJournal(fs, name)
	if err != nil || len(recs) != 3 || recs[2].version != 3 || string(recs[2].repr) != "batch3" {
		t.Fatalf("records: %+v, %v", recs, err)
	}
	whole := readAll(t, fs, name)
	for _, cut := range []int{len(whole) - 1, len(whole) - 7, len(whole) - 17, len(whole) - 25} {
		writeFile(t, fs, "torn", whole[:cut])
		if recs, _ := readJournal(fs, "torn"); len(recs) != 2 {
			t.Fatalf("cut at %d of %d: %d records, want the 2 whole ones", cut, len(whole), len(recs))
		}
	}
	flipped := append([]byte(nil), whole...)
	flipped[len(flipped)-2] ^= 0xff
	writeFile(t, fs, "flipped", flipped)
	if recs, at, _ := readJournalChecked(fs, "flipped"); len(recs) != 2 || at != len(whole)-journalHeader-6 {
		t.Fatalf("damaged last record: %d records, damage at %d; want 2 and %d", len(recs), at, len(whole)-journalHeader-6)
	}
	// A length damaged to reach past the end made the second record look cut short, hiding the third.
	second := len(journalMagic) + journalHeader + len("batch1")
	for _, bit := range []int{8, 20, 31} {
		long := append([]byte(nil), whole...)
		long[second+bit/8] ^= 1 << (bit % 8)
		writeFile(t, fs, "long", long)
		if recs, at, _ := readJournalChecked(fs, "long"); len(recs) != 1 || at != second {
			t.Fatalf("length's bit %d flipped: %d records, damage at %d; want 1 and %d", bit, len(recs), at, second)
		}
	}
	// A tail the OS never wrote back before a power loss may read as zeros: the end, not damage.
	writeFile(t, fs, "zeroed", append(append([]byte(nil), whole...), make([]byte, 4096)...))
	if recs, at, _ := readJournalChecked(fs, "zeroed"); len(recs) != 3 || at != -1 {
		t.Fatalf("zeroed tail: %d records, damage at %d; want 3 and none", len(recs), at)
	}
	// A file of the format before the magic, as a build before it left it when killed, is still replayed.
	var oldFormat []byte
	for v := uint64(1); v <= 2; v++ {
		body := []byte(fmt.Sprint("old", v))
		hdr := make([]byte, journalOldHeader)
		binary.LittleEndian.PutUint32(hdr[0:4], uint32(len(body)))
		binary.LittleEndian.PutUint64(hdr[8:16], v)
		binary.LittleEndian.PutUint32(hdr[4:8], crc32.Update(crc32.Checksum(hdr[8:16], castagnoli), castagnoli, body))
		oldFormat = append(append(oldFormat, hdr...), body...)
	}
	writeFile(t, fs, "oldformat", oldFormat)
	if recs, at, _ := readJournalChecked(fs, "oldformat"); len(recs) != 2 || at != -1 || string(recs[1].repr) != "old2" {
		t.Fatalf("file of the old format: %+v, damage at %d", recs, at)
	}

	old := j.swap()
	j.append(4, []byte("batch4"))
	if err := j.empty(old); err != nil {
		t.Fatal(err)
	}
	if recs, _ := readJournal(fs, j.names[old]); len(recs) != 0 {
		t.Fatalf("emptied file still has %d records", len(recs))
	}
	if recs, _ := readJournal(fs, j.names[j.cur]); len(recs) != 1 || recs[0].version != 4 {
		t.Fatalf("current file: %+v", recs)
	}
}

func readAll(t *testing.T, fs vfs.FS, name string) []byte {
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, fs vfs.FS, name string, b []byte) {
	f, err := fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(append([]byte(nil), b...)) // the memory FS keeps the slice, and scrambles it when the file is truncated
	f.Close()
}

// shortJournalFS fails the next write to a journal file halfway (a full disk's short write) when armed.
type shortJournalFS struct {
	vfs.FS
	armed *atomic.Bool
}

func (f shortJournalFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.Create(name, c)
	if err != nil || !strings.Contains(name, journalPrefix) {
		return file, err
	}
	return shortJournalFile{File: file, armed: f.armed}, nil
}

type shortJournalFile struct {
	vfs.File
	armed *atomic.Bool
}

func (f shortJournalFile) Write(p []byte) (int, error) {
	if f.armed.CompareAndSwap(true, false) {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, syscall.ENOSPC
	}
	return f.File.Write(p)
}

// TestJournalWithoutItsMagicTakesNoAppends: a file emptied while the disk is full may lack its magic, and records
// appended to it would then be read back in the old format, as garbage; the journal takes no more appends (the
// writer syncs each group's WAL instead).
func TestJournalWithoutItsMagicTakesNoAppends(t *testing.T) {
	armed := new(atomic.Bool)
	j, err := openJournal(shortJournalFS{FS: vfs.NewMem(), armed: armed}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	if err := j.append(1, []byte("batch1")); err != nil {
		t.Fatal(err)
	}
	old := j.swap()
	armed.Store(true)
	if err := j.empty(old); err == nil {
		t.Fatal("emptying the file with its magic cut short did not fail")
	}
	j.swap()
	if err := j.append(2, []byte("batch2")); !errors.Is(err, errJournalUnusable) {
		t.Fatalf("append to a file without its magic: %v, want errJournalUnusable", err)
	}
}

// TestJournalDiskFullOverSwaps: a disk full over two swaps leaves both files without their magic; when space
// returns, emptying the file of the failed append cleared the journal's "broken" mark and appends went on to the
// other file, still without its magic, where they read back as nothing (a review). Each file now keeps its own
// mark: appends wait until the file they go to has its magic again, and then read back.
func TestJournalDiskFullOverSwaps(t *testing.T) {
	armed := new(atomic.Bool)
	fs := vfs.NewMem()
	j, err := openJournal(shortJournalFS{FS: fs, armed: armed}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	armed.Store(true)
	if err := j.append(1, []byte("batch1")); err == nil {
		t.Fatal("the append on a full disk did not fail")
	}
	armed.Store(true)
	j.reset() // the WAL was synced: the failed file is emptied, its magic cut short
	for i := 0; i < 2; i++ {
		old := j.swap()
		armed.Store(true)
		j.empty(old) // each file emptied while the disk is full
	}
	armed.Store(false) // space again
	old := j.swap()
	if err := j.empty(old); err != nil {
		t.Fatal(err)
	}
	if err := j.append(2, []byte("batch2")); !errors.Is(err, errJournalUnusable) {
		t.Fatalf("append to the file without its magic: %v, want errJournalUnusable", err)
	}
	old = j.swap()
	if err := j.empty(old); err != nil {
		t.Fatal(err)
	}
	if err := j.append(3, []byte("batch3")); err != nil {
		t.Fatalf("append once both files have their magic: %v", err)
	}
	if recs, at, _ := readJournalChecked(fs, j.names[j.cur]); len(recs) != 1 || recs[0].version != 3 || at != -1 {
		t.Fatalf("read back: %+v, damage at %d", recs, at)
	}
}

// TestJournalShortWriteLosesNothing: a journal append cut short (ENOSPC) left part of a record, and every group
// journaled after it was unreadable: a kill lost them, though acknowledged. The failed group's WAL is synced
// instead and the file starts over, so the groups after it are read back.
func TestJournalShortWriteLosesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	armed := new(atomic.Bool)
	s, err := Open(Options{Dir: dir, Sync: SyncInterval, CacheBytes: 8 << 20, Logger: quiet,
		FS: shortJournalFS{FS: vfs.Default, armed: armed}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	set := func(i int) {
		t.Helper()
		if _, err := s.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t",
			Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint("v", i))}}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		set(i)
	}
	armed.Store(true)
	for i := 10; i < 40; i++ {
		set(i) // the first of these meets the short write
	}
	if armed.Load() {
		t.Fatal("no journal write was cut short")
	}
	killed := copyDir(t, dir) // before the background sync: what a SIGKILL leaves
	r, err := Open(Options{Dir: killed, Sync: SyncInterval, CacheBytes: 8 << 20, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range 40 {
		if it, err := r.Get(ctx, "t", []byte(fmt.Sprint("k", i)), 0); err != nil || string(it.Value) != fmt.Sprint("v", i) {
			t.Errorf("k%d after the kill: %q, %v", i, it.Value, err)
		}
	}
}

// TestDamagedJournalIsRefused: a journal record that is whole but fails its checksum (a flipped byte) hid the
// groups from it on, and Open went on without them and without a word (90 of 100 acknowledged keys gone, with
// the copy before the flip holding all). Open refuses it as damage; Recover replays the groups before it and no
// later one (also none of the other file's, which are newer here: the replay stays a prefix of what was
// acknowledged), and keeps a copy of the damaged file.
func TestDamagedJournalIsRefused(t *testing.T) {
	// No background sync while the groups are written: one put them all in the WAL.
	old := syncInterval
	syncInterval = time.Hour
	t.Cleanup(func() { syncInterval = old })
	dir := filepath.Join(t.TempDir(), "db")
	s, err := Open(Options{Dir: dir, Sync: SyncInterval, CacheBytes: 8 << 20, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const groups = 40
	for i := range groups {
		if i == 1 {
			// The first group synced the version floor; once Pebble's flush loop is idle again, it writes no
			// group to the WAL file until asked to sync (a busy loop goes on writing what arrives meanwhile).
			time.Sleep(100 * time.Millisecond)
		}
		if _, err := s.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t",
			Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint("v", i))}}}); err != nil {
			t.Fatal(err)
		}
	}
	killed := copyDir(t, dir)
	var recs []journalRecord
	for _, name := range journalNames(vfs.Default, killed) {
		if r, err := readJournal(vfs.Default, name); err == nil && len(r) > len(recs) {
			recs = r
		}
	}
	if len(recs) < groups {
		t.Fatalf("%d journal records, want the %d groups", len(recs), groups)
	}
	// Pebble's WAL may still hold some groups: its flush loop, while busy, writes the records that arrive to the
	// file without a sync of their own (a CI run on a loaded machine saw k5-k7 there). Recover keeps those
	// whatever the journal says, so the damaged record is the first group the WAL lacks.
	damaged := sort.Search(len(recs), func(i int) bool { return recs[i].version > walVersion(t, killed) })
	if damaged > groups-10 {
		t.Fatalf("the WAL holds %d of %d groups unsynced, want a few at most", damaged, groups)
	}
	t.Logf("the WAL holds the first %d groups", damaged)
	// The groups split over the two files, as a kill between a swap and the sync leaves them: the older file
	// holds the damaged group and the five after it.
	j, err := openJournal(vfs.Default, killed)
	if err != nil {
		t.Fatal(err)
	}
	older := j.names[j.cur]
	for i, r := range recs {
		if i == damaged+6 {
			j.swap()
		}
		if err := j.append(r.version, r.repr); err != nil {
			t.Fatal(err)
		}
	}
	j.close()
	data := readAll(t, vfs.Default, older)
	off := len(journalMagic)
	for _, r := range recs[:damaged] {
		off += journalHeader + len(r.repr)
	}
	data[off+journalHeader] ^= 0xff
	writeFile(t, vfs.Default, older, data)

	_, err = Open(Options{Dir: killed, Sync: SyncInterval, CacheBytes: 8 << 20, Logger: quiet})
	var de *DamageError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), journalPrefix) {
		t.Fatalf("Open of a store with a damaged journal: %v, want a DamageError naming the journal", err)
	}
	r, err := Open(Options{Dir: killed, Sync: SyncInterval, CacheBytes: 8 << 20, Logger: quiet, Recover: true})
	if err != nil {
		t.Fatalf("Open with Recover: %v", err)
	}
	defer r.Close()
	for i := range groups {
		_, err := r.Get(ctx, "t", []byte(fmt.Sprint("k", i)), 0)
		if want := i < damaged; (err == nil) != want {
			t.Errorf("k%d after Recover: %v; want present %v (the groups before the damaged one, k%d, only)", i, err, want, damaged)
		}
	}
	kept, _ := filepath.Glob(filepath.Join(killed, recoveredPrefix+"*", journalPrefix+"*"))
	if len(kept) != 1 || len(readAll(t, vfs.Default, kept[0])) != len(data) {
		t.Errorf("kept copies of the damaged journal: %v", kept)
	}
}

// walVersion is the version of the last group that Pebble alone recovers from a copy of the store in dir (its
// WAL and tables, without the journal).
func walVersion(t *testing.T, dir string) uint64 {
	t.Helper()
	db, err := pebble.Open(copyDir(t, dir), &pebble.Options{ReadOnly: true, Logger: quietPebble{}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v, _, err := getUint64(db, metaVersionKey)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestJournalEmptiedByCloseAndOtherModes: a clean Close in interval mode leaves both journal files empty (one
// kept every group since the last swap, checked for damage at every later Open), and an Open in another mode
// replays a journal left by a kill and removes it.
func TestJournalEmptiedByCloseAndOtherModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	s, err := Open(Options{Dir: dir, Sync: SyncInterval, CacheBytes: 8 << 20, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := s.Apply(ctx, &engine.Batch{Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t",
			Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint("v", i))}}}); err != nil {
			t.Fatal(err)
		}
	}
	killed := copyDir(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range journalNames(vfs.Default, dir) {
		if b := readAll(t, vfs.Default, name); string(b) != journalMagic {
			t.Errorf("%s holds %q after a clean Close, want the magic alone", filepath.Base(name), b)
		}
	}
	r, err := Open(Options{Dir: killed, Sync: SyncAlways, CacheBytes: 8 << 20, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if it, err := r.Get(ctx, "t", []byte("k19"), 0); err != nil || string(it.Value) != "v19" {
		t.Errorf("k19, journaled before the kill, opened in always mode: %q, %v", it.Value, err)
	}
	for _, name := range journalNames(vfs.Default, killed) {
		if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s outlived an Open in always mode: %v", filepath.Base(name), err)
		}
	}
}
