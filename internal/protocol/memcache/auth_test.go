package memcache

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"anykv/internal/auth"
	"anykv/internal/engine"
	"anykv/internal/kv"
)

func withPassword(pw string) serverOpt {
	return func(o *Options, _ *kv.Options) { o.Auth = auth.New(pw) }
}

// authConn is a raw connection that checks replies line by line.
type authConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialAuth(t *testing.T, addr string) *authConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &authConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

// exchange sends in and requires the reply lines want, in order.
func (c *authConn) exchange(in string, want ...string) {
	c.t.Helper()
	if _, err := io.WriteString(c.nc, in); err != nil {
		c.t.Fatal(err)
	}
	for _, w := range want {
		got, err := c.r.ReadString('\n')
		if err != nil {
			c.t.Fatalf("after %q: reading %q: %v", in, w, err)
		}
		if got != w+"\r\n" {
			c.t.Fatalf("after %q: got %q, want %q", in, got, w)
		}
	}
}

// closed requires the server to close the connection with nothing more to say.
func (c *authConn) closed() {
	c.t.Helper()
	if rest, err := io.ReadAll(c.r); err != nil || len(rest) != 0 {
		c.t.Fatalf("want the connection closed; got %q, %v", rest, err)
	}
}

func authSet(user, pass string) string {
	data := user + " " + pass
	return fmt.Sprintf("set anykey 0 0 %d\r\n%s\r\n", len(data), data)
}

// TestAuthRequired: with a password, an unauthenticated client can neither read nor write the keyspace, as with
// memcached -Y; each refused command line gets CLIENT_ERROR unauthenticated and nothing is applied.
func TestAuthRequired(t *testing.T) {
	ts := startServer(t, withPassword("s3cret"))
	ts.store.Apply1(context.Background(), engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("s"), Value: []byte("secret")})
	c := dialAuth(t, ts.addr)
	const unauth = "CLIENT_ERROR unauthenticated"
	c.exchange("get s\r\n", unauth)
	c.exchange("gets s\r\nflush_all\r\ndelete s\r\nincr s 1\r\ntouch s 10\r\n", unauth, unauth, unauth, unauth, unauth)
	c.exchange("mg s v\r\nmd s\r\nma s\r\nmn\r\nme s\r\n", unauth, unauth, unauth, unauth, unauth)
	c.exchange("stats\r\nversion\r\nverbosity 1\r\nquit\r\n", unauth, unauth, unauth, unauth)
	// A storage command other than set is refused by its line; its data line is then a command line of its own.
	c.exchange("add a 0 0 1\r\nb\r\nms a 1\r\nb\r\n", unauth, unauth, unauth, unauth)
	c.exchange("\r\nset\r\nset k 0 0\r\nset k 0 0 x\r\n", unauth, unauth, unauth, unauth)
	// Authentication failures.
	c.exchange(authSet("alice", "wrong"), "CLIENT_ERROR authentication failure")
	c.exchange(authSet("alice", "s3cret2"), "CLIENT_ERROR authentication failure")
	c.exchange("set k 0 0 6\r\ns3cret\r\n", "CLIENT_ERROR bad authentication token format")
	c.exchange("set k 0 0 2\r\nabcd\r\n", "CLIENT_ERROR bad command line termination", unauth)
	c.exchange("get s\r\n", unauth)
	if it, err := ts.store.Get(context.Background(), "default", []byte("s")); err != nil || string(it.Value) != "secret" {
		t.Fatalf("after refused commands: %q, %v", it.Value, err)
	}
	for _, k := range []string{"a", "k", "anykey"} {
		if _, err := ts.store.Get(context.Background(), "default", []byte(k)); !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("key %q was written by an unauthenticated client: %v", k, err)
		}
	}
	// The right password, any user name; the authenticating set stores nothing. A pipelined command after it
	// is served.
	c.exchange(authSet("alice", "s3cret")+"get s\r\n", "STORED", "VALUE s 0 6", "secret", "END")
	if _, err := ts.store.Get(context.Background(), "default", []byte("anykey")); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("the authenticating set stored its key: %v", err)
	}
	c.exchange("set anykey 0 0 1\r\nv\r\n", "STORED") // from now on a set is a set
	c.exchange("stats\r\n")
	stats := map[string]string{}
	for {
		line, err := c.r.ReadString('\n')
		if err != nil || line == "END\r\n" {
			break
		}
		f := strings.Fields(line)
		stats[f[1]] = f[2]
	}
	if stats["auth_cmds"] != "5" || stats["auth_errors"] != "2" {
		t.Errorf("auth_cmds %s, auth_errors %s; want 5 and 2", stats["auth_cmds"], stats["auth_errors"])
	}

	// Another connection starts unauthenticated.
	dialAuth(t, ts.addr).exchange("get s\r\n", unauth)
}

// TestAuthBounds: an unauthenticated client cannot make the server hold much: an authenticating set longer than
// maxAuthData, or a line without newline past 2048 bytes, closes the connection.
func TestAuthBounds(t *testing.T) {
	ts := startServer(t, withPassword("s3cret"))
	c := dialAuth(t, ts.addr)
	c.exchange(fmt.Sprintf("set k 0 0 %d\r\n", maxAuthData+1), "CLIENT_ERROR bad authentication token format")
	c.closed()
	c = dialAuth(t, ts.addr)
	io.WriteString(c.nc, "get "+strings.Repeat("k", 4000))
	c.closed()
}

// TestAuthPasswordWithSpaces: everything after the user name's space is the password.
func TestAuthPasswordWithSpaces(t *testing.T) {
	ts := startServer(t, withPassword("two  words "))
	c := dialAuth(t, ts.addr)
	c.exchange(authSet("u", "two words"), "CLIENT_ERROR authentication failure")
	c.exchange(authSet("u", "two  words "), "STORED")
	c.exchange("mn\r\n", "MN")
}

// TestAuthGomemcache: a stock client without authentication gets an error, never the data.
func TestAuthGomemcache(t *testing.T) {
	ts := startServer(t, withPassword("s3cret"))
	ts.store.Apply1(context.Background(), engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("s"), Value: []byte("secret")})
	mc := memcache.New(ts.addr)
	if it, err := mc.Get("s"); err == nil {
		t.Fatalf("unauthenticated get returned %q", it.Value)
	}
	if err := mc.Set(&memcache.Item{Key: "s", Value: []byte("overwritten")}); err == nil {
		// gomemcache sends a set; its data is not "<user> <password>", so it is refused.
		t.Fatal("unauthenticated set succeeded")
	}
	if err := mc.FlushAll(); err == nil {
		t.Fatal("unauthenticated flush_all succeeded")
	}
	if it, err := ts.store.Get(context.Background(), "default", []byte("s")); err != nil || string(it.Value) != "secret" {
		t.Fatalf("after an unauthenticated client: %q, %v", it.Value, err)
	}
}

// TestNoPasswordNoAuth: without a password nothing changes: a set is a set.
func TestNoPasswordNoAuth(t *testing.T) {
	ts := startServer(t)
	c := dialAuth(t, ts.addr)
	c.exchange(authSet("alice", "s3cret")+"get anykey\r\n", "STORED", "VALUE anykey 0 12", "alice s3cret", "END")
}

// TestRestrictedDefaultUserDropsConnectedClients: a memcached client acts as the default user unrestricted, so
// once ACL rules restrict the default user (or turn it off) a connection that authenticated before, or was served
// without a password, is refused from its next command on, as new ones are (docs/security.md, ACL users):
// otherwise it kept reading and writing every key the restricted user may not.
func TestRestrictedDefaultUserDropsConnectedClients(t *testing.T) {
	for _, pw := range []string{"s3cret", ""} {
		for _, enabled := range []bool{true, false} {
			p := auth.New(pw)
			ts := startServer(t, func(o *Options, _ *kv.Options) { o.Auth = p })
			ts.store.Apply1(context.Background(), engine.Mutation{Op: engine.OpSet, Table: "default", Key: []byte("s"), Value: []byte("secret")})
			c := dialAuth(t, ts.addr)
			if pw != "" {
				c.exchange(authSet("u", pw), "STORED")
			}
			c.exchange("get s\r\n", "VALUE s 0 6", "secret", "END")
			var bc net.Conn
			if pw != "" { // the binary protocol, authenticated by SASL PLAIN
				bc = dialAuth(t, ts.addr).nc
				bc.Write(binReq(opSASLAuth, 1, 0, nil, []byte("PLAIN"), []byte("\x00u\x00"+pw)))
				if st := readBinStatus(t, bc); st != stOK {
					t.Fatalf("SASL: status %#x", st)
				}
			}
			var digests [][32]byte
			if pw != "" {
				digests = [][32]byte{sha256.Sum256([]byte(pw))}
			}
			p.SetDefaultUser(pw, digests, pw == "", enabled, !enabled) // on and restricted, or off
			c.exchange("get s\r\n", "CLIENT_ERROR unauthenticated")
			c.exchange("set s 0 0 3\r\nhax\r\n", "CLIENT_ERROR bad authentication token format")
			if bc != nil {
				bc.Write(binReq(opGet, 2, 0, nil, []byte("s"), nil))
				if st := readBinStatus(t, bc); st != stAuthError {
					t.Fatalf("binary get after the default user was restricted: status %#x", st)
				}
			}
			if it, err := ts.store.Get(context.Background(), "default", []byte("s")); err != nil || string(it.Value) != "secret" {
				t.Fatalf("pw %q enabled %v: %q, %v", pw, enabled, it.Value, err)
			}
		}
	}
}

// readBinStatus reads one binary response and returns its status.
func readBinStatus(t *testing.T, c net.Conn) uint16 {
	t.Helper()
	h := make([]byte, binaryHeaderLen)
	if _, err := io.ReadFull(c, h); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(h[8:]))
	if _, err := io.ReadFull(c, body); err != nil {
		t.Fatal(err)
	}
	return binary.BigEndian.Uint16(h[6:])
}
