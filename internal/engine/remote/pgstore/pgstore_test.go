package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	neturl "net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
	"anykv/internal/engine/remote/pgstore"
	"anykv/internal/engine/remote/remotetest"
)

var dbs atomic.Int64

// freshDB creates an empty database on the server for one test and returns its URL.
func freshDB(t *testing.T, server string) string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	name := fmt.Sprintf("t%d", dbs.Add(1))
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	u, err := neturl.Parse(server) // its user and password too: the deployed server asks TCP clients for it
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func TestPostgres(t *testing.T) {
	server := remotetest.Start(t, "postgres")
	fresh := func(t *testing.T) string { return freshDB(t, server) }
	remotetest.Suite(t, fresh, pgstore.Open, engine.CanScan|engine.CanTables|engine.CanSweep)
}

// TestFlushOrdersWithRename: RENAME k k2 racing FLUSHDB from another front end. When both report success, one ran
// before the other, and no order leaves k2 behind. Without the table locks the flush's DELETE (READ COMMITTED)
// waited for the rename's row lock but did not see the row it inserted: k2 survived in most rounds.
func TestFlushOrdersWithRename(t *testing.T) {
	url := freshDB(t, remotetest.Start(t, "postgres"))
	s1, s2 := remotetest.Open(t, pgstore.Open, url), remotetest.Open(t, pgstore.Open, url)
	ctx := context.Background()
	apply := func(s engine.Engine, m engine.Mutation) ([]engine.Result, error) {
		return s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{m}})
	}
	renamed := 0
	for i := 0; i < 150; i++ {
		if _, err := apply(s1, engine.Mutation{Op: engine.OpSet, Table: "T", Key: []byte("k"), Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
		var rres []engine.Result
		var rerr, ferr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			rres, rerr = apply(s1, engine.Mutation{Op: engine.OpRename, Table: "T", Key: []byte("k"),
				Target: engine.Target{Table: "T", Key: []byte("k2")}})
		}()
		_, ferr = apply(s2, engine.Mutation{Op: engine.OpFlush, Table: "T"})
		<-done
		if rerr != nil || ferr != nil {
			t.Fatalf("round %d: rename %v, flush %v", i, rerr, ferr)
		}
		if rres[0].Err == nil {
			renamed++
			if _, err := s1.Get(ctx, "T", []byte("k2"), 1); err == nil {
				t.Fatalf("round %d: k2, written by a RENAME that read k, survived a FLUSHDB that committed after it", i)
			}
		}
		if _, err := apply(s1, engine.Mutation{Op: engine.OpFlush, Table: "T"}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d of 150 renames succeeded", renamed)
}

// TestStalledServerFailsInTime: a PostgreSQL that stops answering (SIGSTOP, a partition dropping packets) fails
// a request once the engine's Timeout passes, instead of holding the client as long as the stall lasts (the
// audit: 40 s), and the engine works again once the server answers.
func TestStalledServerFailsInTime(t *testing.T) {
	s, p := openStalling(t)
	s.Timeout = time.Second
	ctx := context.Background()
	set := func() error {
		_, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("k"), Value: []byte("v")}}})
		return err
	}
	if err := set(); err != nil {
		t.Fatal(err)
	}
	p.Stalled.Store(true)
	start := time.Now()
	err := set()
	if took := time.Since(start); err == nil || took > 10*time.Second {
		t.Fatalf("a write to a stalled server: %v after %v; want an error within a few seconds", err, took)
	}
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, remote.ErrUnknownOutcome) {
		t.Fatalf("a write to a stalled server: %v; want a timeout or an unknown outcome", err)
	}
	start = time.Now()
	if _, err := s.Get(ctx, "t", []byte("k"), 1); err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("a read from a stalled server: %v after %v", err, time.Since(start))
	}
	p.Stalled.Store(false)
	deadline := time.Now().Add(20 * time.Second)
	for err := set(); err != nil; err = set() {
		if time.Now().After(deadline) {
			t.Fatalf("the engine does not recover once the server answers again: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestStalledServerFailsScansInTime: a scan (KEYS, SCAN, range queries), the table list and the expiry sweep of a
// stalled PostgreSQL fail once the engine's Timeout passes, per page or query, as Get and Apply do (they ran
// unbounded, for as long as the stall lasted).
func TestStalledServerFailsScansInTime(t *testing.T) {
	s, p := openStalling(t)
	defer s.Close()
	s.Timeout = 300 * time.Millisecond
	remotetest.StalledScans(t, s, s.Timeout, p)
}

// openStalling opens the engine over a fresh database of a new server, through a Stall proxy.
func openStalling(t *testing.T) (*pgstore.Store, *remotetest.Stall) {
	u, err := neturl.Parse(freshDB(t, remotetest.Start(t, "postgres")))
	if err != nil {
		t.Fatal(err)
	}
	p := remotetest.StartStall(t, u.Host)
	u.Host = p.Addr
	return remotetest.Open(t, pgstore.Open, u.String()), p
}

// TestCommitChecksUnderRepeatableReadDefault: a database whose default_transaction_isolation is repeatable read
// (a DBA's choice) must not weaken the commit's check. There, the commit's implicit transaction took its
// snapshot at its first statement, before anykv_lock waited for the key locks, so a key another commit inserted
// while this one waited looked still absent: a WATCH-style guard on it passed and the batch's other write was
// applied although the guarded key had changed. The test holds k1's key lock in a transaction that inserts k1
// (as another front end's commit would), starts a commit guarded on k1 being absent, then commits the insert.
func TestCommitChecksUnderRepeatableReadDefault(t *testing.T) {
	server := remotetest.Start(t, "postgres")
	url := freshDB(t, server)
	ctx := context.Background()
	side, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer side.Close(ctx)
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	name := u.Path[1:]
	if _, err := side.Exec(ctx, "ALTER DATABASE "+name+" SET default_transaction_isolation = 'repeatable read'"); err != nil {
		t.Fatal(err)
	}
	s := remotetest.Open(t, pgstore.Open, url)
	defer s.Close()
	// The key lock pgstore takes for T/k1 (FNV-1a of table, NUL, key).
	h := fnv.New64a()
	h.Write([]byte("T\x00k1"))
	lock := int64(h.Sum64())
	tx, err := side.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lock); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO anykv_items (tbl, key, value, flags, expires, version)
		VALUES ('T'::bytea, 'k1'::bytea, 'x'::bytea, 0, 0, nextval('anykv_version'))`); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		res []engine.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{
			{Op: engine.OpCheck, Table: "T", Key: []byte("k1"), Cond: engine.CondAbsent, Guard: true},
			{Op: engine.OpSet, Table: "T", Key: []byte("k2"), Value: []byte("v")},
		}})
		done <- outcome{res, err}
	}()
	// Wait until the commit waits for k1's lock.
	for deadline := time.Now().Add(10 * time.Second); ; {
		var waiting int
		if err := side.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the commit never waited for k1's lock")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err == nil && o.res[0].Err == nil {
		t.Fatal("the guard on k1 being absent passed, though k1 was inserted before the commit took its lock")
	}
	if _, err := s.Get(ctx, "T", []byte("k2"), 1); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("k2 was written by a batch whose guard on k1 failed: Get = %v", err)
	}
}

// TestReadAfterServerClosedConnections: when PostgreSQL closes the pool's connections (a restart,
// pg_terminate_backend), the next reads are served on new ones. The first read on each closed connection
// answered the raw `FATAL: terminating connection due to administrator command (SQLSTATE 57P01)`.
func TestReadAfterServerClosedConnections(t *testing.T) {
	server := remotetest.Start(t, "postgres")
	url := freshDB(t, server)
	s := remotetest.Open(t, pgstore.Open, url)
	ctx := context.Background()
	for i := 0; i < 4; i++ { // a few pooled connections
		if _, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t",
			Key: []byte(fmt.Sprint("k", i)), Value: []byte("v")}}}); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	u, _ := neturl.Parse(url)
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`,
		u.Path[1:]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the FATAL message reaches the connections
	for i := 0; i < 4; i++ {
		if it, err := s.Get(ctx, "t", []byte(fmt.Sprint("k", i)), 1); err != nil || string(it.Value) != "v" {
			t.Fatalf("GET k%d after the server closed the connections: %q, %v", i, it.Value, err)
		}
		if _, err := s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpIncr, Table: "t",
			Key: []byte(fmt.Sprint("n", i)), Incr: engine.IncrArgs{Delta: 1, Create: true}}}}); err != nil {
			t.Fatalf("INCR after the server closed the connections: %v", err)
		}
	}
}
