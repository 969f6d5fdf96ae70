package server

import "syscall"

// engineFiles is what the open-file limit keeps for everything but client connections: Pebble's table cache
// (MaxOpenFiles, 1000 by default) and WAL, manifest and lock files, the journal, checkpoints, listeners, the
// connections being refused, and the sync thread's eventfds. With the descriptors all taken by clients, Pebble
// cannot create its next WAL or sstable, and it panics: the server must refuse clients before that point.
const engineFiles = 1300

// minConnections is the least TotalLimit answers, however low the open-file limit (a test under ulimit -n 1024
// still serves some clients; the engine's table cache then shrinks on its own).
const minConnections = 64

// TotalLimit returns the most client connections, over all listeners together, that the process's open-file
// limit leaves room for beside the engine's files (0 when the limit is unknown or unlimited). Go raises the soft
// limit to the hard one at start, as Redis does.
func TotalLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == ^uint64(0) || rl.Cur > 1<<30 {
		return 0
	}
	return max(int(rl.Cur)-engineFiles, minConnections)
}
