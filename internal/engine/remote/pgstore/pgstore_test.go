package pgstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"anykv/internal/engine"
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
	cfg := c.Config()
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
}

func TestPostgres(t *testing.T) {
	server := remotetest.Start(t, "postgres")
	fresh := func(t *testing.T) string { return freshDB(t, server) }
	remotetest.Suite(t, fresh, pgstore.Open, engine.CanScan|engine.CanTables|engine.CanSweep)
}
