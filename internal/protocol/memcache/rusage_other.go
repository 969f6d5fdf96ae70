//go:build !unix

package memcache

// rusage is unknown on this platform.
func rusage() (user, sys string) { return "0.000000", "0.000000" }
