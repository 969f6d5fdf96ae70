//go:build linux && cgo

package pebblestore

// The WAL's fdatasync on a thread of its own. A goroutine in a system call keeps its P (Go's right to run Go code)
// until sysmon takes it back, at least 20 µs later; with GOMAXPROCS=1 and a fsync per commit group, several
// thousand times a second, that left the core idle 12% of the time under durable writes with connections ready
// to run (docs/benchmarks.md). Here the fsync runs on a pthread the Go scheduler does not know, and the goroutine
// that asked for it parks on an eventfd in the netpoller, which frees the P at once.

/*
#include <pthread.h>
#include <unistd.h>
#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>

static int req_efd = -1, done_efd = -1;
static int req_fd, req_err;
static uint64_t synced; // fdatasyncs that succeeded, for tests

static void* sync_loop(void* arg) {
	uint64_t v;
	for (;;) {
		if (read(req_efd, &v, 8) != 8) continue;
		int fd = __atomic_load_n(&req_fd, __ATOMIC_SEQ_CST);
		int err = fdatasync(fd) == 0 ? 0 : errno;
		if (err == 0) __atomic_add_fetch(&synced, 1, __ATOMIC_SEQ_CST);
		__atomic_store_n(&req_err, err, __ATOMIC_SEQ_CST);
		v = 1;
		while (write(done_efd, &v, 8) != 8) {}
	}
	return 0;
}

static int start_sync_thread(void) {
	req_efd = eventfd(0, EFD_CLOEXEC);
	done_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_t t;
	if (req_efd < 0 || done_efd < 0 || pthread_create(&t, 0, sync_loop, 0) != 0) {
		if (req_efd >= 0) close(req_efd);
		if (done_efd >= 0) close(done_efd);
		return -1;
	}
	pthread_detach(t);
	return done_efd;
}

static void request_sync(int fd) {
	__atomic_store_n(&req_fd, fd, __ATOMIC_SEQ_CST);
	uint64_t v = 1;
	while (write(req_efd, &v, 8) != 8) {}
}

static int sync_result(void) { return __atomic_load_n(&req_err, __ATOMIC_SEQ_CST); }

static uint64_t sync_count(void) { return __atomic_load_n(&synced, __ATOMIC_SEQ_CST); }
*/
import "C"

import (
	"os"
	"sync"
	"syscall"
)

// syncThread is the one helper thread: it serves one fdatasync at a time (mu), which is what Pebble asks of a WAL.
var syncThread struct {
	once   sync.Once
	mu     sync.Mutex
	done   *os.File // the eventfd the thread signals, read through the netpoller
	broken bool     // a wait for the thread failed: its replies can no longer be matched to requests
}

// threadSync runs fdatasync(fd) on the helper thread and parks the calling goroutine until it returned;
// handled is false when the thread could not be started (the caller syncs as usual).
func threadSync(fd uintptr) (handled bool, err error) {
	st := &syncThread
	st.once.Do(func() {
		if d := C.start_sync_thread(); d >= 0 {
			st.done = os.NewFile(uintptr(d), "fdatasync-done")
		}
	})
	if st.done == nil {
		return false, nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.broken {
		return false, nil
	}
	C.request_sync(C.int(fd))
	var buf [8]byte
	if _, err := st.done.Read(buf[:]); err != nil {
		// The request is still out: a later reply could be taken for another request's, so nobody uses the
		// thread again, and this caller syncs as usual.
		st.broken = true
		return false, nil
	}
	if e := C.sync_result(); e != 0 {
		return true, syscall.Errno(e)
	}
	return true, nil
}

// threadSyncs counts the fdatasyncs the helper thread made that succeeded.
func threadSyncs() uint64 { return uint64(C.sync_count()) }
