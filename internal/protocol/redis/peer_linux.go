package redis

import "golang.org/x/sys/unix"

// hungUp reports whether the peer of the socket fd shut down its side, even with bytes it sent still unread
// (POLLRDHUP): a client that sent a command while blocked and then closed is gone, as Redis sees it.
func hungUp(fd uintptr) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
	n, err := unix.Poll(p, 0)
	return err == nil && n > 0 && p[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
}
