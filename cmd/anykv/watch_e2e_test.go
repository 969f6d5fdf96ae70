package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"
	goredis "github.com/redis/go-redis/v9"

	"anykv/internal/servertest"
)

// TestWatchAbortsOnCreateAndDelete: a WATCHed key that another client creates and deletes again before EXEC
// aborts the transaction, as in Redis, whether the writer speaks RESP, memcached or HTTP; a watched key nobody
// wrote lets EXEC run. The key ends absent as it began, so only the touched-key registry can tell.
func TestWatchAbortsOnCreateAndDelete(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Memcache: true, HTTP: true})
	rc := client(t, s.RESP)
	mc := memcache.New(s.Memcache)
	writers := map[string]func(key string){
		"resp": func(key string) {
			if err := rc.Set(ctx, key, "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rc.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
		},
		"memcache": func(key string) {
			if err := mc.Set(&memcache.Item{Key: key, Value: []byte("v")}); err != nil {
				t.Fatal(err)
			}
			if err := mc.Delete(key); err != nil {
				t.Fatal(err)
			}
		},
		"http": func(key string) {
			url := "http://" + s.HTTP + "/v1/tables/default/keys/" + key
			for _, method := range []string{"PUT", "DELETE"} {
				req, _ := http.NewRequest(method, url, strings.NewReader("v"))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode >= 300 {
					t.Fatalf("%s %s: %s", method, url, resp.Status)
				}
			}
		},
	}
	for name, write := range writers {
		t.Run(name, func(t *testing.T) {
			key := "watched-" + name
			for _, touch := range []bool{false, true} {
				tx := client(t, s.RESP)
				err := tx.Watch(ctx, func(x *goredis.Tx) error {
					if touch {
						write(key)
					}
					_, err := x.TxPipelined(ctx, func(p goredis.Pipeliner) error {
						p.Set(ctx, key+":done", "1", 0)
						return nil
					})
					return err
				}, key)
				switch {
				case touch && err != goredis.TxFailedErr:
					t.Fatalf("EXEC after a create and delete by %s: %v, want the transaction aborted", name, err)
				case !touch && err != nil:
					t.Fatalf("EXEC with the watched key untouched: %v", err)
				}
			}
		})
	}
}
