// Package procnet tells from Linux's /proc whether a process holds the socket listening on a TCP port. A helper
// that picked a free port and started a server on it asks it once the port answers: another process may have
// bound the port between the pick and the server's bind (tests start servers side by side), and then a
// connection that succeeds reaches that process, while the server started exits or is about to.
package procnet

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Listens reports whether process pid holds a socket listening on addr's port. The port alone is compared: the
// servers asked about bind the address they were given, so holding a listener on the port means holding addr.
// True when /proc cannot tell (another OS, or a server in another network namespace).
func Listens(pid int, addr string) bool {
	inodes, ok := listeners(addr)
	if !ok {
		return true
	}
	return holds(pid, inodes)
}

// GroupListens is Listens for any process of process group pgid: a server started through a wrapper that forks
// it (runuser) or that hands its socket to a child.
func GroupListens(pgid int, addr string) bool {
	inodes, ok := listeners(addr)
	if !ok {
		return true
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pgrp(pid) != pgid {
			continue
		}
		if holds(pid, inodes) {
			return true
		}
	}
	return false
}

// listeners returns the socket inodes ("socket:[N]", as /proc/<pid>/fd links name them) listening on addr's
// port; false when there are none to be seen.
func listeners(addr string) (map[string]bool, bool) {
	_, port, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil {
		return nil, false
	}
	want := fmt.Sprintf(":%04X", n)
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			fields := strings.Fields(line) // sl local_address rem_address st ... inode
			if len(fields) >= 10 && fields[3] == "0A" && strings.HasSuffix(fields[1], want) {
				inodes["socket:["+fields[9]+"]"] = true
			}
		}
	}
	return inodes, len(inodes) > 0
}

// holds reports whether pid has one of inodes among its open files: false when it is gone, true when its files
// cannot be read (another user's, to a process that is not root).
func holds(pid int, inodes map[string]bool) bool {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return !os.IsNotExist(err)
	}
	for _, fd := range fds {
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && inodes[link] {
			return true
		}
	}
	return false
}

// pgrp is pid's process group (field 5 of /proc/<pid>/stat), or -1 when it cannot be read.
func pgrp(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// "pid (comm) S ppid pgrp ...": comm may hold spaces and parentheses, so fields are counted after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return -1
	}
	g, err := strconv.Atoi(f[2])
	if err != nil {
		return -1
	}
	return g
}

// FreePort returns a TCP port free on 127.0.0.1, for a server started after, picked at random below the kernel's
// ephemeral port range and at least 10,000 below its start (a Redis Cluster node also binds its port + 10,000).
// Outgoing connections take their local ports from that range, so a port picked in it, as port 0 picks, can be
// taken by any connection of any process before the server binds it (a member restarted on its old port failed
// so in CI); below it only another deliberate pick can take it. Port 0's pick when the range leaves no room.
func FreePort() (int, error) {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				lo = n
			}
		}
	}
	const floor = 10000
	for range 64 {
		if lo-10000 <= floor {
			break
		}
		p := floor + rand.IntN(lo-10000-floor)
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
			l.Close()
			return p, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
