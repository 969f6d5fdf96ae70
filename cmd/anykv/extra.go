package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"anykv/internal/kv"
	"anykv/internal/server"
)

// extraConfig holds the listeners beside RESP (memcached, HTTP); they are wired here as they land.
type extraConfig struct{}

func (e *extraConfig) define(fs *flag.FlagSet, str func(*string, string, string, string), num func(*int, string, int, string)) {
}

func (e *extraConfig) listen(srv *server.Server, store *kv.Store, c *config, log *slog.Logger) error {
	return nil
}

func benchMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "anykv bench: not wired yet")
	return 2
}
