package pebblestore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"anykv/internal/engine"
)

// sweepKeys is how many keys the corruption sweep writes (as in the review that found the silent losses).
const sweepKeys = 2000

// sweepKey is the i-th key: zero-padded, so each flush below writes a disjoint range and keeps its own sstable.
func sweepKey(i int) string { return fmt.Sprintf("k%05d", i) }

// buildStore writes sweepKeys keys into a store in dir, flushing the memtable four times along the way, so that
// the MANIFEST holds several edits and there are several sstables. It returns the open store.
func buildStore(t *testing.T, dir string) *Store {
	t.Helper()
	return buildStoreOpts(t, Options{Dir: dir, CacheBytes: 8 << 20, Logger: quiet})
}

// buildStoreOpts is buildStore with the Options given.
func buildStoreOpts(t *testing.T, opts Options) *Store {
	t.Helper()
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < sweepKeys; i += 100 {
		muts := make([]engine.Mutation, 0, 100)
		for j := i; j < i+100; j++ {
			muts = append(muts, set("default", sweepKey(j), "value-"+sweepKey(j)))
		}
		mustApply(t, s, muts...)
		if (i+100)%(sweepKeys/5) == 0 && i+100 < sweepKeys {
			if err := s.db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s
}

// crashCopy returns a consistent image of the open store s as a crash would leave it (no clean-shutdown
// record): a Pebble checkpoint, copied so that no file is shared with s through a hard link.
func crashCopy(t *testing.T, s *Store) string {
	t.Helper()
	cp := filepath.Join(t.TempDir(), "checkpoint")
	if err := s.db.Checkpoint(cp); err != nil {
		t.Fatal(err)
	}
	return copyDir(t, cp)
}

// copyDir copies the regular files of src into a new directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == "LOCK" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// fileKind picks one file of a store directory.
type fileKind struct {
	name string
	pick func(names []string) string
}

// highest returns the last name (in sorted order) with the given suffix or prefix.
func highest(names []string, match func(string) bool) string {
	var found []string
	for _, n := range names {
		if match(n) {
			found = append(found, n)
		}
	}
	sort.Strings(found)
	if len(found) == 0 {
		return ""
	}
	return found[len(found)-1]
}

var fileKinds = []fileKind{
	{"last WAL", func(ns []string) string {
		return highest(ns, func(n string) bool { return strings.HasSuffix(n, ".log") })
	}},
	{"MANIFEST", func(ns []string) string {
		return highest(ns, func(n string) bool { return strings.HasPrefix(n, "MANIFEST") })
	}},
	{"sstable", func(ns []string) string {
		return highest(ns, func(n string) bool { return strings.HasSuffix(n, ".sst") })
	}},
	{"OPTIONS", func(ns []string) string {
		return highest(ns, func(n string) bool { return strings.HasPrefix(n, "OPTIONS") })
	}},
	{"clean-shutdown record", func(ns []string) string { return highest(ns, func(n string) bool { return n == cleanName }) }},
}

// damageKind damages the file at path.
type damageKind struct {
	name string
	do   func(t *testing.T, path string)
}

var damageKinds = []damageKind{
	{"flip byte 40 before the end", func(t *testing.T, p string) { flipByte(t, p, -40) }},
	{"flip byte in the middle", func(t *testing.T, p string) { flipByte(t, p, 0) }},
	{"truncate 13 bytes", func(t *testing.T, p string) { truncateBy(t, p, 13) }},
	{"zero the last 4 KiB", zeroTail},
}

// walEarly damages the last WAL where two later records follow. The records of buildStore's last WAL are
// four groups of 100 keys; in the middle, the third, only the fourth follows, and the synced offset in its header
// may not cover the third: Pebble's log writer wakes a sync's waiters before it records the offset that later
// records carry, so the next group can be written with the offset of the sync before (seen in about one of
// three runs). With the second damaged, the fourth is written after the third's sync, whose waiters woke only
// after the second's offset was recorded.
var walEarly = damageKind{"flip byte a third of the way in", func(t *testing.T, p string) {
	flipAt(t, p, func(size int) int { return size / 3 })
}}

// flipByte inverts one byte: fromEnd bytes before the end if fromEnd < 0 and the file is long enough, else the
// middle one.
func flipByte(t *testing.T, path string, fromEnd int) {
	flipAt(t, path, func(size int) int {
		if fromEnd < 0 && size >= -fromEnd {
			return size + fromEnd
		}
		return size / 2
	})
}

// flipAt inverts the byte at the offset pick chooses for the file's size.
func flipAt(t *testing.T, path string, pick func(size int) int) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := pick(len(data))
	data[off] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func truncateBy(t *testing.T, path string, n int64) {
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, max(0, st.Size()-n)); err != nil {
		t.Fatal(err)
	}
}

func zeroTail(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	clear(data[max(0, len(data)-4096):])
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// listNames lists a directory's file names.
func listNames(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// checkNotSilent opens the damaged dir: Open must either refuse with ErrDamaged naming file, or give back every
// key written by buildStore.
func checkNotSilent(t *testing.T, dir, file string) (refused bool) {
	t.Helper()
	s, err := Open(Options{Dir: dir, CacheBytes: 8 << 20, Logger: quiet})
	if err != nil {
		if !errors.Is(err, ErrDamaged) {
			t.Fatalf("Open refused with %v, want ErrDamaged", err)
		}
		if !slices.Contains(DamagedFiles(err), file) {
			t.Fatalf("Open's error names %v, not the damaged %s: %v", DamagedFiles(err), file, err)
		}
		checkRecover(t, dir, file)
		return true
	}
	defer s.Close()
	missing := 0
	var firstErr error
	for i := 0; i < sweepKeys; i++ {
		it, err := s.Get(ctx, "default", []byte(sweepKey(i)), now)
		if err != nil || string(it.Value) != "value-"+sweepKey(i) {
			missing++
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: %q, %v", sweepKey(i), it.Value, err)
			}
		}
	}
	if missing > 0 {
		t.Fatalf("silent loss: Open succeeded but %d of %d keys are not readable (first: %v)", missing, sweepKeys, firstErr)
	}
	return false
}

// checkRecover opens a store Open refused with Recover: it must open and report the damaged file, or, where
// Pebble itself cannot open past the damage, refuse again naming it.
func checkRecover(t *testing.T, dir, file string) {
	t.Helper()
	s, err := Open(Options{Dir: dir, CacheBytes: 8 << 20, Logger: quiet, Recover: true})
	if err != nil {
		if !slices.Contains(DamagedFiles(err), file) {
			t.Fatalf("Open with Recover: %v, not naming %s", err, file)
		}
		return
	}
	defer s.Close()
	if !slices.ContainsFunc(s.Recovered(), func(d Damage) bool { return d.File == file }) {
		t.Fatalf("Open with Recover reports %v, not the damaged %s", s.Recovered(), file)
	}
}

// TestCorruptionAfterCleanShutdown damages each kind of file of a cleanly closed store in each way: Open must
// refuse naming the file, or every acknowledged key must be readable. Before the clean-shutdown record, a
// damaged WAL tail or MANIFEST lost keys silently.
func TestCorruptionAfterCleanShutdown(t *testing.T) {
	pristine := t.TempDir()
	if err := buildStore(t, pristine).Close(); err != nil {
		t.Fatal(err)
	}
	names := listNames(t, pristine)
	for _, fk := range fileKinds {
		file := fk.pick(names)
		if file == "" {
			t.Fatalf("no %s in %v", fk.name, names)
		}
		for _, dk := range damageKinds {
			t.Run(fk.name+"/"+dk.name, func(t *testing.T) {
				dir := copyDir(t, pristine)
				dk.do(t, filepath.Join(dir, file))
				if !checkNotSilent(t, dir, file) {
					t.Logf("%s: %s left every key readable", file, dk.name)
				}
			})
		}
	}
}

// cleanAndCrashed builds a store and returns it cleanly closed, and a checkpoint taken while it was open.
func cleanAndCrashed(t *testing.T) (clean, crashed string) {
	clean = t.TempDir()
	s := buildStore(t, clean)
	crashed = crashCopy(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return clean, crashed
}

// TestCorruptionAfterCrash damages a checkpoint of an open store (as a crash leaves it: no clean-shutdown
// record) where a crash cannot explain the damage: the middle of the last WAL and of the MANIFEST, and any
// sstable. Open must refuse naming the file, or every key must be readable.
func TestCorruptionAfterCrash(t *testing.T) {
	_, crashed := cleanAndCrashed(t)
	names := listNames(t, crashed)
	if slices.Contains(names, cleanName) {
		t.Fatal("a store copied while open has a clean-shutdown record")
	}
	cases := []struct {
		kind   fileKind
		damage damageKind
	}{
		{fileKinds[0], walEarly},       // last WAL, early: a later synced record proves it (walDamage's check)
		{fileKinds[1], damageKinds[1]}, // MANIFEST, middle
		{fileKinds[2], damageKinds[0]}, {fileKinds[2], damageKinds[1]}, {fileKinds[2], damageKinds[2]}, {fileKinds[2], damageKinds[3]},
	}
	for _, c := range cases {
		file := c.kind.pick(names)
		t.Run(c.kind.name+"/"+c.damage.name, func(t *testing.T) {
			dir := copyDir(t, crashed)
			c.damage.do(t, filepath.Join(dir, file))
			if !checkNotSilent(t, dir, file) {
				t.Errorf("%s: %s went unnoticed", file, c.damage.name)
			}
		})
	}
}

// TestCleanShutdownRecordLifecycle: Close writes the record, Open removes it, and a healthy store reopens
// with every key. A file of the user's in the directory, written after the shutdown, is none of its business.
func TestCleanShutdownRecordLifecycle(t *testing.T) {
	dir := t.TempDir()
	userFile := filepath.Join(dir, "server.log")
	s := buildStore(t, dir)
	if err := os.WriteFile(userFile, []byte("started\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(userFile, []byte("started\nstopped\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, cleanName)); err != nil {
		t.Fatalf("no clean-shutdown record after Close: %v", err)
	}
	s, err := Open(Options{Dir: dir, CacheBytes: 8 << 20, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, cleanName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the clean-shutdown record outlives Open: %v", err)
	}
	if len(s.Recovered()) != 0 {
		t.Fatalf("a healthy store reports damage: %v", s.Recovered())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if refused := checkNotSilent(t, dir, ""); refused {
		t.Fatal("a healthy store was refused")
	}
}

// TestCrashDuringOpenIsNoDamage: a process killed while Open runs, after Pebble changed the directory (a new WAL)
// and before Open's checks ended, left the clean-shutdown record beside the changed files, and the next Open
// refused the healthy store as damaged (advising a backup's restore). The record goes before Pebble opens.
func TestCrashDuringOpenIsNoDamage(t *testing.T) {
	dir := t.TempDir()
	if err := buildStore(t, dir).Close(); err != nil {
		t.Fatal(err)
	}
	var killed string
	s, err := Open(Options{Dir: dir, CacheBytes: 8 << 20, Logger: quiet, tune: func(o *pebble.Options) {
		o.EventListener.WALCreated = func(pebble.WALCreateInfo) {
			if killed == "" {
				killed = copyDir(t, dir) // the directory as a kill at this moment of Open leaves it
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if killed == "" {
		t.Fatal("Open created no WAL")
	}
	r, err := Open(Options{Dir: killed, CacheBytes: 8 << 20, Logger: quiet})
	if err != nil {
		t.Fatalf("the store killed during Open: %v", err)
	}
	defer r.Close()
	if it, err := r.Get(ctx, "default", []byte(sweepKey(7)), 0); err != nil || string(it.Value) != "value-"+sweepKey(7) {
		t.Errorf("a key after the kill during Open: %q, %v", it.Value, err)
	}
}

// TestRecoverReportsDropped opens with Recover a store that lost the tail of its MANIFEST and its WAL files
// after a clean shutdown: Open succeeds, and the report names the MANIFEST and the sstable the opened store no
// longer lists, with a kept hard link to it and how many of its keys the store lost, which matches what reads
// find (give or take the two meta records, which the sstable holds too).
func TestRecoverReportsDropped(t *testing.T) {
	dir := t.TempDir()
	// Without automatic compactions the MANIFEST's last edit is Close's flush, which adds the sstable of the
	// last 400 keys: the truncation below loses that edit, and not a compaction's (whose inputs are gone).
	noCompactions := func(o *pebble.Options) { o.DisableAutomaticCompactions = true }
	if err := buildStoreOpts(t, Options{Dir: dir, CacheBytes: 8 << 20, Logger: quiet, tune: noCompactions}).Close(); err != nil {
		t.Fatal(err)
	}
	names := listNames(t, dir)
	manifest := fileKinds[1].pick(names)
	truncateBy(t, filepath.Join(dir, manifest), 13)
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := Open(Options{Dir: dir, CacheBytes: 8 << 20, Logger: quiet}); !errors.Is(err, ErrDamaged) {
		t.Fatalf("Open without Recover: %v, want ErrDamaged", err)
	}
	s, err := Open(Options{Dir: dir, CacheBytes: 8 << 20, Logger: quiet, Recover: true})
	if err != nil {
		t.Fatalf("Open with Recover: %v", err)
	}
	defer s.Close()
	var text []string
	differ, dropped := 0, 0
	for _, d := range s.Recovered() {
		text = append(text, d.String())
		const kept = "a hard link is kept as "
		if i := strings.Index(d.Lost, kept); i >= 0 {
			dropped++
			var n, of int
			if _, err := fmt.Sscanf(d.Lost, "%d of its %d keys differ", &n, &of); err != nil {
				t.Fatalf("no key count in %q: %v", d.Lost, err)
			}
			differ += n
			if _, err := os.Stat(d.Lost[i+len(kept):]); err != nil {
				t.Fatalf("the kept link is not there: %v", err)
			}
		}
	}
	t.Logf("report:\n%s", strings.Join(text, "\n"))
	if !slices.ContainsFunc(s.Recovered(), func(d Damage) bool { return d.File == manifest }) || dropped == 0 {
		t.Fatalf("the report names no MANIFEST or no dropped sstable: %v", text)
	}
	lost := 0
	for i := 0; i < sweepKeys; i++ {
		if _, err := s.Get(ctx, "default", []byte(sweepKey(i)), now); err != nil {
			lost++
		}
	}
	if lost == 0 || lost > differ || differ > lost+2 {
		t.Fatalf("%d keys lost, the report says %d", lost, differ)
	}
}

// TestVerifyNowFindsDamage damages a live sstable under an open store: VerifyNow names it and Stats counts it;
// the background loop runs VerifyNow on its own.
func TestVerifyNowFindsDamage(t *testing.T) {
	dir := t.TempDir()
	s := buildStore(t, dir)
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if d, err := s.VerifyNow(); err != nil || len(d) != 0 {
		t.Fatalf("healthy store: VerifyNow = %v, %v", d, err)
	}
	if st := s.Stats(); st["verify_runs"] != 1 || st["verify_last_files"] == 0 || st["verify_corrupt_files"] != 0 {
		t.Fatalf("stats after a healthy run: %v", st)
	}
	sst := fileKinds[2].pick(listNames(t, dir))
	flipByte(t, filepath.Join(dir, sst), 0)
	d, err := s.VerifyNow()
	if err != nil || len(d) != 1 || d[0].File != sst {
		t.Fatalf("VerifyNow after damaging %s = %v, %v", sst, d, err)
	}
	if st := s.Stats(); st["verify_runs"] != 2 || st["verify_last_corrupt_files"] != 1 ||
		st["verify_corrupt_files"] != 1 || st["verify_last_unix"] == 0 {
		t.Fatalf("stats after finding damage: %v", st)
	}
	flipByte(t, filepath.Join(dir, sst), 0) // repair, so that Close's flush and the cleanup go well
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyLoop: with VerifyInterval set, verification runs in the background and Close stops it.
func TestVerifyLoop(t *testing.T) {
	dir := t.TempDir()
	if err := buildStore(t, dir).Close(); err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	s, err := openWithHook(Options{Dir: dir, CacheBytes: 8 << 20, Logger: quiet, VerifyInterval: 1}, ran)
	if err != nil {
		t.Fatal(err)
	}
	<-ran
	<-ran
	if st := s.Stats(); st["verify_runs"] < 2 || st["verify_last_files"] == 0 {
		t.Fatalf("stats after two background runs: %v", st)
	}
	if err := s.Close(); err != nil { // the loop is blocked telling ran: Close must still end it
		t.Fatal(err)
	}
}

// openWithHook opens a store whose background verification tells ran after each run.
func openWithHook(opts Options, ran chan struct{}) (*Store, error) {
	testVerifyRan = ran
	defer func() { testVerifyRan = nil }()
	return Open(opts)
}

// TestRefusedTwiceForTheSameReason: an Open refused for a damaged sstable after a clean shutdown has already let
// Pebble change the directory; the next Open must name the same sstable, and nothing else (no file the record
// lists that Pebble has since replaced).
func TestRefusedTwiceForTheSameReason(t *testing.T) {
	dir := t.TempDir()
	if err := buildStore(t, dir).Close(); err != nil {
		t.Fatal(err)
	}
	sst := fileKinds[2].pick(listNames(t, dir))
	flipByte(t, filepath.Join(dir, sst), 0)
	for i := 0; i < 2; i++ {
		_, err := Open(Options{Dir: dir, CacheBytes: 8 << 20, Logger: quiet})
		if files := DamagedFiles(err); !slices.Equal(files, []string{sst}) {
			t.Fatalf("Open %d: names %v, want only %s: %v", i+1, files, sst, err)
		}
	}
}
