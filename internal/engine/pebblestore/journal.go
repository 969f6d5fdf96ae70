package pebblestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	iofs "io/fs"
	"math"
	"sort"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// The journal is SyncInterval's guard against a process crash (SIGKILL, OOM kill, panic). Pebble does not
// write(2) a commit without a sync: it keeps the record in its in-process WAL buffer until a block fills or a sync
// is asked for (or its flush loop, still busy with earlier work, picks it up), so a killed process loses
// acknowledged writes that Redis's appendfsync everysec, the model of this mode, would keep. So after each group commits, the writer also appends the group's Pebble batch to a
// journal file with one write(2) and no fsync, before answering: from then on the OS holds it, and only a power
// loss or OS crash can take it (about a second of writes, as documented).
//
// Two files take turns. Once a second the background sync swaps them, fsyncs the WAL (which covers every group
// committed before the swap, so every record of the file swapped out) and empties that file. Open replays the
// records of groups Pebble did not recover: each record carries its group's version, every group has its own
// (the writer allocates one for a group that allocated none), and the version record Pebble recovered names the
// last group it has. The batches hold only resolved puts and deletes, so replaying them in version order after
// the recovered prefix rebuilds exactly the acknowledged state.
type journal struct {
	fs    vfs.FS
	names [2]string
	mu    sync.Mutex
	files [2]vfs.File
	cur   int // index of the file appends go to
	hdr   [journalHeader]byte
	// failed is the index of the file an append failed on (-1: none): it may end in part of a record, behind
	// which later records could not be read back, until reset empties it. broken: it could not be emptied, and
	// appends fail from then on (each group's WAL is synced instead).
	failed int
	broken bool
	// magic says which files start with their magic: one that was emptied while the disk was full may not, and
	// takes no appends until it is emptied again (records in it would be read in the old format, as garbage).
	magic [2]bool
}

const journalPrefix = "ANYKV-JOURNAL-"

// The file format. A file starts with journalMagic; each record is a header of journalHeader bytes (the batch's
// length, a CRC-32C of the version and the batch, the version, and a CRC-32C of those 16 bytes) and the batch.
// The header's own checksum tells a record cut short by a kill (its header is whole and checks out, its batch
// reaches past the end) from a damaged length that makes a whole record look cut short, which would have hidden
// every later group. Files without the magic are of the format before it (a 16-byte header without its own
// checksum), as an earlier build killed in interval mode left them: they are read as before.
const (
	journalMagic     = "ANYKVJ2\n"
	journalHeader    = 20
	journalOldHeader = 16
)

func journalNames(fs vfs.FS, dir string) [2]string {
	return [2]string{fs.PathJoin(dir, journalPrefix+"A"), fs.PathJoin(dir, journalPrefix+"B")}
}

// openJournal creates (emptying) both journal files.
func openJournal(fs vfs.FS, dir string) (*journal, error) {
	j := &journal{fs: fs, names: journalNames(fs, dir), failed: -1}
	for i, n := range j.names {
		f, err := fs.Create(n, vfs.WriteCategoryUnspecified)
		if err != nil {
			j.close()
			return nil, fmt.Errorf("pebblestore: journal: %w", err)
		}
		j.files[i] = f
		if err := writeMagic(f); err != nil {
			j.close()
			return nil, err
		}
		j.magic[i] = true
	}
	return j, nil
}

// writeMagic starts an empty journal file.
func writeMagic(f vfs.File) error {
	if _, err := f.Write([]byte(journalMagic)); err != nil {
		return fmt.Errorf("pebblestore: journal: %w", err)
	}
	return nil
}

// append writes one group's batch: a header and the batch, in one write.
func (j *journal) append(version uint64, repr []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken || j.failed >= 0 || !j.magic[j.cur] {
		return errJournalUnusable
	}
	binary.LittleEndian.PutUint32(j.hdr[0:4], uint32(len(repr)))
	binary.LittleEndian.PutUint64(j.hdr[8:16], version)
	crc := crc32.Update(crc32.Checksum(j.hdr[8:16], castagnoli), castagnoli, repr)
	binary.LittleEndian.PutUint32(j.hdr[4:8], crc)
	binary.LittleEndian.PutUint32(j.hdr[16:20], crc32.Checksum(j.hdr[0:16], castagnoli))
	rec := make([]byte, 0, len(j.hdr)+len(repr))
	rec = append(append(rec, j.hdr[:]...), repr...)
	if _, err := j.files[j.cur].Write(rec); err != nil {
		j.failed = j.cur // a short write (a full disk) leaves part of the record
		return fmt.Errorf("pebblestore: journal: %w", err)
	}
	return nil
}

// errJournalUnusable is append's error while the file of a failed append waits for reset, or for good once one
// could not be emptied: the writer syncs the WAL instead.
var errJournalUnusable = errors.New("pebblestore: journal: unusable after a failed append")

// reset empties the file an append failed on, once the WAL holds every committed group durably (the writer
// synced it): its records are redundant then, and the part of a record it may end in would hide every record
// appended after it from Open's replay (readJournal stops there), losing them to a kill. Appends go on after it.
func (j *journal) reset() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failed < 0 || j.broken {
		return nil
	}
	emptied, err := j.recreate(j.failed)
	if !emptied {
		j.broken = true
		return err
	}
	j.failed = -1 // emptied: without its magic (err) it takes no appends until emptied again
	return err
}

// recreate empties file i by creating it anew in place of the open one, and writes its magic; emptied reports
// whether the old file was replaced (err may then say the magic is missing: magic[i] is false). j.mu is held.
func (j *journal) recreate(i int) (emptied bool, err error) {
	f, err := j.fs.Create(j.names[i], vfs.WriteCategoryUnspecified)
	if err != nil {
		return false, fmt.Errorf("pebblestore: journal: %w", err)
	}
	j.files[i].Close()
	j.files[i] = f
	err = writeMagic(f)
	j.magic[i] = err == nil
	return true, err
}

// swap sends later appends to the other file and returns the index of the one they went to until now.
func (j *journal) swap() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	old := j.cur
	j.cur = 1 - j.cur
	return old
}

// empty truncates file i, whose records the WAL now holds durably.
func (j *journal) empty(i int) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if i == j.cur {
		return nil // swapped back meanwhile: its records may be new
	}
	emptied, err := j.recreate(i)
	if emptied && i == j.failed { // emptied after the WAL sync: as reset would have
		j.failed, j.broken = -1, false
	}
	return err
}

// emptyAll truncates both files, once the writer stopped and the WAL holds every group durably (Close): a file
// left holding records would be replayed, and checked for damage, at every later Open.
func (j *journal) emptyAll() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i := range j.files {
		if _, err := j.recreate(i); err != nil {
			return err
		}
	}
	return nil
}

// removeJournal deletes the journal files of a store opened in a mode without one, after their groups were
// replayed and synced (or were in the WAL already).
func removeJournal(fs vfs.FS, dir string) error {
	for _, name := range journalNames(fs, dir) {
		if err := fs.Remove(name); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return fmt.Errorf("pebblestore: remove journal: %w", err)
		}
	}
	return nil
}

func (j *journal) close() {
	for _, f := range j.files {
		if f != nil {
			f.Close()
		}
	}
}

// journalRecord is one group read back from a journal file.
type journalRecord struct {
	version uint64
	repr    []byte
}

// readJournal returns the whole records of a journal file in order; a torn or corrupt record ends the file (the
// writer died while appending it, before answering). A missing file has no records.
func readJournal(fs vfs.FS, name string) ([]journalRecord, error) {
	recs, _, err := readJournalChecked(fs, name)
	return recs, err
}

// readJournalChecked is readJournal, also saying where the records end at one that is damaged (see
// journalDamage) rather than at a torn one or the end: its byte offset, -1 when none is.
func readJournalChecked(fs vfs.FS, name string) (_ []journalRecord, damagedAt int, _ error) {
	f, err := fs.Open(name)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, -1, nil // no journal: a store never run in interval mode
	}
	if err != nil {
		return nil, -1, fmt.Errorf("pebblestore: open journal %s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, -1, fmt.Errorf("pebblestore: read journal %s: %w", name, err)
	}
	if len(data) < len(journalMagic) || string(data[:len(journalMagic)]) != journalMagic {
		recs, damagedAt := parseOldJournal(data)
		return recs, damagedAt, nil
	}
	var out []journalRecord
	for off := len(journalMagic); ; {
		data := data[off:]
		if len(data) < journalHeader {
			return out, -1, nil
		}
		if crc32.Checksum(data[0:16], castagnoli) != binary.LittleEndian.Uint32(data[16:20]) {
			// A kill leaves a prefix of the record, whose header is then whole and right or shorter than a
			// header; a power loss may leave the tail of a file the OS had not written back as zeros.
			if allZero(data) {
				return out, -1, nil
			}
			return out, off, nil
		}
		n := int(binary.LittleEndian.Uint32(data[0:4]))
		if n > len(data)-journalHeader {
			return out, -1, nil // cut short by a kill: its group was never answered
		}
		body := data[journalHeader : journalHeader+n]
		if crc32.Update(crc32.Checksum(data[8:16], castagnoli), castagnoli, body) != binary.LittleEndian.Uint32(data[4:8]) {
			return out, off, nil
		}
		out = append(out, journalRecord{version: binary.LittleEndian.Uint64(data[8:16]), repr: body})
		off += journalHeader + n
	}
}

// parseOldJournal reads a file of the format before journalMagic; it cannot tell a damaged length from a torn
// record.
func parseOldJournal(data []byte) (out []journalRecord, damagedAt int) {
	for off := 0; len(data) >= journalOldHeader; {
		n := int(binary.LittleEndian.Uint32(data[0:4]))
		if n > len(data)-journalOldHeader {
			break
		}
		crc := crc32.Update(crc32.Checksum(data[8:16], castagnoli), castagnoli, data[16:16+n])
		if crc != binary.LittleEndian.Uint32(data[4:8]) {
			return out, off
		}
		out = append(out, journalRecord{version: binary.LittleEndian.Uint64(data[8:16]), repr: data[16 : 16+n]})
		data = data[16+n:]
		off += 16 + n
	}
	return out, -1
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// journalDamage reports a journal file whose records stop at one that is whole but fails its checksum: a kill
// cuts a record short (one write(2), answered after it), so a whole record that does not check out is damage,
// and the acknowledged groups from it on, not yet in the WAL, would be lost without a word (readJournal stops
// there). Open refuses such a store, unless Recover, which replays the records before it.
func journalDamage(fs vfs.FS, dir string) ([]Damage, error) {
	var damage []Damage
	for _, name := range journalNames(fs, dir) {
		recs, off, err := readJournalChecked(fs, name)
		if err != nil {
			return nil, err
		}
		if off < 0 {
			continue
		}
		damage = append(damage, Damage{File: fs.PathBase(name), Problem: fmt.Sprintf(
			"journal record %d (at byte %d) fails its checksum", len(recs)+1, off),
			Lost: "the acknowledged writes of the groups journaled from it on, unless the WAL holds them (interval mode); --recover replays the groups before it"})
	}
	return damage, nil
}

// journalPending counts the journaled groups newer than recovered.
func journalPending(fs vfs.FS, dir string, recovered uint64) (int, error) {
	n := 0
	for _, name := range journalNames(fs, dir) {
		recs, err := readJournal(fs, name)
		if err != nil {
			return 0, err
		}
		for _, r := range recs {
			if r.version > recovered {
				n++
			}
		}
	}
	return n, nil
}

// replayJournal applies, in version order, the journaled groups newer than recovered (the version record Pebble
// recovered), makes them durable, and returns how many it applied.
func replayJournal(db *pebble.DB, fs vfs.FS, dir string, recovered uint64) (int, error) {
	var recs []journalRecord
	limit := uint64(math.MaxUint64) // past a damaged record (Recover), nothing newer: the replay stays a prefix
	for _, n := range journalNames(fs, dir) {
		r, damagedAt, err := readJournalChecked(fs, n)
		if err != nil {
			return 0, err
		}
		if damagedAt >= 0 {
			last := recovered // none of its records is whole: what its groups were is unknown, so none newer
			if len(r) > 0 {
				last = r[len(r)-1].version
			}
			limit = min(limit, last)
		}
		recs = append(recs, r...)
	}
	sort.Slice(recs, func(a, b int) bool { return recs[a].version < recs[b].version })
	applied := 0
	for _, r := range recs {
		if r.version <= recovered || r.version > limit {
			continue
		}
		b := db.NewBatch()
		if err := b.SetRepr(append([]byte(nil), r.repr...)); err != nil {
			return applied, fmt.Errorf("pebblestore: journal record of version %d: %w", r.version, err)
		}
		if err := db.Apply(b, pebble.NoSync); err != nil {
			return applied, fmt.Errorf("pebblestore: replay journal: %w", err)
		}
		b.Close()
		recovered = r.version
		applied++
	}
	if applied > 0 {
		if err := db.LogData(nil, pebble.Sync); err != nil {
			return applied, fmt.Errorf("pebblestore: replay journal: %w", err)
		}
	}
	return applied, nil
}
