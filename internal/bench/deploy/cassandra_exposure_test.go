package deploy

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCassandraListensOnlyOnItsPorts: a node was started with -Dcassandra.jmx.local.port=0, which opened JMX on a
// random 127.0.0.1 port without authentication: any user of the machine connected, and the node (run as the
// bench's user, root here) offered DiagnosticCommand's JVMTI.agent_load, native code of the caller's choosing. A
// node now listens on its CQL and storage ports alone (nothing the bench or anykv cluster does needs JMX).
func TestCassandraListensOnlyOnItsPorts(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("needs Linux's /proc")
	}
	s, err := Start(context.Background(), "cassandra", Options{BaseDir: baseDir(t)})
	if err != nil {
		if _, ok := err.(*NotInstalledError); ok && os.Getenv("CI") != "true" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer s.Stop()
	b, err := os.ReadFile(filepath.Join(s.Dir, "cassandra.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && (k == "native_transport_port" || k == "storage_port") {
			want[v] = true
		}
	}
	if len(want) != 2 {
		t.Fatalf("cassandra.yaml names the ports %v", want)
	}
	got := listening(t, s.Pid)
	for _, a := range got {
		if _, port, _ := net.SplitHostPort(a); !want[port] {
			t.Errorf("the node listens on %s, not its CQL or storage port (all: %v)", a, got)
		}
	}
}

// listening returns the TCP addresses pid's sockets listen on, from /proc/net/tcp and tcp6.
func listening(t *testing.T, pid int) []string {
	t.Helper()
	mine := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil {
			mine[link] = true
		}
	}
	var addrs []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			fields := strings.Fields(line) // sl local_address rem_address st ... inode
			if len(fields) < 10 || fields[3] != "0A" || !mine["socket:["+fields[9]+"]"] {
				continue
			}
			hexIP, hexPort, _ := strings.Cut(fields[1], ":")
			raw, err := hex.DecodeString(hexIP)
			port, perr := strconv.ParseUint(hexPort, 16, 16)
			if err != nil || perr != nil || len(raw)%4 != 0 {
				t.Fatalf("%s: %q", f, fields[1])
			}
			for i := 0; i < len(raw); i += 4 { // each 32-bit word in host (little-endian) order
				raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
			}
			addrs = append(addrs, net.JoinHostPort(net.IP(raw).String(), strconv.Itoa(int(port))))
		}
	}
	return addrs
}
