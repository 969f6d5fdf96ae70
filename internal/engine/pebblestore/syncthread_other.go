//go:build !(linux && cgo)

package pebblestore

// threadSync is not available without cgo on Linux: the WAL syncs on the calling goroutine's thread.
func threadSync(fd uintptr) (handled bool, err error) { return false, nil }
