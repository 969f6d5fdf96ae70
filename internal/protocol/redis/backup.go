package redis

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Online backups: SAVE, BGSAVE and LASTSAVE as Redis names them, and BACKUP <dir>, anykv's own, which writes a
// consistent copy of the data into a directory the caller names (what `anykv backup` sends). A copy holds every
// write acknowledged before it began; writes go on meanwhile and nothing forks (Options.Backup, e.g. a Pebble
// checkpoint).
func init() {
	register(
		&command{name: "save", arity: 1, flags: flagAdmin, imm: cmdSave, summary: "Synchronously saves the database(s) to disk."},
		&command{name: "bgsave", arity: -1, flags: flagAdmin, imm: cmdBgsave, summary: "Asynchronously saves the database(s) to disk."},
		&command{name: "lastsave", arity: 1, flags: flagFast, imm: cmdLastsave, summary: "Returns the Unix timestamp of the last successful save to disk."},
		&command{name: "backup", arity: 2, flags: flagAdmin, imm: cmdBackup, groupName: "server",
			summary: "Writes a consistent copy of the data into a new directory (anykv)."},
	)
}

// saves tracks the handler's backups for LASTSAVE, BGSAVE and INFO.
type saves struct {
	mu      sync.Mutex
	last    time.Time // of the last successful backup; the server's start before the first
	running bool
	failed  bool // the last backup failed
}

// run takes one backup into dest and records its outcome.
func (h *Handler) backupTo(dest string) error {
	if h.opts.Backup == nil {
		return fmt.Errorf("backups are not supported by this engine (%s)", h.opts.Settings["engine"])
	}
	err := h.opts.Backup(context.Background(), dest)
	h.saves.mu.Lock()
	defer h.saves.mu.Unlock()
	h.saves.failed = err != nil
	if err == nil {
		h.saves.last = time.Now()
		h.log.Info("backup written", "dir", dest)
	} else {
		h.log.Error("backup failed", "dir", dest, "err", err)
	}
	return err
}

// defaultDest names a directory for SAVE and BGSAVE under Options.BackupDir.
func (h *Handler) defaultDest(kind string) string {
	return filepath.Join(h.opts.BackupDir, kind+"-"+time.Now().UTC().Format("20060102T150405.000000000Z"))
}

func cmdSave(s *session, args [][]byte) {
	if err := s.h.backupTo(s.h.defaultDest("save")); err != nil {
		s.w.Error("ERR " + err.Error())
		return
	}
	s.w.SimpleString("OK")
}

func cmdBgsave(s *session, args [][]byte) {
	if len(args) > 2 || len(args) == 2 && !eq(args[1], "schedule") {
		s.w.Error(errSyntax)
		return
	}
	h := s.h
	if h.opts.Backup == nil {
		s.w.Error("ERR backups are not supported by this engine (" + h.opts.Settings["engine"] + ")")
		return
	}
	h.saves.mu.Lock()
	if h.saves.running {
		h.saves.mu.Unlock()
		s.w.Error("ERR Background save already in progress")
		return
	}
	h.saves.running = true
	h.saves.mu.Unlock()
	go func() {
		h.backupTo(h.defaultDest("bgsave"))
		h.saves.mu.Lock()
		h.saves.running = false
		h.saves.mu.Unlock()
	}()
	s.w.SimpleString("Background saving started")
}

func cmdLastsave(s *session, args [][]byte) {
	s.h.saves.mu.Lock()
	last := s.h.saves.last
	s.h.saves.mu.Unlock()
	if last.IsZero() {
		last = s.h.started
	}
	s.w.Int(last.Unix())
}

func cmdBackup(s *session, args [][]byte) {
	dest := string(args[1])
	if !filepath.IsAbs(dest) {
		s.w.Error("ERR BACKUP needs an absolute directory path (the server's working directory is not the client's)")
		return
	}
	// Writing files where a client names is the server's file system opened to it (Redis keeps `dir` a
	// protected config for that reason): a client on another host may write only under the backup directory,
	// and so may a local one unless it runs as a user with a password (the default user's is --requirepass); without a password any local user could have the
	// server create directories of files, their contents chosen by SET, wherever its user may write.
	if !within(dest, s.h.opts.BackupDir) {
		if !loopbackConn(s.conn) {
			s.w.Error("ERR BACKUP from another host writes only under the server's backup directory (--backup-dir " +
				s.h.opts.BackupDir + "); a client on the server's own host that gave the password may name any directory")
			return
		}
		if u := s.user; u == nil || u.get().nopass { // a user without a password: any local user may be it
			s.w.Error("ERR BACKUP without a password writes only under the server's backup directory (--backup-dir " +
				s.h.opts.BackupDir + "); with --requirepass, a client on the server's own host may name any directory")
			return
		}
	}
	if err := s.h.backupTo(dest); err != nil {
		s.w.Error("ERR " + err.Error())
		return
	}
	s.w.SimpleString("OK")
}

// saveInfo is INFO persistence's backup fields, as Redis names them for its RDB saves.
func (h *Handler) saveInfo() [][2]string {
	h.saves.mu.Lock()
	defer h.saves.mu.Unlock()
	last, status, running := h.saves.last, "ok", "0"
	if last.IsZero() {
		last = h.started
	}
	if h.saves.failed {
		status = "err"
	}
	if h.saves.running {
		running = "1"
	}
	return [][2]string{{"rdb_bgsave_in_progress", running}, {"rdb_last_save_time", strconv.FormatInt(last.Unix(), 10)},
		{"rdb_last_bgsave_status", status}}
}

// loopbackConn reports whether c comes from this host (a loopback address or a Unix socket).
func loopbackConn(c net.Conn) bool {
	if c == nil {
		return false
	}
	switch a := c.RemoteAddr().(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	return false
}

// within reports whether path lies inside dir (both absolute and cleaned; dir "" holds nothing).
func within(path, dir string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(path))
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../")
}
