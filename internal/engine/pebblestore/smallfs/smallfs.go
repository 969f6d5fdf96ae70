// Package smallfs is an in-memory file system of a fixed capacity for disk-full tests: writes past it fail
// with ENOSPC, and another program's use of the disk can be simulated.
package smallfs

import (
	"os"
	"sync"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// FS is an in-memory file system of a fixed capacity: writes past it fail with ENOSPC (after writing what fits,
// as write(2) does), and GetDiskUsage reports what is left. other is space taken by other programs.
type FS struct {
	vfs.FS
	mu       sync.Mutex
	capacity int64
	used     int64 // bytes written to files still present, plus other
	other    int64
	sizes    map[string]int64
}

// New returns an empty file system of capacity bytes.
func New(capacity int64) *FS {
	return &FS{FS: vfs.NewMem(), capacity: capacity, sizes: map[string]int64{}}
}

// Take makes another program use n more bytes (negative: free them), as far as the capacity allows.
func (fs *FS) Take(n int64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n = max(min(n, fs.capacity-fs.used), -fs.other)
	fs.other += n
	fs.used += n
}

// Fill makes another program take all the free space.
func (fs *FS) Fill() { fs.Take(1 << 62) }

// Release makes the other program delete all it took.
func (fs *FS) Release() { fs.Take(-1 << 62) }

// Grow adds n bytes to the capacity (the volume grows).
func (fs *FS) Grow(n int64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.capacity += n
}

func (fs *FS) GetDiskUsage(string) (vfs.DiskUsage, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return vfs.DiskUsage{AvailBytes: uint64(fs.capacity - fs.used), TotalBytes: uint64(fs.capacity),
		UsedBytes: uint64(fs.used)}, nil
}

func (fs *FS) forget(name string) {
	fs.used -= fs.sizes[name]
	delete(fs.sizes, name)
}

func (fs *FS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err != nil {
		return nil, err
	}
	fs.mu.Lock()
	fs.forget(name)
	fs.mu.Unlock()
	return &file{File: f, fs: fs, name: name}, nil
}

func (fs *FS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, c)
	if err != nil {
		return nil, err
	}
	fs.mu.Lock()
	fs.forget(oldname)
	fs.mu.Unlock()
	return &file{File: f, fs: fs, name: newname}, nil
}

func (fs *FS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, c, opts...)
	if err != nil {
		return nil, err
	}
	return &file{File: f, fs: fs, name: name}, nil
}

func (fs *FS) Remove(name string) error {
	if err := fs.FS.Remove(name); err != nil {
		return err
	}
	fs.mu.Lock()
	fs.forget(name)
	fs.mu.Unlock()
	return nil
}

func (fs *FS) Rename(oldname, newname string) error {
	if err := fs.FS.Rename(oldname, newname); err != nil {
		return err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := fs.sizes[oldname]
	delete(fs.sizes, oldname)
	fs.forget(newname)
	fs.sizes[newname] = n
	fs.used += n
	return nil
}

// file counts every byte written as used (an overwrite too: an approximation on the safe side).
type file struct {
	vfs.File
	fs   *FS
	name string
}

// room reserves up to n bytes and returns how many it got.
func (f *file) room(n int) int {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	n = int(min(int64(n), f.fs.capacity-f.fs.used))
	f.fs.used += int64(n)
	f.fs.sizes[f.name] += int64(n)
	return n
}

func (f *file) Write(p []byte) (int, error) {
	if n := f.room(len(p)); n < len(p) {
		m, err := f.File.Write(p[:n])
		if err == nil {
			err = &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
		}
		return m, err
	}
	return f.File.Write(p)
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	if n := f.room(len(p)); n < len(p) {
		m, err := f.File.WriteAt(p[:n], off)
		if err == nil {
			err = &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
		}
		return m, err
	}
	return f.File.WriteAt(p, off)
}
