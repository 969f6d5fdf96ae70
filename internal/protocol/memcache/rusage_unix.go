//go:build unix

package memcache

import (
	"fmt"
	"syscall"
)

// rusage returns the process's user and system CPU time as memcached prints them (seconds.microseconds).
func rusage() (user, sys string) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return "0.000000", "0.000000"
	}
	return fmt.Sprintf("%d.%06d", ru.Utime.Sec, ru.Utime.Usec), fmt.Sprintf("%d.%06d", ru.Stime.Sec, ru.Stime.Usec)
}
