package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// backupMain is `anykv backup`: it asks the running server at --resp to write a consistent copy of its data into
// DEST (BACKUP DEST over RESP) and waits until the copy is complete. The copy is written by the server, so DEST
// is a path on the server's machine; a server started with --dir DEST serves the copy.
func backupMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("anykv backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("resp", envString("resp", "127.0.0.1:6379"), "RESP address of the running server"+envNote("resp"))
	password := fs.String("requirepass", envString("requirepass", ""), "the server's password, if it has one"+envNote("requirepass"))
	timeout := fs.Duration("timeout", 10*time.Minute, "how long to wait for the copy")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: anykv backup [flags] DEST\n\nHas the running anykv at --resp write a consistent copy of its data into the new directory DEST\n"+
			"(on the server's machine) while it keeps serving. Start a server on the copy with --dir DEST.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	dest, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "anykv backup:", err)
		return 2
	}
	c := goredis.NewClient(&goredis.Options{Addr: *addr, Password: *password, MaxRetries: -1, DisableIdentity: true,
		Protocol: 2, ReadTimeout: *timeout, WriteTimeout: 10 * time.Second})
	defer c.Close()
	start := time.Now()
	if err := c.Do(ctx, "BACKUP", dest).Err(); err != nil {
		fmt.Fprintf(stderr, "anykv backup: %s: %v\n", *addr, err)
		return 1
	}
	fmt.Fprintf(stdout, "backup of %s written to %s in %s\n", *addr, dest, time.Since(start).Round(time.Millisecond))
	return 0
}
