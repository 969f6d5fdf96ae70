package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// queryParams lists, per route ("GET /v1/tables/{table}/keys"), the query parameters it takes, read from
// openapi.json: the description every client reads is also the rule the server applies, so an unknown parameter
// (a typo such as ?limt=5, or a parameter of another route) is refused instead of silently ignored.
var queryParams = mustQueryParams(openapiJSON)

func mustQueryParams(spec []byte) map[string][]string {
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]openapiParam `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(spec, &doc); err != nil {
		panic(fmt.Sprintf("httpapi: openapi.json: %v", err))
	}
	out := map[string][]string{}
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			var op struct {
				Parameters []openapiParam `json:"parameters"`
			}
			if method == "parameters" || json.Unmarshal(raw, &op) != nil {
				continue
			}
			names := []string{}
			for _, p := range op.Parameters {
				if p.Ref != "" {
					p = doc.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
				}
				if p.In == "query" {
					names = append(names, p.Name)
				}
			}
			slices.Sort(names)
			out[strings.ToUpper(method)+" "+path] = names
		}
	}
	return out
}

type openapiParam struct {
	Ref  string `json:"$ref"`
	Name string `json:"name"`
	In   string `json:"in"`
}

// checkParams rejects, on the /v1 routes, a query string that does not parse (r.URL.Query would silently drop
// the malformed parameter, say a cursor, and answer the first page), one that repeats a parameter (each has a
// single value: taking the first of two would hide a client's mistake), and one the route does not take. The
// Active Cloud DB routes keep that API's leniency.
func checkParams(r *http.Request, rt route) error {
	if rt.compat {
		return nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return badRequest("malformed query string: %v", err)
	}
	known := queryParams[rt.method+" "+rt.openapiPath()]
	for name, vs := range q {
		if len(vs) > 1 {
			return badRequest("query parameter %q given %d times", name, len(vs))
		}
		if !slices.Contains(known, name) {
			if len(known) == 0 {
				return badRequest("unknown query parameter %q: this route takes none", name)
			}
			return badRequest("unknown query parameter %q: this route takes %s", name, strings.Join(known, ", "))
		}
	}
	return nil
}
