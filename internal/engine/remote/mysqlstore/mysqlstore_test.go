package mysqlstore

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/remote/remotetest"

	"github.com/go-sql-driver/mysql"
)

var dbs atomic.Int64

// sqlDB connects to url with database/sql, for statements a test runs itself.
func sqlDB(t *testing.T, url string) *sql.DB {
	t.Helper()
	cfg, err := Config(url)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// freshDB creates an empty database on the server for one test and returns its URL.
func freshDB(t *testing.T, server string) string {
	t.Helper()
	db := sqlDB(t, server)
	name := fmt.Sprintf("t%d", dbs.Add(1))
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	return server[:strings.LastIndex(server, "/")+1] + name
}

func open(t *testing.T, url string) *Store {
	return remotetest.Open(t, Open, url)
}

func TestMariaDB(t *testing.T) {
	server := remotetest.Start(t, "mariadb")
	fresh := func(t *testing.T) string { return freshDB(t, server) }
	remotetest.Suite(t, fresh, Open, engine.CanScan|engine.CanTables|engine.CanSweep)
	t.Run("CommitOutcomeUnknown", func(t *testing.T) { testCommitOutcomeUnknown(t, server) })
	t.Run("RefusedCommitAppliesNothing", func(t *testing.T) { testRefusedCommitAppliesNothing(t, server) })
	t.Run("LongKeyIsBadInput", func(t *testing.T) { testLongKeyIsBadInput(t, server) })
	t.Run("LockWaitRetried", func(t *testing.T) { testLockWaitRetried(t, server) })
	t.Run("RefusalIsTheBatchsOwn", func(t *testing.T) { testRefusalIsTheBatchsOwn(t, server) })
	t.Run("PacketAboveDriverDefault", func(t *testing.T) { testPacketAboveDriverDefault(t, server) })
	t.Run("ServerAutocommitOff", func(t *testing.T) { testServerAutocommitOff(t, server) })
	t.Run("ServerCharsetCannotInject", func(t *testing.T) { testServerCharsetCannotInject(t, server) })
	t.Run("ServerSafeUpdates", func(t *testing.T) { testServerSafeUpdates(t, server) })
	t.Run("ServerReadUncommitted", func(t *testing.T) { testServerReadUncommitted(t, server) })
}

// TestUnreachable: a lost or missing connection is unavailable (503); the server's refusal of a statement is not.
func TestUnreachable(t *testing.T) {
	b := &backend{}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("read: %w", mysql.ErrInvalidConn), true},
		{driver.ErrBadConn, true},
		{&mysql.MySQLError{Number: 1146, Message: "Table doesn't exist"}, false},
		{errors.New("other"), false},
	} {
		if got := b.Unreachable(c.err); got != c.want {
			t.Errorf("Unreachable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
