package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"anykv/internal/servertest"
)

// The exposure and authentication matrix, end to end: the real binary, each protocol (RESP, memcached, HTTP) ×
// the client's credentials (none, wrong, right) × where the client is (loopback, another host), for a server
// without and with --requirepass. "Another host" is real: a network namespace joined to this one by a veth pair
// with addresses of our own (10.213.X.1/30 here, .2 there); the server binds the host side's address and the
// clients run inside the namespace (this test binary, re-run there through `ip netns exec`). No other address
// sees a packet.

const matrixPassword = "s3cret"

// Outcomes of a probe.
const (
	served          = "served"          // wrote and read back a value
	denied          = "denied"          // protected mode: refused for where it comes from
	unauthenticated = "unauthenticated" // asked for the password
	wrongpass       = "wrongpass"       // refused the password it gave
)

// want is what the policy promises.
func want(password string, remote bool, cred string) string {
	switch {
	case password == "" && remote:
		return denied
	case password == "" || cred == "right":
		return served
	case cred == "wrong":
		return wrongpass
	}
	return unauthenticated
}

func credential(cred string) string {
	switch cred {
	case "right":
		return matrixPassword
	case "wrong":
		return "not-" + matrixPassword
	}
	return ""
}

func TestExposureMatrix(t *testing.T) {
	ns := newNetns(t)
	for _, password := range []string{"", matrixPassword} {
		var args []string
		if password != "" {
			args = []string{"--requirepass", password}
		}
		opts := servertest.Options{Engine: "memory", Memcache: true, HTTP: true, Args: args}
		local := servertest.Start(t, opts)
		opts.Host = ns.hostIP
		far := servertest.Start(t, opts)
		var cases, remote []string // "proto cred", and the remote probes
		for _, proto := range []string{"resp", "memcache", "http", "healthz"} {
			for _, cred := range []string{"none", "wrong", "right"} {
				cases = append(cases, proto+" "+cred)
				remote = append(remote, fmt.Sprintf("%s %s %s", proto, addrOf(far, proto), cred))
			}
		}
		check := func(where string, isRemote bool, i int, got string) {
			f := strings.Fields(cases[i])
			w := want(password, isRemote, f[1])
			if f[0] == "healthz" {
				w = wantHealthz(w)
			}
			if got != w {
				t.Errorf("requirepass %q, %s, %s with %s password: %s, want %s", password, where, f[0], f[1], got, w)
			}
		}
		for i, c := range cases {
			f := strings.Fields(c)
			check("loopback", false, i, probe(fmt.Sprintf("%s %s %s", f[0], addrOf(local, f[0]), f[1])))
		}
		for i, got := range ns.probe(t, remote) {
			check("from another host", true, i, got)
		}
	}
}

// wantHealthz: /healthz answers whoever may connect, but its version only to those who may use the API.
func wantHealthz(api string) string {
	switch api {
	case served:
		return "with-version"
	case denied:
		return denied
	}
	return "status-only"
}

func addrOf(s *servertest.Server, proto string) string {
	return map[string]string{"resp": s.RESP, "memcache": s.Memcache, "http": s.HTTP, "healthz": s.HTTP}[proto]
}

// TestExposureProbeHelper is not a test: TestExposureMatrix runs this binary inside its network namespace with
// ANYKV_PROBES set to one probe per line, and reads one "probe-result <outcome>" line per probe.
func TestExposureProbeHelper(t *testing.T) {
	probes := os.Getenv("ANYKV_PROBES")
	if probes == "" {
		t.Skip("run by TestExposureMatrix only")
	}
	for _, p := range strings.Split(probes, "\n") {
		fmt.Printf("probe-result %s\n", strings.ReplaceAll(probe(p), "\n", " "))
	}
}

// probe runs "proto addr cred": it authenticates as the protocol does when cred is not "none", writes a value
// and reads it back, and names the outcome.
func probe(p string) string {
	f := strings.Fields(p)
	proto, addr, cred := f[0], f[1], f[2]
	key := fmt.Sprintf("probe-%s-%s-%d", proto, cred, time.Now().UnixNano())
	if proto == "http" || proto == "healthz" {
		return probeHTTP(addr, key, cred, proto == "healthz")
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	line := func(send string) string {
		io.WriteString(c, send)
		l, err := r.ReadString('\n')
		if err != nil {
			return "read: " + err.Error()
		}
		return strings.TrimRight(l, "\r\n")
	}
	if proto == "resp" {
		resp := func(args ...string) string {
			var b strings.Builder
			fmt.Fprintf(&b, "*%d\r\n", len(args))
			for _, a := range args {
				fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
			}
			return line(b.String())
		}
		classify := func(l string) string {
			switch {
			case strings.HasPrefix(l, "-DENIED"):
				return denied
			case strings.HasPrefix(l, "-NOAUTH"):
				return unauthenticated
			case strings.HasPrefix(l, "-WRONGPASS"):
				return wrongpass
			}
			return "unexpected " + l
		}
		if cred != "none" {
			if l := resp("AUTH", "default", credential(cred)); l != "+OK" {
				return classify(l)
			}
		}
		if l := resp("SET", key, "v"); l != "+OK" {
			return classify(l)
		}
		if l := resp("GET", key); l != "$1" {
			return classify(l)
		}
		return served
	}
	// memcached
	classify := func(l string) string {
		switch {
		case strings.HasPrefix(l, "SERVER_ERROR anykv is running in protected mode"):
			if rest, _ := io.ReadAll(r); len(rest) > 0 {
				return "more after the refusal: " + string(rest)
			}
			return denied
		case l == "CLIENT_ERROR unauthenticated":
			return unauthenticated
		case l == "CLIENT_ERROR authentication failure":
			return wrongpass
		}
		return "unexpected " + l
	}
	if cred != "none" {
		data := "anyuser " + credential(cred)
		if l := line(fmt.Sprintf("set auth 0 0 %d\r\n%s\r\n", len(data), data)); l != "STORED" {
			return classify(l)
		}
	}
	if l := line("get " + key + "\r\n"); l != "END" { // the attack: an unauthenticated read
		return classify(l)
	}
	if l := line("set " + key + " 0 0 1\r\nv\r\n"); l != "STORED" {
		return classify(l)
	}
	if l := line("get " + key + "\r\n"); l != "VALUE "+key+" 0 1" {
		return classify(l)
	}
	return served
}

func probeHTTP(addr, key, cred string, healthz bool) string {
	client := &http.Client{Timeout: 10 * time.Second}
	do := func(method, path, body string) (int, string, error) {
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		if cred != "none" {
			req.Header.Set("Authorization", "Bearer "+credential(cred))
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	classify := func(status int, body string) string {
		var e struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal([]byte(body), &e)
		switch {
		case status == http.StatusForbidden && e.Error.Code == "forbidden" && strings.Contains(e.Error.Message, "protected mode"):
			return denied
		case status == http.StatusUnauthorized && cred == "none":
			return unauthenticated
		case status == http.StatusUnauthorized:
			return wrongpass
		}
		return fmt.Sprintf("unexpected %d %s", status, body)
	}
	if healthz {
		status, body, err := do("GET", "/healthz", "")
		switch {
		case err != nil:
			return err.Error()
		case status != http.StatusOK:
			return classify(status, body)
		case strings.Contains(body, `"version"`):
			return "with-version"
		}
		return "status-only"
	}
	for _, step := range []struct{ method, path, body, want string }{
		{"PUT", "/v1/tables/default/keys/" + key, "v", ""},
		{"GET", "/v1/tables/default/keys/" + key, "", "v"},
		{"GET", "/metrics", "", ""},
		{"GET", "/v1/openapi.json", "", ""},
	} {
		status, body, err := do(step.method, step.path, step.body)
		if err != nil {
			return err.Error()
		}
		if status/100 != 2 {
			return classify(status, body)
		}
		if step.want != "" && body != step.want {
			return "unexpected body " + body
		}
	}
	return served
}

// netns is a network namespace joined to this one by a veth pair: hostIP here, nsIP there.
type netns struct {
	name, hostIP, nsIP string
}

// newNetns makes the namespace, or fails the test in CI (CI=true) and skips it elsewhere when it cannot.
func newNetns(t *testing.T) *netns {
	t.Helper()
	cannot := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...) + ": the exposure matrix needs root and iproute2 to make a network namespace"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg + " (skipped outside CI; set CI=true to make it fail)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		cannot("no ip command (apt-get install iproute2)")
	}
	used, _ := exec.Command("ip", "-o", "addr", "show").Output()
	subnet := -1
	for i := range 250 {
		x := (os.Getpid() + i) % 250
		if !strings.Contains(string(used), fmt.Sprintf(" 10.213.%d.", x)) {
			subnet = x
			break
		}
	}
	if subnet < 0 {
		t.Fatal("no free 10.213.X.0/30 subnet")
	}
	id := fmt.Sprint(os.Getpid() % 10000000)
	ns := &netns{name: "anykv-test-" + id, hostIP: fmt.Sprintf("10.213.%d.1", subnet), nsIP: fmt.Sprintf("10.213.%d.2", subnet)}
	hostVeth, nsVeth := "akv"+id+"h", "akv"+id+"n"
	if out, err := exec.Command("ip", "netns", "add", ns.name).CombinedOutput(); err != nil {
		cannot("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", hostVeth).Run()
		if out, err := exec.Command("ip", "netns", "del", ns.name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", ns.name, err, out)
		}
	})
	for _, cmd := range [][]string{
		{"ip", "link", "add", hostVeth, "type", "veth", "peer", "name", nsVeth},
		{"ip", "link", "set", nsVeth, "netns", ns.name},
		{"ip", "addr", "add", ns.hostIP + "/30", "dev", hostVeth},
		{"ip", "link", "set", hostVeth, "up"},
		{"ip", "netns", "exec", ns.name, "ip", "addr", "add", ns.nsIP + "/30", "dev", nsVeth},
		{"ip", "netns", "exec", ns.name, "ip", "link", "set", nsVeth, "up"},
		{"ip", "netns", "exec", ns.name, "ip", "link", "set", "lo", "up"},
	} {
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(cmd, " "), err, out)
		}
	}
	return ns
}

// probe runs the probes from inside the namespace and returns their outcomes in order.
func (ns *netns) probe(t *testing.T, probes []string) []string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", ns.name, self, "-test.run=^TestExposureProbeHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ANYKV_PROBES="+strings.Join(probes, "\n"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe helper in %s: %v\n%s", ns.name, err, out)
	}
	var got []string
	for _, l := range strings.Split(string(out), "\n") {
		if r, ok := strings.CutPrefix(l, "probe-result "); ok {
			got = append(got, r)
		}
	}
	if len(got) != len(probes) {
		t.Fatalf("probe helper answered %d of %d probes:\n%s", len(got), len(probes), out)
	}
	return got
}

// TestPprofFollowsThePolicy: --pprof has no login of its own, so with a password it wants the Bearer token too;
// like the HTTP API it refuses browsers' cross-site requests and, without a password, a Host that a DNS-rebinding
// page would send.
func TestPprofFollowsThePolicy(t *testing.T) {
	for _, tc := range []struct {
		password, header string
		want             int
		host, origin     string
	}{{"", "", http.StatusOK, "", ""}, {matrixPassword, "", http.StatusUnauthorized, "", ""},
		{matrixPassword, "Bearer wrong", http.StatusUnauthorized, "", ""},
		{matrixPassword, "Bearer " + matrixPassword, http.StatusOK, "", ""},
		{"", "", http.StatusForbidden, "evil.example", ""}, {"", "", http.StatusOK, "localhost", ""},
		{"", "", http.StatusForbidden, "", "http://evil.example"},
		{matrixPassword, "Bearer " + matrixPassword, http.StatusOK, "evil.example", ""}} {
		pprof := servertest.FreePort(t)
		args := []string{"--pprof", pprof}
		if tc.password != "" {
			args = append(args, "--requirepass", tc.password)
		}
		servertest.Start(t, servertest.Options{Engine: "memory", Args: args})
		req, _ := http.NewRequest("GET", "http://"+pprof+"/debug/pprof/cmdline", nil)
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("requirepass %q, Authorization %q, Host %q, Origin %q: %d, want %d", tc.password, tc.header,
				tc.host, tc.origin, resp.StatusCode, tc.want)
		}
	}
}
