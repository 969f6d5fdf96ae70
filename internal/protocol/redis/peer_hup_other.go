//go:build unix && !linux

package redis

// hungUp cannot see a close behind unread bytes here (no POLLRDHUP): the blocked wait's tick reads them and
// then sees it.
func hungUp(uintptr) bool { return false }
