package httpapi

import (
	"context"
	"net/http"

	"anykv/internal/engine"
)

// hdrConsistency carries the read level as a header, for clients that cannot add a query parameter.
const hdrConsistency = "X-Anykv-Consistency"

// readCtx returns the context of a read route's engine reads: r's, carrying the level the request asks for with
// ?consistency= or the X-Anykv-Consistency header (both must agree), or r's as it is to take the server default.
// An unknown level is a 400; a level the engine cannot serve is refused by the store (501 not_supported).
func readCtx(r *http.Request) (context.Context, error) {
	q, h := r.URL.Query().Get("consistency"), r.Header.Get(hdrConsistency)
	if n := len(r.Header.Values(hdrConsistency)); n > 1 {
		return nil, badRequest("header %s given %d times", hdrConsistency, n)
	}
	name := q
	switch {
	case q == "":
		name = h
	case h != "" && h != q:
		return nil, badRequest("consistency=%s and %s: %s disagree", q, hdrConsistency, h)
	}
	if name == "" {
		return r.Context(), nil
	}
	c, err := engine.ParseConsistency(name)
	if err != nil {
		return nil, badRequest("%v", err)
	}
	return engine.WithConsistency(r.Context(), c), nil
}
