package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"anykv/internal/auth"
	"anykv/internal/kv"
	"anykv/internal/protocol/errmap"
)

type openapiDoc struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components map[string]map[string]json.RawMessage `json:"components"`
}

func loadSpec(t *testing.T) openapiDoc {
	t.Helper()
	var doc openapiDoc
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	return doc
}

var httpMethods = []string{"get", "head", "put", "post", "delete", "patch", "options", "trace"}

// TestOpenAPIMatchesRoutes checks that every registered route is documented and every documented operation is
// registered, and that each route's request reaches that route's own handler.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	doc := loadSpec(t)
	documented := map[string]bool{}
	for path, item := range doc.Paths {
		for m := range item {
			if slices.Contains(httpMethods, m) {
				documented[strings.ToUpper(m)+" "+path] = true
			}
		}
	}
	registered := map[string]bool{}
	for _, rt := range routes() {
		op := rt.method + " " + rt.openapiPath()
		if registered[op] {
			t.Errorf("route %s registered twice", op)
		}
		registered[op] = true
		if !documented[op] {
			t.Errorf("route %s is not in openapi.json", op)
		}
	}
	for op := range documented {
		if !registered[op] {
			t.Errorf("openapi.json documents %s, which no route serves", op)
		}
	}
	if len(registered) < 15 {
		t.Fatalf("only %d routes", len(registered))
	}

	// Each route answers with its own handler: its metrics observer counts the request.
	f := newFixture(t, Options{}, kv.Limits{})
	for _, rt := range routes() {
		target := strings.NewReplacer("{table}", "t", "{key}", "k").Replace(rt.openapiPath())
		obs := f.metrics.Command("http", rt.command)
		before := obs.Requests()
		rec := f.do(rt.method, target, "")
		if obs.Requests() != before+1 {
			t.Errorf("%s %s (status %d) did not reach the %q handler", rt.method, target, rec.Code, rt.command)
		}
	}
}

// TestOpenAPIIsSelfConsistent resolves every $ref, checks that each path template's parameters are declared, and
// that every error code the API can answer is in the Error schema's enum.
func TestOpenAPIIsSelfConsistent(t *testing.T) {
	doc := loadSpec(t)
	var whole any
	json.Unmarshal(openapiJSON, &whole)
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				parts := strings.Split(strings.TrimPrefix(ref, "#/components/"), "/")
				if len(parts) != 2 || doc.Components[parts[0]][parts[1]] == nil {
					t.Errorf("unresolved $ref %q", ref)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(whole)

	type param struct {
		Ref  string `json:"$ref"`
		Name string `json:"name"`
		In   string `json:"in"`
	}
	resolve := func(p param) param {
		if p.Ref != "" {
			json.Unmarshal(doc.Components["parameters"][strings.TrimPrefix(p.Ref, "#/components/parameters/")], &p)
		}
		return p
	}
	tmpl := regexp.MustCompile(`\{(\w+)\}`)
	for path, item := range doc.Paths {
		var want []string
		for _, m := range tmpl.FindAllStringSubmatch(path, -1) {
			want = append(want, m[1])
		}
		sort.Strings(want)
		for m, raw := range item {
			var op struct {
				Parameters []param                    `json:"parameters"`
				Responses  map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", m, path, err)
			}
			var got []string
			for _, p := range op.Parameters {
				if p = resolve(p); p.In == "path" {
					got = append(got, p.Name)
				}
			}
			sort.Strings(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s %s declares path parameters %v, want %v", m, path, got, want)
			}
			if len(op.Responses) == 0 {
				t.Errorf("%s %s has no responses", m, path)
			}
		}
	}

	var errSchema struct {
		Properties struct {
			Error struct {
				Properties struct {
					Code struct {
						Enum []string `json:"enum"`
					} `json:"code"`
				} `json:"properties"`
			} `json:"error"`
		} `json:"properties"`
	}
	json.Unmarshal(doc.Components["schemas"]["Error"], &errSchema)
	codes := errSchema.Properties.Error.Properties.Code.Enum
	used := []string{"bad_request", "unauthorized", "method_not_allowed", "internal", "too_large"}
	used = append(used, errmap.Codes()...)
	for _, e := range []error{errNoRoute, errUnauthorized, errPrecondition, errProtectedMode, errTooManyClients,
		bodyError(os.ErrDeadlineExceeded)} {
		used = append(used, e.(*apiError).code)
	}
	for _, c := range used {
		if !slices.Contains(codes, c) {
			t.Errorf("error code %q is missing from the Error schema", c)
		}
	}
}

func TestOpenAPIServed(t *testing.T) {
	f := newFixture(t, Options{Auth: auth.New("p")}, kv.Limits{})
	wantError(t, f.do("GET", "/v1/openapi.json", ""), http.StatusUnauthorized, "unauthorized")
	rec := f.do("GET", "/v1/openapi.json", "", "Authorization", "Bearer p")
	wantStatus(t, rec, http.StatusOK)
	if rec.Header().Get("Content-Type") != "application/json" || !bytes.Equal(rec.Body.Bytes(), openapiJSON) {
		t.Fatal("served document differs from the embedded one")
	}
}
