package driver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// httpDriver speaks anykv's HTTP/JSON API:
//
//	GET|PUT|DELETE /v1/tables/{table}/keys/{key}      (raw value body)
//	GET /v1/tables/{table}/keys?prefix=&limit=&cursor= -> {"keys":[...],"cursor":"..."}
//	GET /v1/tables/{table}/count?prefix=              -> {"count":N}
//
// Scan pages may also be anykv's {"items":[{"key":...}],"cursor":"..."}.
// The no-op is GET /healthz (anykv's health check); any response below 500
// counts as a round trip.
type httpDriver struct {
	base string
	c    *http.Client
}

func openHTTP(u *url.URL, opt Options) (Driver, error) {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: opt.Timeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        opt.Conns * 2,
		MaxIdleConnsPerHost: opt.Conns * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	base := strings.TrimRight(u.Scheme+"://"+u.Host+u.Path, "/")
	return &httpDriver{base: base, c: &http.Client{Transport: tr, Timeout: opt.Timeout}}, nil
}

func (d *httpDriver) Kind() string { return "http" }
func (d *httpDriver) Caps() Caps   { return CapScan | CapCount }
func (d *httpDriver) Settings() string {
	return fmt.Sprintf("HTTP/1.1 keep-alive to %s/v1/tables/{table}/keys/{key}, scan via ?prefix= pages, no-op GET /healthz", d.base)
}

func (d *httpDriver) keyURL(table, key string) string {
	return d.base + "/v1/tables/" + url.PathEscape(table) + "/keys/" + url.PathEscape(key)
}

func (d *httpDriver) do(ctx context.Context, method, u string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	resp, err := d.c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, b, nil
}

func statusErr(method, u string, code int, body []byte) error {
	if len(body) > 200 {
		body = body[:200]
	}
	return fmt.Errorf("http: %s %s: status %d: %s", method, u, code, strings.TrimSpace(string(body)))
}

func (d *httpDriver) Get(ctx context.Context, table, key string) ([]byte, bool, error) {
	u := d.keyURL(table, key)
	code, b, err := d.do(ctx, http.MethodGet, u, nil)
	switch {
	case err != nil:
		return nil, false, err
	case code == http.StatusOK:
		return b, true, nil
	case code == http.StatusNotFound:
		return nil, false, nil
	}
	return nil, false, statusErr("GET", u, code, b)
}

func (d *httpDriver) Put(ctx context.Context, table, key string, value []byte) error {
	u := d.keyURL(table, key)
	code, b, err := d.do(ctx, http.MethodPut, u, value)
	if err != nil {
		return err
	}
	if code/100 != 2 {
		return statusErr("PUT", u, code, b)
	}
	return nil
}

func (d *httpDriver) Delete(ctx context.Context, table, key string) (bool, error) {
	u := d.keyURL(table, key)
	code, b, err := d.do(ctx, http.MethodDelete, u, nil)
	switch {
	case err != nil:
		return false, err
	case code/100 == 2:
		return true, nil
	case code == http.StatusNotFound:
		return false, nil
	}
	return false, statusErr("DELETE", u, code, b)
}

func (d *httpDriver) Scan(ctx context.Context, table, prefix string, limit int) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	cursor := ""
	for {
		page := 1000
		if limit > 0 && limit-len(out) < page {
			page = limit - len(out)
		}
		q := url.Values{"prefix": {prefix}, "limit": {strconv.Itoa(page)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		u := d.base + "/v1/tables/" + url.PathEscape(table) + "/keys?" + q.Encode()
		code, b, err := d.do(ctx, http.MethodGet, u, nil)
		if err != nil {
			return out, err
		}
		if code != http.StatusOK {
			return out, statusErr("GET", u, code, b)
		}
		// {"keys":[...]} or anykv's {"items":[{"key":...}]}, plus "cursor".
		var r struct {
			Keys  []string `json:"keys"`
			Items []struct {
				Key    *string `json:"key"`
				KeyB64 *string `json:"key_b64"`
			} `json:"items"`
			Cursor string `json:"cursor"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return out, fmt.Errorf("http: GET %s: %w", u, err)
		}
		for _, it := range r.Items {
			switch {
			case it.Key != nil:
				r.Keys = append(r.Keys, *it.Key)
			case it.KeyB64 != nil:
				k, err := base64.StdEncoding.DecodeString(*it.KeyB64)
				if err != nil {
					return out, fmt.Errorf("http: GET %s: key_b64: %w", u, err)
				}
				r.Keys = append(r.Keys, string(k))
			}
		}
		for _, k := range r.Keys {
			if !strings.HasPrefix(k, prefix) {
				return out, fmt.Errorf("http: GET %s returned key %q without the prefix", u, k)
			}
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
			if limit > 0 && len(out) >= limit {
				return out, nil
			}
		}
		if r.Cursor == "" || r.Cursor == cursor {
			return out, nil
		}
		cursor = r.Cursor
	}
}

func (d *httpDriver) Count(ctx context.Context, table, prefix string) (int64, error) {
	u := d.base + "/v1/tables/" + url.PathEscape(table) + "/count?" + url.Values{"prefix": {prefix}}.Encode()
	code, b, err := d.do(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, statusErr("GET", u, code, b)
	}
	var r struct {
		Count *int64 `json:"count"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Count == nil {
		return 0, fmt.Errorf("http: GET %s: want {\"count\":N}, got %q", u, b)
	}
	return *r.Count, nil
}

func (d *httpDriver) Noop(ctx context.Context) error {
	u := d.base + "/healthz"
	code, b, err := d.do(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if code >= 500 {
		return statusErr("GET", u, code, b)
	}
	return nil
}

func (d *httpDriver) Close() error {
	d.c.CloseIdleConnections()
	return nil
}
