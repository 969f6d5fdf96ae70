package main

import (
	"context"
	"fmt"
	"io"
)

// benchMain runs `anykv bench`.
func benchMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "anykv bench: not wired yet")
	return 2
}
