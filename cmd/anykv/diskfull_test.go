package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/engine/pebblestore"
	"anykv/internal/engine/pebblestore/smallfs"
	"anykv/internal/servertest"
)

// protoClient writes and reads one key at a time over RESP, memcached or HTTP, and words a refusal as the
// protocol does.
type protoClient struct {
	t    *testing.T
	name string
	ep   endpoints
	mc   *bufio.ReadWriter
	conn net.Conn
	rc   *goredis.Client
}

func (p *protoClient) resp() *goredis.Client {
	if p.rc == nil {
		p.rc = client(p.t, p.ep.RESP)
	}
	return p.rc
}

func (p *protoClient) memcache() *bufio.ReadWriter {
	if p.mc == nil {
		c, err := net.DialTimeout("tcp", p.ep.Memcache, 5*time.Second)
		if err != nil {
			p.t.Fatal(err)
		}
		p.t.Cleanup(func() { c.Close() })
		p.conn, p.mc = c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c))
	}
	p.conn.SetDeadline(time.Now().Add(10 * time.Second))
	return p.mc
}

// reconnect forgets the connections (after a restart).
func (p *protoClient) reconnect() { p.mc, p.rc = nil, nil }

// set writes key and returns "" when acknowledged, else the protocol's error text.
func (p *protoClient) set(key, val string) string {
	switch p.name {
	case "resp":
		if err := p.resp().Set(ctx, key, val, 0).Err(); err != nil {
			return err.Error()
		}
		return ""
	case "memcache":
		rw := p.memcache()
		fmt.Fprintf(rw, "set %s 0 0 %d\r\n%s\r\n", key, len(val), val)
		rw.Flush()
		l, err := rw.ReadString('\n')
		if err != nil {
			p.t.Fatalf("memcached set: %v", err)
		}
		if l = strings.TrimRight(l, "\r\n"); l == "STORED" {
			return ""
		}
		return l
	}
	status, body := p.http("PUT", key, val)
	if status == http.StatusOK || status == http.StatusNoContent || status == http.StatusCreated {
		return ""
	}
	var e struct {
		Error struct{ Code, Message string }
	}
	json.Unmarshal([]byte(body), &e)
	return fmt.Sprintf("%d %s", status, e.Error.Code)
}

// get reads key's value.
func (p *protoClient) get(key string) string {
	switch p.name {
	case "resp":
		v, err := p.resp().Get(ctx, key).Result()
		if err != nil {
			p.t.Fatalf("GET %s: %v", key, err)
		}
		return v
	case "memcache":
		rw := p.memcache()
		fmt.Fprintf(rw, "get %s\r\n", key)
		rw.Flush()
		var flags, n int
		l, _ := rw.ReadString('\n')
		if _, err := fmt.Sscanf(l, "VALUE "+key+" %d %d", &flags, &n); err != nil {
			p.t.Fatalf("memcached get %s: %q", key, l)
		}
		v := make([]byte, n+2)
		io.ReadFull(rw, v)
		if l, _ := rw.ReadString('\n'); l != "END\r\n" {
			p.t.Fatalf("memcached get %s: %q after the value", key, l)
		}
		return string(v[:n])
	}
	status, body := p.http("GET", key, "")
	if status != http.StatusOK {
		p.t.Fatalf("HTTP GET %s: %d %s", key, status, body)
	}
	return body
}

func (p *protoClient) http(method, key, body string) (int, string) {
	req, _ := http.NewRequest(method, "http://"+p.ep.HTTP+"/v1/tables/default/keys/"+key, strings.NewReader(body))
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		p.t.Fatalf("HTTP %s %s: %v", method, key, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// refusals are the exact errors each protocol answers a write with while the disk is full.
var refusals = map[string]string{
	"resp":     "MISCONF disk is full (free space below --min-free-space): writes are refused until space is freed; reads still work",
	"memcache": "SERVER_ERROR out of space",
	"http":     "507 insufficient_storage",
}

// diskFullArgs are the server flags of the disk-full scenario: an 8 MiB reserve, and no read cache, so reads
// come from the engine.
var diskFullArgs = []string{"--min-free-space", "8MiB", "--read-cache", "0"}

// TestDiskFull runs the disk-full scenario with the real binary on a real 64 MiB tmpfs, or, where mounting is
// not allowed (not root), in this process on an injected-error file system; the log says which ran.
func TestDiskFull(t *testing.T) {
	d, err := mountTmpfs(t, "64m")
	if err != nil {
		t.Logf("cannot mount a tmpfs (%v): running in this process on an injected-error file system instead", err)
		runInjected(t)
		return
	}
	t.Logf("running the real binary on a real 64 MiB tmpfs at %s", d.mnt)
	s := servertest.Start(t, servertest.Options{Dir: d.data, Memcache: true, HTTP: true, Args: diskFullArgs})
	diskFullScenario(t, binaryServer{s}, d)
}

// TestDiskFullInjectedFS runs the scenario in this process on pebblestore's injected-error file system (64 MiB),
// which is TestDiskFull's fallback: run always, so the fallback keeps working.
func TestDiskFullInjectedFS(t *testing.T) { runInjected(t) }

func runInjected(t *testing.T) {
	d := injectedDisk{smallfs.New(64 << 20)}
	diskFullScenario(t, startInProc(t, d, diskFullArgs), d)
}

// diskFullScenario: writes over RESP, memcached and HTTP fill the disk until the free-space reserve refuses them
// with each protocol's error while reads go on; deleting a file lets writes in again without a restart; a disk
// filled to the last byte by another program neither crashes the server nor keeps it from restarting,
// read-only, serving reads; freeing space makes it writable again. Every acknowledged write is read back at
// each step.
func diskFullScenario(t *testing.T, s diskServer, disk smallDisk) {
	ep := s.endpoints()
	protos := []*protoClient{{t: t, name: "resp", ep: ep}, {t: t, name: "memcache", ep: ep}, {t: t, name: "http", ep: ep}}
	acked := map[string]string{}
	checkAll := func(step string) {
		t.Helper()
		i := 0
		for k, v := range acked {
			p := protos[i%3] // every key over one protocol, each protocol in turn
			if got := p.get(k); got != v {
				t.Fatalf("%s: acknowledged %s over %s: got %d bytes, want %d", step, k, p.name, len(got), len(v))
			}
			i++
		}
	}
	value := func() string {
		b := make([]byte, 16<<10) // incompressible: hex of random bytes
		rand.Read(b)
		return hex.EncodeToString(b)
	}
	// writeUntilRefused writes over each protocol in turn until every protocol has answered its refusal.
	n := 0
	writeUntilRefused := func(step string) {
		t.Helper()
		seen := map[string]bool{}
		for deadline := time.Now().Add(60 * time.Second); len(seen) < 3; n++ {
			if time.Now().After(deadline) {
				t.Fatalf("%s: after %d writes, refusals seen only on %v", step, n, seen)
			}
			p := protos[n%3]
			k, v := fmt.Sprintf("%s-%d", p.name, n), value()
			switch msg := p.set(k, v); msg {
			case "":
				acked[k] = v
			case refusals[p.name]:
				seen[p.name] = true
			default:
				t.Fatalf("%s: %s write refused with %q, want %q", step, p.name, msg, refusals[p.name])
			}
		}
	}
	// writeAccepted waits until a write is accepted again over each protocol.
	writeAccepted := func(step string) {
		t.Helper()
		for _, p := range protos {
			for deadline := time.Now().Add(20 * time.Second); ; n++ {
				k, v := fmt.Sprintf("%s-%d", p.name, n), "back"
				msg := p.set(k, v)
				if msg == "" {
					acked[k] = v
					break
				}
				if msg != refusals[p.name] || time.Now().After(deadline) {
					t.Fatalf("%s: %s write: %q", step, p.name, msg)
				}
				time.Sleep(50 * time.Millisecond) // the server measures free space every second
			}
		}
	}
	// freeSpace deletes the other program's data and requires writes accepted again by the same process, and
	// every acknowledged key.
	freeSpace := func(step string) {
		t.Helper()
		pid := s.pid()
		disk.release()
		writeAccepted(step)
		if s.pid() != pid {
			t.Fatalf("%s: the server restarted", step)
		}
		checkAll(step)
	}
	info := func() string {
		v, err := protos[0].resp().Info(ctx, "persistence").Result()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	// 1. Fill the disk through the three protocols, leaving 24 MiB above the reserve for them.
	disk.fill(disk.free() - (8+24)<<20)
	writeUntilRefused("filling")
	t.Logf("%d writes acknowledged before the reserve refused them; free: %d bytes", len(acked), disk.free())
	if !strings.Contains(info(), "engine_disk_min_free_bytes:8388608") {
		t.Fatalf("INFO persistence lacks the reserve:\n%s", info())
	}
	checkAll("disk full, reads")

	// 2. Free space: writes are accepted again by the same process.
	freeSpace("after freeing space")

	// 3. Another program fills the disk to the last byte: writes are refused (or, if one raced the measure, are
	// taken with the ballast's space); the server stays up.
	for deadline := time.Now().Add(10 * time.Second); !disk.exists(pebblestore.BallastName); {
		if time.Now().After(deadline) {
			t.Fatal("the ballast was not written again after space was freed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	disk.fill(-1)
	writeUntilRefused("disk filled by another program")
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(info(), "engine_disk_full:1"); {
		if time.Now().After(deadline) {
			t.Fatalf("INFO does not say the disk is full:\n%s", info())
		}
		time.Sleep(50 * time.Millisecond)
	}
	checkAll("disk filled by another program")
	for _, l := range strings.Split(info(), "\r\n") {
		if strings.HasPrefix(l, "engine_disk_") {
			t.Log(l) // shows whether a write raced the reserve into ENOSPC and took the ballast's space
		}
	}

	// 4. Restart on the full disk: the server starts, says it is read-only, serves reads and refuses writes.
	if code := s.stop(); code != 0 {
		t.Fatalf("SIGTERM on a full disk: exit %d\n%s", code, s.output())
	}
	disk.fill(-1) // what the stopping server freed (a flushed WAL) is taken too
	t.Logf("free before the restart: %d bytes", disk.free())
	s.restart()
	for _, p := range protos {
		p.reconnect()
	}
	if !strings.Contains(s.output(), "disk full: opening the store read-only") {
		t.Fatalf("the log does not say the disk is full:\n%s", s.output())
	}
	if !strings.Contains(info(), "engine_disk_full:1") {
		t.Fatalf("INFO after a restart on a full disk:\n%s", info())
	}
	if resp, err := http.Get("http://" + ep.HTTP + "/healthz"); err != nil {
		t.Fatal(err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"read_only"`) {
			t.Fatalf("healthz on a full disk: %d %s", resp.StatusCode, b)
		}
	}
	checkAll("restarted on a full disk")
	writeUntilRefused("restarted on a full disk")

	// 5. Space returns: writable without a restart, and everything acknowledged is there.
	freeSpace("space returned after the restart")
	if out := s.output(); strings.Contains(out, "panic:") || strings.Contains(out, "pebble fatal") {
		t.Fatalf("the server's log shows a panic or fatal error:\n%s", out)
	}
	t.Logf("%d acknowledged writes read back", len(acked))
}
