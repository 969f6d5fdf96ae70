package mysqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/remote/mysqlstore"
	"anykv/internal/engine/remote/remotetest"
)

var dbs atomic.Int64

// freshDB creates an empty database on the server for one test and returns its URL.
func freshDB(t *testing.T, server string) string {
	t.Helper()
	cfg, err := mysqlstore.Config(server)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := fmt.Sprintf("t%d", dbs.Add(1))
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	return server[:strings.LastIndex(server, "/")+1] + name
}

func open(t *testing.T, url string) engine.Engine {
	t.Helper()
	s, err := mysqlstore.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMariaDB(t *testing.T) {
	server := remotetest.Start(t, "mariadb")
	t.Run("Conformance", func(t *testing.T) {
		enginetest.Run(t, func(t *testing.T) engine.Engine { return open(t, freshDB(t, server)) }, engine.CanScan|engine.CanTables|engine.CanSweep)
	})
	t.Run("TwoFrontEnds", func(t *testing.T) {
		url := freshDB(t, server)
		remotetest.RaceFrontEnds(t, func(t *testing.T) engine.Engine { return open(t, url) })
	})
	t.Run("CommitOutcomeUnknown", func(t *testing.T) { testCommitOutcomeUnknown(t, server) })
	t.Run("RefusedCommitAppliesNothing", func(t *testing.T) { testRefusedCommitAppliesNothing(t, server) })
}
