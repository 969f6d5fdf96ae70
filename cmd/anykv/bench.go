package main

import (
	"context"
	"io"

	"anykv/internal/bench"
)

// benchMain runs `anykv bench`: the evaluation harness lives in internal/bench; this is its thin command.
func benchMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return bench.Main(ctx, args, stdout, stderr)
}
