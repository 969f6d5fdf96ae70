package pebblestore

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// gateFS wraps a vfs.FS to watch and steer the syncs of Pebble's WAL files (*.log): it counts them, can delay
// each by a fixed time (a slow disk), and can hold them until released.
type gateFS struct {
	vfs.FS
	syncs atomic.Int64
	delay time.Duration

	mu      sync.Mutex
	cond    *sync.Cond
	held    bool
	waiting int // syncs blocked by hold

	fail atomic.Pointer[error] // the error every WAL sync returns, while set
}

func newGateFS(fs vfs.FS) *gateFS {
	g := &gateFS{FS: fs}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// hold makes WAL syncs block until release.
func (g *gateFS) hold() {
	g.mu.Lock()
	g.held = true
	g.mu.Unlock()
}

func (g *gateFS) release() {
	g.mu.Lock()
	g.held = false
	g.cond.Broadcast()
	g.mu.Unlock()
}

// blocked reports how many WAL syncs are waiting for release.
func (g *gateFS) blocked() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting
}

func (g *gateFS) gate() error {
	g.syncs.Add(1)
	if g.delay > 0 {
		time.Sleep(g.delay)
	}
	g.mu.Lock()
	for g.held {
		g.waiting++
		g.cond.Wait()
		g.waiting--
	}
	g.mu.Unlock()
	if p := g.fail.Load(); p != nil {
		return *p
	}
	return nil
}

func (g *gateFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &gateFile{File: f, g: g}, nil
}

func (g *gateFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := g.FS.Create(name, c)
	return g.wrap(name, f, err)
}

func (g *gateFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := g.FS.ReuseForWrite(oldname, newname, c)
	return g.wrap(newname, f, err)
}

func (g *gateFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := g.FS.OpenReadWrite(name, c, opts...)
	return g.wrap(name, f, err)
}

func (g *gateFS) Unwrap() vfs.FS { return g.FS }

type gateFile struct {
	vfs.File
	g *gateFS
}

func (f *gateFile) Sync() error {
	if err := f.g.gate(); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *gateFile) SyncData() error {
	if err := f.g.gate(); err != nil {
		return err
	}
	return f.File.SyncData()
}

func (f *gateFile) SyncTo(length int64) (bool, error) {
	if err := f.g.gate(); err != nil {
		return false, err
	}
	return f.File.SyncTo(length)
}
