package httpapi

import (
	_ "embed"
	"net/http"
	"strconv"
)

// openapiJSON is the OpenAPI 3 description of every route. It is written by hand, for readers; a test checks it
// against the route table in both directions, so that neither can drift from the other.
//
//go:embed openapi.json
var openapiJSON []byte

func (a *api) openapi(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(openapiJSON)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	_, err := w.Write(openapiJSON)
	return err
}
