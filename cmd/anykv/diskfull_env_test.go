package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"anykv/internal/engine/pebblestore/smallfs"
	"anykv/internal/procnet"
	"anykv/internal/servertest"
)

// What the disk-full scenario runs on: a small disk that another program can fill (a real tmpfs, or pebblestore's
// injected in-memory file system), and a server on it (the real binary, or runServer in this process).

// smallDisk is a small file system and another program using it.
type smallDisk interface {
	free() int64                 // free bytes
	fill(n int64)                // the other program writes n bytes (n < 0: until the disk is full)
	release()                    // the other program deletes what it wrote
	exists(dataFile string) bool // whether the file exists in the server's data directory
}

// tmpfsDisk is a real tmpfs mounted for the test.
type tmpfsDisk struct {
	t         *testing.T
	mnt, data string
	filler    string
}

// mountTmpfs mounts a tmpfs of size (mount(8) syntax) on a fresh directory, unmounted when the test ends.
func mountTmpfs(t *testing.T, size string) (*tmpfsDisk, error) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		return nil, errors.New(err.Error() + ": " + string(bytes.TrimSpace(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return &tmpfsDisk{t: t, mnt: dir, data: filepath.Join(dir, "data"), filler: filepath.Join(dir, "filler")}, nil
}

func (d *tmpfsDisk) free() int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.mnt, &st); err != nil {
		d.t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

func (d *tmpfsDisk) fill(n int64) {
	f, err := os.Create(d.filler)
	if err != nil {
		d.t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for wrote := int64(0); n < 0 || wrote < n; {
		chunk := buf
		if n >= 0 {
			chunk = buf[:min(int64(len(buf)), n-wrote)]
		}
		m, err := f.Write(chunk)
		wrote += int64(m)
		if errors.Is(err, syscall.ENOSPC) {
			return
		}
		if err != nil {
			d.t.Fatal(err)
		}
	}
}

func (d *tmpfsDisk) release() {
	if err := os.Remove(d.filler); err != nil {
		d.t.Fatal(err)
	}
}

func (d *tmpfsDisk) exists(name string) bool {
	_, err := os.Stat(filepath.Join(d.data, name))
	return err == nil
}

// injectedDisk is pebblestore's in-memory file system of fixed capacity, failing writes past it with ENOSPC.
type injectedDisk struct{ fs *smallfs.FS }

// injectedData is the data directory on an injectedDisk.
const injectedData = "/data"

func (d injectedDisk) free() int64 {
	u, _ := d.fs.GetDiskUsage(injectedData)
	return int64(u.AvailBytes)
}

func (d injectedDisk) fill(n int64) {
	if n < 0 {
		d.fs.Fill()
		return
	}
	d.fs.Take(n)
}

func (d injectedDisk) release() { d.fs.Release() }

func (d injectedDisk) exists(name string) bool {
	_, err := d.fs.Stat(d.fs.PathJoin(injectedData, name))
	return err == nil
}

// endpoints are a server's listen addresses.
type endpoints struct{ RESP, Memcache, HTTP string }

// diskServer is the server under test; a restart keeps its addresses and data.
type diskServer interface {
	endpoints() endpoints
	stop() int // a graceful stop (SIGTERM); the exit code
	restart()
	pid() int // changes when the server restarts
	output() string
}

// binaryServer is the real binary, run by servertest.
type binaryServer struct{ *servertest.Server }

func (s binaryServer) endpoints() endpoints { return endpoints{s.RESP, s.Memcache, s.HTTP} }
func (s binaryServer) stop() int            { return s.Stop() }
func (s binaryServer) restart()             { s.Restart() }
func (s binaryServer) pid() int             { return s.PID() }
func (s binaryServer) output() string       { return s.Output() }

// inProcServer is runServer in this process, with the pebble engine on an injected file system.
type inProcServer struct {
	t      *testing.T
	args   []string
	disk   injectedDisk
	ep     endpoints
	starts int
	out    *servertest.SyncBuffer
	cancel context.CancelFunc
	done   chan error
	tries  int // first starts retried on other ports
}

func startInProc(t *testing.T, disk injectedDisk, args []string) *inProcServer {
	s := &inProcServer{t: t, args: args, disk: disk,
		ep: endpoints{servertest.FreePort(t), servertest.FreePort(t), servertest.FreePort(t)}}
	s.restart()
	t.Cleanup(func() {
		if s.cancel != nil {
			s.stop()
		}
	})
	return s
}

func (s *inProcServer) endpoints() endpoints { return s.ep }
func (s *inProcServer) pid() int             { return s.starts }
func (s *inProcServer) output() string       { return s.out.String() }

func (s *inProcServer) restart() {
	var c config
	fl := newServeFlags(&c, io.Discard)
	args := append([]string{"--dir", injectedData, "--resp", s.ep.RESP, "--memcache", s.ep.Memcache, "--http", s.ep.HTTP,
		"--log-level", "warn"}, s.args...)
	if err := fl.Parse(args); err != nil {
		s.t.Fatal(err)
	}
	c.fs = s.disk.fs
	s.out = &servertest.SyncBuffer{}
	log, err := newLogger(&c, s.out)
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan error, 1)
	s.starts++
	go func() { s.done <- runServer(ctx, &c, log) }()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", s.ep.RESP, 200*time.Millisecond); err == nil {
			c.Close()
			// The port answers, but it may be another process's that took it (runServer then fails to bind it,
			// after opening the store and the other listeners): it is this server once this process holds it.
			if procnet.Listens(os.Getpid(), s.ep.RESP) {
				return
			}
		}
		select {
		case err := <-s.done:
			cancel()
			if s.starts == 1 && s.tries < 5 && err != nil && strings.Contains(err.Error(), "address already in use") {
				// A port picked free was taken meanwhile by another test's process: pick others (first start
				// only: a restart keeps the addresses its clients know).
				s.tries++
				s.starts--
				s.ep = endpoints{servertest.FreePort(s.t), servertest.FreePort(s.t), servertest.FreePort(s.t)}
				s.restart()
				return
			}
			s.t.Fatalf("the server stopped during start-up: %v\n%s", err, s.out)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the server did not accept connections within 20s:\n%s", s.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *inProcServer) stop() int {
	s.cancel()
	s.cancel = nil
	if err := <-s.done; err != nil {
		s.t.Logf("runServer: %v", err)
		return 1
	}
	return 0
}
