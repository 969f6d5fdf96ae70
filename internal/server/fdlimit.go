package server

import "syscall"

// engineFiles is what the open-file limit keeps for everything but client connections: Pebble's table cache
// (MaxOpenFiles, 1000 by default) and WAL, manifest and lock files, the journal, checkpoints, listeners, the
// connections being refused, and the sync thread's eventfds. With the descriptors all taken by clients, Pebble
// cannot create its next WAL or sstable, and it panics: the server must refuse clients before that point.
const engineFiles = 1300

// minConnections is the least TotalLimit answers, however low the open-file limit: under ulimit -n 1024 the
// server still serves some clients, and a store with several hundred sstables may then run short of descriptors
// (Pebble's table cache keeps up to 1,000 open); raise the limit for such stores.
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
