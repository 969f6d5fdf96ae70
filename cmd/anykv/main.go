// Command anykv is the anykv key-value server and its tools. `anykv serve` runs the server; `anykv bench`
// runs the evaluation harness. This is the one place where the pieces are wired together.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is anykv's own version, reported by INFO, memcached's version command and the HTTP API.
const version = "0.1.0"

const usage = `anykv — one durable key-value store for Redis, memcached and HTTP clients.

Usage:
  anykv serve [flags]     run the server (anykv serve --help lists every flag)
  anykv bench [flags]     run the datastore evaluation harness (anykv bench --help)
  anykv backup DEST       have a running server write a consistent copy of its data into DEST
  anykv cluster up|down   a local etcd cluster for anykv front ends (anykv cluster for help)
  anykv verify DIR        check a stopped store's files completely (exit 0 healthy, 1 damaged)
  anykv version           print the version

Every flag can also be set by an environment variable: --fsync always is ANYKV_FSYNC=always.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	sigs := []os.Signal{syscall.SIGINT, syscall.SIGTERM}
	if (args[0] == "bench" || args[0] == "cluster") && !signal.Ignored(syscall.SIGHUP) {
		// A closed terminal tears the bench's servers down as Ctrl-C does: killed outright, it left the members
		// of its cluster targets (detached, as anykv cluster up starts them) running. cluster up, like on
		// Ctrl-C, finishes and records its members for cluster down: killed outright, it left them running and
		// recorded nowhere. Not under nohup: Notify would take back the SIGHUP nohup ignores.
		sigs = append(sigs, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	defer stop()
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "bench":
		return benchMain(ctx, args[1:], stdout, stderr)
	case "backup":
		return backupMain(ctx, args[1:], stdout, stderr)
	case "cluster":
		return clusterMain(args[1:], stdout, stderr)
	case "verify":
		return verifyMain(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "anykv", version)
		return 0
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "anykv: unknown command %q\n\n%s", args[0], usage)
	return 2
}
