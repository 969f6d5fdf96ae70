// Package pebblestore is anykv's default, durable engine: items live in a Pebble LSM tree (CockroachDB's
// RocksDB-style store), writes go through one writer goroutine that commits concurrent batches together (group
// commit, one WAL fsync per group), and reads never return a write that a crash could still erase.
//
// See docs/durability.md for what each SyncMode promises and for the argument behind the visibility guard.
package pebblestore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
)

// SyncMode says when committed writes reach stable storage.
type SyncMode int

const (
	// SyncAlways fsyncs the WAL before Apply returns (concurrent Applies share one fsync). Nothing acknowledged
	// is lost, and no reader sees a write before it is durable. The default.
	SyncAlways SyncMode = iota
	// SyncInterval fsyncs the WAL at most once a second in the background. A power loss or OS crash can lose up
	// to about a second of acknowledged writes; a process crash loses none (each group is journaled with a
	// write(2) before it is answered: journal.go).
	SyncInterval
	// SyncNever leaves syncing to the OS and to Pebble's own file rotation. A crash can lose recent writes.
	SyncNever
)

// String names the mode as configuration files spell it.
func (m SyncMode) String() string {
	switch m {
	case SyncAlways:
		return "always"
	case SyncInterval:
		return "interval"
	case SyncNever:
		return "never"
	}
	return fmt.Sprintf("SyncMode(%d)", int(m))
}

// Defaults of Options and the Pebble tuning. The workload is small items, point reads and writes, on a small
// machine (2 cores, 24 GiB): a large block cache serves reads, and bloom filters on every level (L0 included)
// spare most disk reads for absent keys. The memtable is 4 MiB: every write is a skiplist insertion whose cost
// grows with the memtable (a third of a durable SET's CPU at 16 MiB), and SET at pipeline 16 ran 20% faster
// with 4 than with 16 (docs/benchmarks.md), more frequent flushes included.
const (
	DefaultCacheBytes = 256 << 20
	memTableSize      = 4 << 20
	bloomBitsPerKey   = 10 // ~1% false positives
)

// syncInterval is the background fsync period of SyncInterval (a variable for tests that must see groups only
// in the journal, never in a synced WAL).
var syncInterval = time.Second

// Options configures Open.
type Options struct {
	// Dir is the directory of the store; it is created if missing.
	Dir string
	// Sync selects the durability of Apply; the zero value is SyncAlways.
	Sync SyncMode
	// CacheBytes sizes Pebble's block cache; 0 means DefaultCacheBytes.
	CacheBytes int64
	// FS is the file system Pebble uses; nil means the real disk. Tests pass vfs.NewCrashableMem().
	FS vfs.FS
	// Logger receives Pebble's messages and background errors; nil means slog.Default().
	Logger *slog.Logger
	// MinFreeSpace is the free-space reserve below which writes are refused (space.go); the zero value keeps
	// none, and a full disk then blocks writes until space returns.
	MinFreeSpace MinFree
	// Recover opens a damaged store anyway (Open fails with a DamageError otherwise) and reports what was
	// dropped (Store.Recovered); see opencheck.go.
	Recover bool
	// WriterCacheBytes bounds the items the writer keeps in memory to resolve writes without reading Pebble
	// (itemcache.go); 0 means DefaultWriterCacheBytes, a negative value turns it off.
	WriterCacheBytes int64
	// SkipOpenVerify skips checking every sstable block's checksum at Open (see verify.go for the cost).
	SkipOpenVerify bool
	// VerifyInterval is the period of the background sstable verification; 0 disables it.
	VerifyInterval time.Duration

	spacePoll time.Duration // the free-space poller's period; 0 means defaultSpacePoll (tests shorten it)
	// maxInFlight, for tests, bounds the groups committed but not yet durable (0: the default; 1: the writer waits
	// for each group's fsync before it takes more requests, as before pipelined commits).
	maxInFlight int
	// versionReserve, for tests, replaces the const versionReserve (0: the default), so that a short run raises
	// the version record many times.
	versionReserve uint64
	// memberFilterBytes, for tests, replaces DefaultMemberFilterBytes (0: the default), so that a short run
	// passes the bound.
	memberFilterBytes int64
	// tune, for tests, adjusts Pebble's options (no automatic compactions, for a MANIFEST that ends as expected).
	tune func(*pebble.Options)
}

// Store is the Pebble engine. Create it with Open; all methods are safe for concurrent use.
type Store struct {
	db   *pebble.DB
	lock *pebble.Lock // the directory's lock: no other process opens the store until Close wrote its record
	opts Options
	log  *slog.Logger

	// queue carries Apply and Sweep requests to the writer goroutine (see writer.go).
	queue      chan *request
	writerDone chan struct{}
	// inflight is the set of groups committed whose WAL sync has not returned yet (SyncAlways only), oldest
	// first; never nil. Readers consult it after reading Pebble; see guard.go and flight.go.
	inflight atomic.Pointer[[]*group]
	flightMu sync.Mutex // serialises replacing inflight
	// failed is the sticky error of a failed commit: the store then refuses further writes.
	failed atomic.Pointer[error]
	// space refuses writes while the disk is (nearly) full, without making it sticky (space.go).
	space *space
	yield yielder // counts L0's tables for the parks of flushes and compactions (yield.go)

	// active counts operations in progress; closing turns new ones away. Close waits for active to reach zero
	// before it stops the writer and closes Pebble, so no operation ever touches a closed DB (Pebble panics).
	// A counter rather than an RWMutex: operations may nest (a Scan callback may call Get) without deadlock.
	active  atomic.Int64
	closing atomic.Bool
	// drained is closed by the exit that brings active to zero once closing is set: Close waits on it.
	drained     chan struct{}
	drainedOnce sync.Once

	tickerStop chan struct{}
	tickerDone chan struct{}
	unsynced   atomic.Bool // SyncInterval: a NoSync commit happened since the last background sync
	journal    *journal    // SyncInterval: what a killed process would lose from Pebble's WAL buffer (journal.go)

	// recovered is the damage an Open with Options.Recover went past; verify* run the sstable verification.
	recovered  []Damage
	verify     verifyStats
	verifyStop chan struct{}
	verifyDone chan struct{}
	verifyRan  chan struct{} // tests: told after each background run

	sweepMu     sync.Mutex
	sweepCursor []byte // Pebble key where the next Sweep resumes; nil means the start
	// expiring counts the writes of items with an expiry, each added once its group is visible to iterators. A
	// sweep pass that met no item with an expiry leaves the sweeper quiet until the count moves past what it was
	// when that pass began: nothing can expire that the pass did not see or that was not written since. A
	// keyspace without TTLs then costs no sweeping (stepping 20,000 items a second over the memtable's many
	// versions took 8% of the core under GET:SET 10:1 at pipeline 16, docs/benchmarks.md).
	expiring    atomic.Uint64
	sweepPassAt uint64 // expiring as the current pass began (sweepMu)
	sweepSawTTL bool   // the current pass met an item with an expiry (sweepMu)
	sweepQuiet  bool   // the last whole pass met none: sweep nothing while expiring == sweepPassAt (sweepMu)

	// The key estimate: sstable entries (cached, see keysEstimate) plus memNet, the net point writes (sets minus
	// deletes) committed since the last memtable flush ended.
	statsMu   sync.Mutex
	sstKeys   int64
	sstKeysAt time.Time
	memNet    atomic.Int64
	// sstStale: a flush ended since sstKeys was counted. An atomic, not statsMu: Pebble calls FlushEnd holding
	// its own lock, which keysEstimate's SSTables takes under statsMu (the two deadlocked).
	sstStale atomic.Bool

	// counters for Stats
	fsyncs        atomic.Int64
	batches       atomic.Int64
	groups        atomic.Int64
	itemCache     *itemCache     // the writer's (nil when off), for Stats
	memberFilters *memberFilters // the writer's (nil when off), for Stats
	maxGroup      atomic.Int64
	guardWaits    atomic.Int64
	rejudged      atomic.Int64 // groups resolved again: an item found alive expired during their resolution
	sweepRemoved  atomic.Int64
	sweepSeen     atomic.Int64  // items sweeps examined
	version       atomic.Uint64 // highest allocated version, mirrored by the writer for Stats
}

var (
	_ engine.Engine      = (*Store)(nil)
	_ engine.Scanner     = (*Store)(nil)
	_ engine.TableLister = (*Store)(nil)
	_ engine.Sweeper     = (*Store)(nil)
	_ engine.Statser     = (*Store)(nil)
)

// Wrapped sentinels, built once so that hot paths do not allocate.
var (
	errClosed = fmt.Errorf("pebblestore: %w", engine.ErrClosed)
)

// Open opens (creating if needed) the store in opts.Dir. It reads only two meta records, never the data, so its
// time does not grow with the number of items; Pebble itself replays the WAL tail not yet flushed to sstables.
func Open(opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, fmt.Errorf("pebblestore: %w: Options.Dir is empty", engine.ErrInvalid)
	}
	if opts.Sync < SyncAlways || opts.Sync > SyncNever {
		return nil, fmt.Errorf("pebblestore: %w: unknown sync mode %d", engine.ErrInvalid, opts.Sync)
	}
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = DefaultCacheBytes
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "pebblestore", "dir", opts.Dir)

	s := &Store{
		opts:       opts,
		log:        log,
		queue:      make(chan *request, queueLen),
		writerDone: make(chan struct{}),
		drained:    make(chan struct{}),
	}
	s.inflight.Store(new([]*group))
	cache := pebble.NewCache(opts.CacheBytes)
	defer cache.Unref() // the DB holds its own reference
	var err error
	if s.space, err = openSpace(opts, log); err != nil {
		return nil, err
	}
	po := &pebble.Options{
		Cache:                       cache,
		FS:                          spaceFS{FS: opts.FS, sp: s.space, y: &s.yield},
		FormatMajorVersion:          pebble.FormatValueSeparation, // newest format of pebble v2.1; explicit on purpose
		MemTableSize:                memTableSize,
		MemTableStopWritesThreshold: 4,
		// A memtable holding a range deletion (a table flush) is flushed within 10 s, so the deleted space can be
		// reclaimed and later reads do not keep paying for the tombstone in the memtable.
		FlushDelayDeleteRange: 10 * time.Second,
		Logger:                pebbleLogger{log},
		EventListener: &pebble.EventListener{
			BackgroundError: func(err error) { s.space.backgroundError(err) },
			WriteStallBegin: func(info pebble.WriteStallBeginInfo) { log.Warn("pebble write stall", "reason", info.Reason) },
			WriteStallEnd:   func() { log.Info("pebble write stall ended") },
			DataCorruption: func(info pebble.DataCorruptionInfo) {
				log.Error("pebble data corruption", "path", info.Path, "err", info.Details)
			},
			FlushEnd: s.flushEnded,
		},
	}
	s.yield.listen(po.EventListener)
	po.Experimental.SpanPolicyFunc = memberTableSpans // spans.go: no sstable holds members and other keys
	if opts.FS == nil {
		po.FS = spaceFS{FS: vfs.Default, sp: s.space, y: &s.yield, osFiles: true}
		po.WithFSDefaults() // Pebble's disk health checks, as with the default file system
	}
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(bloomBitsPerKey)
	}
	if opts.tune != nil {
		opts.tune(po)
	}
	check, err := beforeOpen(opts, s.fs()) // takes the directory lock, held until Close wrote its record
	if err != nil {
		return nil, err
	}
	po.Lock = check.lock
	if err := check.readLive(po); err != nil {
		return nil, check.openFailed(err)
	}
	// On a full disk Pebble's Open would wait for space to flush the memtables it recovers: open read-only.
	po.ReadOnly = s.space.startReadOnly()
	db, err := pebble.Open(opts.Dir, po)
	if err != nil && po.ReadOnly { // a new store: nothing to read, and little to write (the ballast's room)
		s.space.readOnly.Store(false)
		s.space.dropBallast("a new store on a full disk")
		po.ReadOnly = false
		db, err = pebble.Open(opts.Dir, po)
	}
	if err != nil {
		return nil, check.openFailed(err)
	}
	s.yield.l0.Store(db.Metrics().Levels[0].TablesCount)
	version, err := check.afterOpen(db, opts.SkipOpenVerify) // reads the meta records
	fail := func(err error) (*Store, error) {
		_ = db.Close()
		_ = check.lock.Close()
		return nil, err
	}
	if err != nil {
		return fail(err)
	}
	fs := s.fs()
	if po.ReadOnly {
		// Groups a killed process acknowledged may wait in the journal, and a read-only store cannot replay them:
		// serving without them would answer reads with less than was acknowledged.
		if n, err := journalPending(fs, opts.Dir, version); err != nil || n > 0 {
			if err == nil {
				err = fmt.Errorf("pebblestore: %w: %d acknowledged write groups wait in the journal of %s and the disk "+
					"is too full to replay them: free some space and start again", engine.ErrNoSpace, n, opts.Dir)
			}
			return fail(err)
		}
	} else if n, err := replayJournal(db, fs, opts.Dir, version); err != nil {
		return fail(err)
	} else if n > 0 {
		if version, _, err = getUint64(db, metaVersionKey); err != nil {
			return fail(err)
		}
		log.Info("replayed journaled groups a killed process had acknowledged", "groups", n)
	}
	if !po.ReadOnly { // a read-only store writes nothing, so it hands out no version
		floor, _, err := getUint64(db, metaFloorKey) // past what an OS crash under SyncInterval took back
		if err != nil {
			return fail(err)
		}
		if version, err = check.versionAfterRecovery(db, max(version, floor)); err != nil {
			return fail(err)
		}
	}
	if opts.Sync == SyncInterval && !po.ReadOnly {
		if s.journal, err = openJournal(fs, opts.Dir); err != nil {
			return fail(err)
		}
	} else if !po.ReadOnly { // replayed and synced: a journal of an earlier run in interval mode is done with
		if err := removeJournal(fs, opts.Dir); err != nil {
			return fail(err)
		}
	}
	s.recovered = check.report(log)
	s.db, s.lock = db, check.lock
	s.version.Store(version)
	go newWriter(s, version).run()
	s.space.start()
	if opts.Sync == SyncInterval {
		s.tickerStop, s.tickerDone = make(chan struct{}), make(chan struct{})
		go s.syncLoop()
	}
	s.startVerifier()
	return s, nil
}

// readMeta checks the format record (writing it into a new store) and returns the version record: no allocated
// version is above it.
func readMeta(db *pebble.DB) (uint64, error) {
	format, ok, err := getUint64(db, metaFormatKey)
	if err != nil {
		return 0, err
	}
	if !ok {
		// A new store, or one created before its first sync: nothing but the format record to write.
		if err := db.Set(metaFormatKey, beUint64(formatVersion), pebble.Sync); err != nil {
			return 0, fmt.Errorf("pebblestore: write format record: %w", err)
		}
	} else if format != formatVersion {
		return 0, fmt.Errorf("pebblestore: store format %d, this build reads format %d", format, formatVersion)
	}
	version, _, err := getUint64(db, metaVersionKey)
	return version, err
}

// getUint64 reads an 8-byte big-endian meta record.
func getUint64(db *pebble.DB, key []byte) (uint64, bool, error) {
	v, closer, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("pebblestore: read meta %q: %w", key, err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, false, fmt.Errorf("%w: meta %q has %d bytes", errCorrupt, key, len(v))
	}
	var n uint64
	for _, b := range v {
		n = n<<8 | uint64(b)
	}
	return n, true, nil
}

// enter registers an operation; it fails once Close has begun. Every successful enter needs one exit.
func (s *Store) enter() error {
	s.active.Add(1)
	if s.closing.Load() {
		s.exit()
		return errClosed
	}
	return nil
}

func (s *Store) exit() {
	if s.active.Add(-1) == 0 && s.closing.Load() {
		s.drainedOnce.Do(func() { close(s.drained) })
	}
}

// keyBufs recycles the buffers Get encodes keys into.
var keyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 128); return &b }}

// Get implements engine.Engine. It returns only durable writes: see guard.go.
func (s *Store) Get(ctx context.Context, table string, key []byte, now int64) (engine.Item, error) {
	if err := s.enter(); err != nil {
		return engine.Item{}, err
	}
	defer s.exit()
	kb := keyBufs.Get().(*[]byte)
	k := appendKey((*kb)[:0], table, key)
	defer func() { *kb = k; keyBufs.Put(kb) }()

	var it engine.Item
	found, live := false, false
	v, closer, err := s.db.Get(k)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return engine.Item{}, fmt.Errorf("pebblestore: get: %w", err)
	default:
		it, err = decodeValue(v)
		if err == nil {
			found, live = true, it.Live(now)
			if live {
				if err = engine.AdmitValue(ctx, len(it.Value)); err == nil { // room for a big value first
					it.Value = append(make([]byte, 0, len(it.Value)), it.Value...) // the caller owns it
				}
			}
		}
		closer.Close()
		if err != nil {
			return engine.Item{}, err
		}
	}
	if g := s.hiding(k, table, found, it.Version); g != nil {
		if err := s.waitDurable(ctx, g); err != nil {
			return engine.Item{}, err
		}
	}
	if !live {
		return engine.Item{}, engine.ErrNotFound
	}
	return it, nil
}

// Apply implements engine.Engine: the batch joins the writer's next group and Apply returns once that group is
// committed (and, under SyncAlways, fsynced). If ctx ends before the writer takes the batch, nothing is applied
// and ctx's error is returned; once taken, Apply waits for the outcome.
func (s *Store) Apply(ctx context.Context, b *engine.Batch) ([]engine.Result, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.exit()
	if engine.ReadsOnly(b.Muts) {
		if res, ok, err := s.applyReads(ctx, b); ok {
			return res, err
		}
	}
	r := &request{batch: b, done: make(chan struct{})}
	if err := s.submit(ctx, r); err != nil {
		return nil, err
	}
	return r.results, r.err
}

// submit hands r to the writer and waits for its answer.
func (s *Store) submit(ctx context.Context, r *request) error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	if s.space.full.Load() {
		return s.space.refuse()
	}
	r.bytes = r.size() // here, while the batch is surely the caller's: once it gave up, it may reuse the batch
	select {
	case s.queue <- r:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqQueued, reqCancelled) {
			return ctx.Err() // the writer will skip it
		}
		<-r.done // already taken: its outcome is decided, report it
		return nil
	}
}

// syncLoop is SyncInterval's background fsync: at most once per syncInterval, and only after NoSync commits.
func (s *Store) syncLoop() {
	defer close(s.tickerDone)
	t := time.NewTicker(syncInterval)
	defer t.Stop()
	for {
		select {
		case <-s.tickerStop:
			return
		case <-t.C:
			if !s.unsynced.Swap(false) {
				continue
			}
			old := -1
			if s.journal != nil { // nil on a store opened read-only
				old = s.journal.swap()
			}
			if err := s.syncWAL(); err != nil {
				s.log.Error("background WAL sync failed", "err", err)
			} else if old >= 0 {
				if err := s.journal.empty(old); err != nil {
					s.log.Error("emptying the journal failed", "err", err)
				}
			}
		}
	}
}

// syncWAL fsyncs the WAL and everything written before it. An empty LogData record is the cheapest commit that
// carries pebble.Sync: it goes through Pebble's commit pipeline, whose sync covers all earlier WAL records.
func (s *Store) syncWAL() error {
	s.fsyncs.Add(1)
	return s.db.LogData(nil, pebble.Sync)
}

// Close implements engine.Engine: it waits for operations in progress (queued Applies are committed), syncs the
// WAL, flushes the memtable, closes Pebble and writes the clean-shutdown record (cleanshutdown.go). Later calls
// of any method return ErrClosed; a second Close returns nil.
func (s *Store) Close() error {
	if !s.closing.CompareAndSwap(false, true) {
		return nil
	}
	s.stopVerifier()
	if s.active.Load() == 0 {
		s.drainedOnce.Do(func() { close(s.drained) })
	}
	<-s.drained // the last operation in progress closes it
	// No operation is in progress and none can start, so nobody sends on queue any more.
	close(s.queue)
	<-s.writerDone
	if s.tickerStop != nil {
		close(s.tickerStop)
		<-s.tickerDone
	}
	s.space.close()
	var err error
	if s.failed.Load() == nil && s.opts.Sync != SyncAlways && !s.space.readOnly.Load() {
		err = s.syncWAL()
	}
	if s.journal != nil {
		if err == nil { // the WAL holds every journaled group durably now
			err = s.journal.emptyAll()
		}
		s.journal.close()
	}
	clean, ok := s.prepareClean(err)
	s.yield.closing.Store(true) // Pebble's Close waits for the flushes and compactions running: they park no more
	if cerr := s.db.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil && ok {
		err = writeClean(s.fs(), s.opts.Dir, clean.version, clean.entries)
	}
	if lerr := s.lock.Close(); err == nil && lerr != nil {
		err = lerr
	}
	if err != nil {
		return fmt.Errorf("pebblestore: close: %w", err)
	}
	return nil
}

// pebbleLogger adapts slog to Pebble's Logger.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) { p.l.Info(fmt.Sprintf(format, args...)) }

func (p pebbleLogger) Errorf(format string, args ...any) { p.l.Error(fmt.Sprintf(format, args...)) }

// Fatalf logs and panics: Pebble calls it on unrecoverable states and expects it not to return.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, "fatal", true)
	panic("pebblestore: pebble fatal: " + msg)
}
