package dial_test

import (
	"context"
	"fmt"
	"net"
	neturl "net/url"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"anykv/internal/engine/remote/dial"
	"anykv/internal/engine/remote/remotetest"
	"anykv/internal/servertest"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestOpenErrorsAreOneLine(t *testing.T) {
	addr := closedPort(t)
	for _, c := range []struct{ url, want string }{
		{"postgres://bob:secret@" + addr + "/db", "postgres://bob:xxxxx@" + addr + "/db: cannot connect: "},
		{"redis://:secret@" + addr + "/0", "redis://:xxxxx@" + addr + "/0: cannot connect: "},
		{"etcd://" + addr, "etcd://" + addr + ": cannot connect: "},
		{"mysql://bob:secret@" + addr + "/db", "mysql://bob:xxxxx@" + addr + "/db: cannot connect: "},
		{"mariadb://bob:secret@" + addr + "/db", "mariadb://bob:xxxxx@" + addr + "/db: cannot connect: "},
		{"mysql://bob:secret@h:3306", "bad URL: want mysql://user:pw@host:port/database"},
		{"mysql://bob:secret@h:3306/db?charset=latin1", `bad URL: unknown parameter "charset"`},
		{"mysql://bob:secret@h:3306/db?tls=maybe", "bad URL"},
		{"redis://" + addr + "/notanumber", "bad URL"},
		{"postgres://x@h:99999999/db", "bad URL"},
		{"etcd:///", "bad URL"},
		{"cassandra://bob:secret@" + addr + "/ks", "cassandra://bob:xxxxx@" + addr + "/ks: cannot connect: "},
		{"cassandra://" + addr, "bad URL: want cassandra://host:port[,host:port...]/keyspace"},
		{"cassandra://h:9042/no-dash", "bad URL: want cassandra://host:port[,host:port...]/keyspace"},
		{"cassandra://h:9042/ks?consistency=one", `bad URL: unknown parameter "consistency"`},
		{"cassandra://h:9042/ks?partition=", `bad URL: partition="": want partition=NAME`},
		{"cassandra://h:9042/ks?read=all", `bad URL: read="all": want partition=NAME, read=quorum|serial|one`},
		{"nosuch://h", `unknown scheme "nosuch"`},
		{"postgres://%zz", "bad URL"},
		// A password with a reserved character left unescaped makes the URL unparseable: the error must not
		// echo it, neither in the URL named nor in the parser's complaint (which quotes the URL, or a piece of
		// the password taken for a port).
		{"postgres://bob:secret#1@h:5432/db", "postgres://bob:xxxxx@h:5432/db: bad URL"},
		{"redis://:secret/1@h:6379/0", "redis://:xxxxx@h:6379/0: bad URL"},
		{"mysql://bob:secret?1@h:3306/db", "mysql://bob:xxxxx@h:3306/db: bad URL"},
		{"etcd://bob:secret 1@h:2379", "etcd://bob:xxxxx@h:2379: bad URL"},
		{"redis-cluster://u:secret%zz@h:1", "redis-cluster://u:xxxxx@h:1: bad URL"},
		{"cassandra://bob:sec#ret@h:9042/ks", "cassandra://bob:xxxxx@h:9042/ks: bad URL"},
		// One whose reserved character follows digits parses, as host "bob" with that port: still refused.
		{"postgres://bob:2024/secret@h:5432/db", "postgres://bob:xxxxx@h:5432/db: bad URL"},
		{"redis://:123?secret@h:6379/0", "redis://:xxxxx@h:6379/0: bad URL"},
		{"mysql://bob:12#secret@h:3306/db", "mysql://bob:xxxxx@h:3306/db: bad URL"},
		// libpq's (and pgx's) password parameter is a password as much as the userinfo's.
		{"postgres://bob@" + addr + "/db?password=secret", "postgres://bob@" + addr + "/db?password=xxxxx: cannot connect: "},
	} {
		_, err := dial.Open(context.Background(), c.url)
		if err == nil {
			t.Fatalf("%s: opened", c.url)
		}
		msg := err.Error()
		if !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") || strings.Contains(msg, "secret") ||
			strings.Contains(msg, "sec") || strings.Contains(msg, "ret@") {
			t.Errorf("%s: error %q, want one line containing %q and no password", c.url, msg, c.want)
		}
	}
}

// TestTwoBinaries runs two real anykv processes over one datastore and races INCR through both with go-redis:
// the final counter must equal the number of acknowledged increments.
func TestTwoBinaries(t *testing.T) {
	for _, c := range []struct{ deploy, scheme string }{
		{"postgres", ""}, {"redis-nopersist", "redis"}, {"etcd", ""}, {"mariadb", ""}, {"cassandra", ""},
	} {
		t.Run(c.deploy, func(t *testing.T) {
			url := remotetest.Start(t, c.deploy)
			if c.scheme != "" {
				url = c.scheme + url[strings.Index(url, "://"):] + "/0"
			}
			if c.deploy == "cassandra" {
				url += "/anykv_e2e"
			}
			if c.deploy == "postgres" { // a role the server refuses: one line, password hidden
				u, _ := neturl.Parse(url) // the target's URL carries its password: another role's in its place
				u.User = neturl.UserPassword("nosuch", "secret")
				_, err := dial.Open(context.Background(), u.String())
				if err == nil || !strings.Contains(err.Error(), "cannot connect: ") || !strings.Contains(err.Error(), "nosuch") ||
					strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "\n") {
					t.Fatalf("wrong credentials: %v", err)
				}
				t.Log(err)
			}
			if c.deploy == "mariadb" { // a wrong password: one line, password hidden
				u, _ := neturl.Parse(url)
				u.User = neturl.UserPassword(u.User.Username(), "secret")
				_, err := dial.Open(context.Background(), u.String())
				if err == nil || !strings.Contains(err.Error(), "cannot connect: ") || !strings.Contains(err.Error(), "Access denied") ||
					strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "\n") {
					t.Fatalf("wrong password: %v", err)
				}
				t.Log(err)
				u.User = neturl.User("root") // the deployment leaves root no way in over TCP
				if _, err := dial.Open(context.Background(), u.String()); err == nil || !strings.Contains(err.Error(), "Access denied") {
					t.Fatalf("root without a password over TCP: %v", err)
				}
			}
			var clients []*redis.Client
			for i := 0; i < 2; i++ {
				s := servertest.Start(t, servertest.Options{Engine: url})
				rc := redis.NewClient(&redis.Options{Addr: s.RESP})
				defer rc.Close()
				clients = append(clients, rc)
			}
			ctx := context.Background()
			var wg sync.WaitGroup
			var mu sync.Mutex
			acked := 0
			for w := 0; w < 6; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rc := clients[w%2]
					for i := 0; i < 30; i++ {
						if err := rc.Incr(ctx, "ctr").Err(); err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						acked++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			for _, rc := range clients {
				got, err := rc.Get(ctx, "ctr").Result()
				if err != nil {
					t.Fatal(err)
				}
				if got != fmt.Sprint(acked) {
					t.Fatalf("ctr = %s after %d acknowledged INCRs", got, acked)
				}
			}
			// A value written through one front end is read through the other.
			if err := clients[0].Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if got, err := clients[1].Get(ctx, "k").Result(); err != nil || got != "v" {
				t.Fatalf("GET through the other front end = %q, %v", got, err)
			}
		})
	}
}

// Redact hides every password a URL can carry (it names the engine in the log and in CONFIG GET engine) and
// leaves a URL without one as it is.
func TestRedact(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"postgres://bob:secret@h:5432/db", "postgres://bob:xxxxx@h:5432/db"},
		{"postgres://bob@h/db?sslmode=disable&password=secret", "postgres://bob@h/db?sslmode=disable&password=xxxxx"},
		{"postgres://bob@h/db?sslpassword=secret&sslmode=require", "postgres://bob@h/db?sslpassword=xxxxx&sslmode=require"},
		{"redis://:secret#1@h:6379/0", "redis://:xxxxx@h:6379/0"},
		{"postgres://bob:2024/secret@h:5432/db", "postgres://bob:xxxxx@h:5432/db"},
		{"redis://:123?secret@h:6379/0", "redis://:xxxxx@h:6379/0"},
		{"postgres://h:5432/db?user=bob@corp", "postgres://h:5432/db?user=bob@corp"},
		{"etcd://h1:2379,h2:2379?prefix=p/", "etcd://h1:2379,h2:2379?prefix=p/"},
		{"cassandra://h:9042/ks?partition=a&slots=4", "cassandra://h:9042/ks?partition=a&slots=4"},
		{"memcached://h:11211", "memcached://h:11211"},
	} {
		if got := dial.Redact(c.url); got != c.want || strings.Contains(got, "secret") {
			t.Errorf("Redact(%q) = %q, want %q", c.url, got, c.want)
		}
	}
}
