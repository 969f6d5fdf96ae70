package pebblestore

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
)

// Disk full handling (docs/durability.md, "Disk full"). A reserve of free space is kept: writes that would bring
// the file system's free space below it are refused with engine.ErrNoSpace before they reach Pebble, and reads go
// on. Free space is measured by a poller every second and by the writer after every MiB it admits, never per
// write. Should a write still meet ENOSPC (the reserve raced another process filling the disk), spaceFS removes
// a ballast file kept beside the store and retries, and a WAL or MANIFEST write that still fails waits for space
// instead of failing: Pebble treats those failures as fatal, and retrying a write(2) that returned ENOSPC is safe
// (the kernel accepted none of its bytes). On a disk too full to flush the WAL the store opens read-only, and
// Serving (serving.go) reopens it writable once space returns.

// MinFree is the free-space reserve: writes are refused while the file system's free space is below it.
type MinFree struct {
	// Bytes is an absolute reserve; when 0, Percent of the file system's size is used.
	Bytes int64
	// Percent is a share (0 to 100) of the file system's size.
	Percent float64
}

// DefaultMinFree is the reserve of `anykv serve`: 2% of the file system, which keeps room for a memtable flush
// and a compaction on a disk of a few GiB and still lets a small test file system take writes.
var DefaultMinFree = MinFree{Percent: 2}

// ParseMinFree reads a reserve written as bytes with an optional unit (0, 4096, 500MB, 1GiB; KB/MB/GB/TB are
// powers of 1000, KiB/MiB/GiB/TiB of 1024) or as a percentage of the file system's size (5%).
func ParseMinFree(s string) (MinFree, error) {
	t := strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(t, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f < 0 || f > 100 || math.IsNaN(f) {
			return MinFree{}, fmt.Errorf("%w: free-space reserve %q: a percentage is 0%% to 100%%", engine.ErrInvalid, s)
		}
		return MinFree{Percent: f}, nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
		{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}, {"b", 1}}
	num, mult := strings.ToLower(t), int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return MinFree{}, fmt.Errorf("%w: free-space reserve %q: want bytes (1GiB, 500MB, 0) or a percentage (5%%)", engine.ErrInvalid, s)
	}
	return MinFree{Bytes: n * mult}, nil
}

// String writes the reserve as ParseMinFree reads it.
func (m MinFree) String() string {
	if m.Bytes == 0 && m.Percent > 0 {
		return strconv.FormatFloat(m.Percent, 'f', -1, 64) + "%"
	}
	return strconv.FormatInt(m.Bytes, 10)
}

// of returns the reserve in bytes on a file system of total bytes.
func (m MinFree) of(total uint64) int64 {
	if m.Bytes > 0 {
		return m.Bytes
	}
	return int64(float64(total) * m.Percent / 100)
}

const (
	// defaultSpacePoll is how often the poller measures free space.
	defaultSpacePoll = time.Second
	// measureEvery is how many admitted bytes make the writer measure free space before the next poll.
	measureEvery = 1 << 20
	// maxBallast caps the ballast: enough for Pebble to open (an OPTIONS file, the first WAL blocks) and for a
	// group that raced the reserve, small beside any reserve worth having.
	maxBallast = 4 << 20
	// sstRetry is how long an sstable write that met ENOSPC waits before it fails, which paces Pebble's
	// immediate retries of a failed flush or compaction.
	sstRetry = time.Second
	// spaceRetry is how long a WAL or MANIFEST write that met ENOSPC waits before it tries again.
	spaceRetry = 100 * time.Millisecond
)

// BallastName is the ballast file in the store's directory: min(reserve, 4 MiB) of zeros, deleted to give its
// space to a write that meets a full disk. Pebble ignores files it did not name.
const BallastName = "ANYKV-BALLAST"

// space watches the free space of the store's file system and says whether writes are admitted.
type space struct {
	fs       vfs.FS // unwrapped: the ballast and measures bypass spaceFS
	dir      string
	min      MinFree
	log      *slog.Logger
	every    time.Duration // the poller's period
	stop     chan struct{}
	done     chan struct{}
	measured atomic.Bool  // GetDiskUsage works on this file system
	avail    atomic.Int64 // free bytes at the last measure
	reserve  atomic.Int64 // the reserve in bytes at the last measure
	pending  atomic.Int64 // bytes admitted since the last measure
	full     atomic.Bool  // writes are refused until a measure finds the reserve free again
	armed    atomic.Bool  // Open returned: a WAL or MANIFEST write waits for space rather than fail
	readOnly atomic.Bool  // Pebble is open read-only (opened on a full disk): writes stay refused

	mu      sync.Mutex // serialises measures and ballast work
	ballast string
	// walBytes is the size of the WAL files when the store opened, set before the poller starts.
	walBytes int64

	refused atomic.Int64 // writes refused for lack of space
	enospc  atomic.Int64 // writes that met ENOSPC in the file system
	// bgLogged: a background ENOSPC was logged in this disk-full episode.
	bgLogged atomic.Bool
}

func newSpace(fs vfs.FS, dir string, min MinFree, log *slog.Logger, every time.Duration) *space {
	if every <= 0 {
		every = defaultSpacePoll
	}
	return &space{fs: fs, dir: dir, min: min, log: log, ballast: fs.PathJoin(dir, BallastName),
		every: every, stop: make(chan struct{}), done: make(chan struct{})}
}

// ballastSize is the ballast kept for a reserve of the given bytes (none without a reserve).
func ballastSize(reserve int64) int64 { return min(reserve, maxBallast) }

// openSpace creates the store's directory and measures its disk before Pebble opens it.
func openSpace(opts Options, log *slog.Logger) (*space, error) {
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	if err := fs.MkdirAll(opts.Dir, dirMode); err != nil {
		return nil, fmt.Errorf("pebblestore: create %s: %w", opts.Dir, err)
	}
	sp := newSpace(fs, opts.Dir, opts.MinFreeSpace, log, opts.spacePoll)
	sp.prepareOpen()
	return sp, nil
}

// start arms the WAL's wait for space and starts the poller, once Pebble is open.
func (sp *space) start() {
	sp.armed.Store(true)
	go sp.run()
}

// prepareOpen measures the disk before Pebble opens and writes the ballast if it is missing and fits.
func (sp *space) prepareOpen() {
	sp.measure()
	sp.restoreBallast()
}

// startReadOnly reports whether Pebble must open read-only: the disk's free space is below the reserve plus the
// WAL files, which a writable Open flushes to sstables before it returns.
func (sp *space) startReadOnly() bool {
	sp.walBytes = sp.sizeOf(".log")
	if !sp.measured.Load() || sp.roomy() {
		return false
	}
	sp.readOnly.Store(true)
	// Writes are refused from now on, not only from the poller's first measure: the reserve may be free (the
	// WAL's flush is what lacks room), and admit would pass a write to the read-only Pebble, failing the store.
	sp.full.Store(true)
	sp.log.Warn("disk full: opening the store read-only; reads are served, writes refused until space is freed",
		"free_bytes", sp.avail.Load(), "min_free_bytes", sp.reserve.Load(), "wal_bytes", sp.walBytes)
	return true
}

// roomy reports whether the last measure found room for the reserve and for flushing the WAL files found at
// Open.
func (sp *space) roomy() bool {
	return sp.measured.Load() && sp.avail.Load() >= sp.reserve.Load()+sp.walBytes
}

// sizeOf sums the sizes of the files in the store's directory whose names end in suffix.
func (sp *space) sizeOf(suffix string) int64 {
	names, err := sp.fs.List(sp.dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, name := range names {
		if !strings.HasSuffix(name, suffix) {
			continue
		}
		if fi, err := sp.fs.Stat(sp.fs.PathJoin(sp.dir, name)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// run is the poller: it measures free space every period and restores the ballast once there is room.
func (sp *space) run() {
	defer close(sp.done)
	t := time.NewTicker(sp.every)
	defer t.Stop()
	for {
		select {
		case <-sp.stop:
			return
		case <-t.C:
			sp.measure()
			sp.restoreBallast()
		}
	}
}

// close stops the poller if it was started.
func (sp *space) close() {
	close(sp.stop)
	if sp.armed.Load() {
		<-sp.done
	}
}

// measure reads the file system's free space and turns writes off below the reserve and on again above it.
func (sp *space) measure() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.pending.Store(0) // what is admitted from now on counts against this measure
	u, err := sp.fs.GetDiskUsage(sp.dir)
	if err != nil {
		if sp.measured.Swap(false) || !errors.Is(err, vfs.ErrUnsupported) {
			sp.log.Warn("cannot measure free space: the free-space reserve is not enforced", "err", err)
		}
		return
	}
	sp.measured.Store(true)
	avail, reserve := int64(min(u.AvailBytes, math.MaxInt64)), sp.min.of(u.TotalBytes)
	sp.avail.Store(avail)
	sp.reserve.Store(reserve)
	if avail < reserve || sp.readOnly.Load() {
		if !sp.full.Swap(true) {
			sp.log.Warn("disk full: free space is below --min-free-space; writes are refused, reads still work",
				"free_bytes", avail, "min_free_bytes", reserve)
		}
	} else if sp.full.Swap(false) {
		sp.bgLogged.Store(false)
		sp.log.Warn("free space is above --min-free-space again: writes are accepted", "free_bytes", avail,
			"min_free_bytes", reserve)
	}
}

// admit decides, on the writer goroutine, whether a write of about n bytes may go to Pebble.
func (sp *space) admit(n int64) error {
	if sp.full.Load() {
		return sp.refuse()
	}
	if !sp.measured.Load() {
		return nil
	}
	p := sp.pending.Add(n)
	if p >= measureEvery {
		sp.measure()
		if sp.full.Load() {
			return sp.refuse()
		}
		p = sp.pending.Add(n)
	}
	if sp.avail.Load()-p < sp.reserve.Load() {
		sp.pending.Add(-n)
		return sp.refuse()
	}
	return nil
}

// refuse counts a refused write and returns its error, with the figures of the last measure.
func (sp *space) refuse() error {
	sp.refused.Add(1)
	return fmt.Errorf("pebblestore: %w (%d bytes free, --min-free-space %d bytes)", engine.ErrNoSpace,
		sp.avail.Load(), sp.reserve.Load())
}

// outOfSpace handles a write to file name that failed with ENOSPC and reports whether to try it again. It turns
// writes off. An sstable write fails (Pebble survives a failed flush or compaction); any other write is retried
// once with the ballast's space and then, once the store is open, every spaceRetry until space returns: Pebble
// cannot survive a failed WAL, MANIFEST or marker write.
func (sp *space) outOfSpace(name string, try int) bool {
	sp.enospc.Add(1)
	if !sp.full.Swap(true) {
		sp.log.Warn("disk full: a write failed with ENOSPC; writes are refused, reads still work", "file", name)
	}
	if base := sp.fs.PathBase(name); strings.HasSuffix(base, ".sst") || strings.HasSuffix(base, ".blob") {
		// Pebble retries a failed flush or compaction at once, writing the partial table again: pace it. The
		// ballast is kept for the writes Pebble cannot survive.
		time.Sleep(sstRetry)
		return false
	}
	if try == 0 && sp.dropBallast("a write in flight met a full disk") {
		return true
	}
	if !sp.armed.Load() {
		return false
	}
	if try <= 1 { // the first wait of this write (after the ballast's retry, if there was one)
		sp.log.Warn("a write Pebble cannot survive failing waits for free space", "file", name)
	}
	time.Sleep(spaceRetry) // a retry interval, not synchronisation: only freed space ends the wait
	return true
}

// backgroundError logs an error of Pebble's flushes and compactions; one that is ENOSPC turns writes off (as
// the free space measured now says) and is logged once per disk-full episode (Pebble retries the job until space
// returns). The report comes sstRetry after the write met ENOSPC (outOfSpace paces the job), when space may be
// back and the poller may have turned writes on again: turning them off on that old news refused writes until
// the next poll. Where free space cannot be measured, writes go off as before.
func (sp *space) backgroundError(err error) {
	if !isENOSPC(err) {
		sp.log.Error("pebble background error", "err", err)
		return
	}
	if sp.measured.Load() {
		sp.measure()
		if sp.measured.Load() && !sp.full.Load() {
			sp.log.Info("a flush or compaction failed for lack of space, which has come back since; Pebble retries it",
				"err", err.Error())
			return
		}
	}
	if !sp.full.Swap(true) || !sp.bgLogged.Swap(true) {
		sp.log.Warn("disk full: a flush or compaction failed for lack of space; Pebble retries it, writes are refused",
			"err", err.Error())
	}
}

// dropBallast removes the ballast file if present and reports whether it did.
func (sp *space) dropBallast(why string) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if _, err := sp.fs.Stat(sp.ballast); err != nil {
		return false
	}
	if err := sp.fs.Remove(sp.ballast); err != nil {
		sp.log.Error("cannot remove the ballast file", "path", sp.ballast, "err", err)
		return false
	}
	sp.log.Warn("removed the ballast file to free space", "path", sp.ballast, "why", why)
	return true
}

// restoreBallast writes the ballast again once it fits above the reserve. It runs on the poller (and at Open), the
// ballast's only writer, and writes without sp.mu: measure, which takes it, runs in Pebble's BackgroundError
// callback too, which may hold Pebble's own mutex, and must not wait out megabytes of writes and their fsync. A
// dropBallast meanwhile finds no ballast to drop (the file takes its name only once whole).
func (sp *space) restoreBallast() {
	size := ballastSize(sp.reserve.Load())
	if size <= 0 || !sp.measured.Load() || sp.full.Load() || sp.avail.Load() < sp.reserve.Load()+2*size {
		return
	}
	if _, err := sp.fs.Stat(sp.ballast); err == nil {
		return
	}
	if err := writeZeros(sp.fs, sp.ballast, size); err != nil {
		sp.log.Warn("cannot write the ballast file", "path", sp.ballast, "err", err)
		return
	}
	sp.avail.Add(-size)
}

// writeZeros writes a file of size zero bytes through a temporary name, so a partial file never keeps the name.
func writeZeros(fs vfs.FS, path string, size int64) error {
	tmp := path + ".tmp"
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	for left := size; left > 0 && err == nil; left -= int64(len(buf)) {
		_, err = f.Write(buf[:min(left, int64(len(buf)))])
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, path)
	}
	if err != nil {
		_ = fs.Remove(tmp)
	}
	return err
}

// stats adds the disk figures to Stats: disk_full is 1 while writes are refused.
func (sp *space) stats(m map[string]int64) {
	full := int64(0)
	if sp.full.Load() {
		full = 1
	}
	m["disk_full"] = full
	m["disk_free_bytes"] = sp.avail.Load()
	m["disk_min_free_bytes"] = sp.reserve.Load()
	m["disk_writes_refused"] = sp.refused.Load()
	m["disk_enospc_errors"] = sp.enospc.Load()
}

// isENOSPC reports whether err is the file system's "no space left on device".
func isENOSPC(err error) bool { return errors.Is(err, syscall.ENOSPC) }

// spaceFS is the file system Pebble sees: writes that meet ENOSPC go through space.outOfSpace.
type spaceFS struct {
	vfs.FS
	sp      *space
	y       *yielder // flushes and compactions yield to connections (yield.go)
	osFiles bool     // FS is the operating system's, with nothing between: its WALs may sync on the helper thread
}

func (fs spaceFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return fs.wrap(name, f, err)
}

func (fs spaceFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, c)
	return fs.wrap(newname, f, err)
}

func (fs spaceFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, c, opts...)
	return fs.wrap(name, f, err)
}

// Unwrap returns the file system under the wrapper.
func (fs spaceFS) Unwrap() vfs.FS { return fs.FS }

func (fs spaceFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &spaceFile{File: f, name: name, sp: fs.sp, threadSync: fs.osFiles && strings.HasSuffix(name, ".log"), y: fs.y,
		bulk: strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")}, nil
}

// spaceFile retries Write and WriteAt from the first byte not written when space.outOfSpace says so. Sync is
// not retried: after a failed fsync the kernel may have dropped the dirty pages, so Pebble's fatal error stands.
type spaceFile struct {
	vfs.File
	name       string
	sp         *space
	threadSync bool // a WAL of the OS file system: SyncData runs on the helper thread
	y          *yielder
	bulk       bool      // an sstable or blob file: written by flushes and compactions
	parked     time.Time // when this file's writer last parked (yield.go)
}

func (f *spaceFile) Write(p []byte) (int, error) {
	if f.bulk {
		f.y.yield(&f.parked) // yield.go
	}
	n, err := f.File.Write(p)
	for try := 0; err != nil && isENOSPC(err) && f.sp.outOfSpace(f.name, try); try++ {
		var m int
		m, err = f.File.Write(p[n:])
		n += m
	}
	return n, err
}

func (f *spaceFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	for try := 0; err != nil && isENOSPC(err) && f.sp.outOfSpace(f.name, try); try++ {
		var m int
		m, err = f.File.WriteAt(p[n:], off+int64(n))
		n += m
	}
	return n, err
}

// SyncData syncs a WAL file on the helper thread of syncthread_cgo.go where there is one, so that the P is free
// to run connections during the fsync; every other file, a WAL without the thread and every file of a file
// system given in Options.FS (which may add behaviour of its own to SyncData) sync as the file system does.
func (f *spaceFile) SyncData() error {
	if f.threadSync {
		if fd := f.File.Fd(); fd != vfs.InvalidFd {
			if handled, err := threadSync(fd); handled {
				return err
			}
		}
	}
	return f.File.SyncData()
}
