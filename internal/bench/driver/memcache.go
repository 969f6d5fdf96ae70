package driver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/bradfitz/gomemcache/memcache"
)

// memcacheDriver speaks the memcached text protocol (anykv or memcached).
// A table is a key prefix "table:". It cannot scan or count.
type memcacheDriver struct {
	c     *memcache.Client
	addrs []string
}

func openMemcache(u *url.URL, opt Options) (Driver, error) {
	addrs := strings.Split(u.Host, ",")
	c := memcache.New(addrs...)
	c.Timeout = opt.Timeout
	c.MaxIdleConns = opt.Conns
	return &memcacheDriver{c: c, addrs: addrs}, nil
}

func (d *memcacheDriver) Kind() string { return "memcache" }
func (d *memcacheDriver) Caps() Caps   { return 0 }
func (d *memcacheDriver) Settings() string {
	return fmt.Sprintf("memcached text protocol to %s, set/get/delete, keys \"table:key\", no scan or count", strings.Join(d.addrs, ","))
}

func mcKey(table, key string) (string, error) {
	k := table + ":" + key
	if len(k) > 250 {
		return "", fmt.Errorf("memcache: key %q longer than 250 bytes", k[:32]+"...")
	}
	return k, nil
}

// run calls fn unless ctx is already done. gomemcache has no context
// support; an operation in flight is bounded by the socket timeout instead
// (a goroutine per call to honour cancellation would tax every measurement).
func run[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	return fn()
}

func (d *memcacheDriver) Get(ctx context.Context, table, key string) ([]byte, bool, error) {
	k, err := mcKey(table, key)
	if err != nil {
		return nil, false, err
	}
	it, err := run(ctx, func() (*memcache.Item, error) { return d.c.Get(k) })
	if errors.Is(err, memcache.ErrCacheMiss) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return it.Value, true, nil
}

func (d *memcacheDriver) Put(ctx context.Context, table, key string, value []byte) error {
	k, err := mcKey(table, key)
	if err != nil {
		return err
	}
	_, err = run(ctx, func() (struct{}, error) {
		return struct{}{}, d.c.Set(&memcache.Item{Key: k, Value: value})
	})
	return err
}

func (d *memcacheDriver) Delete(ctx context.Context, table, key string) (bool, error) {
	k, err := mcKey(table, key)
	if err != nil {
		return false, err
	}
	_, err = run(ctx, func() (struct{}, error) { return struct{}{}, d.c.Delete(k) })
	if errors.Is(err, memcache.ErrCacheMiss) {
		return false, nil
	}
	return err == nil, err
}

func (d *memcacheDriver) Scan(context.Context, string, string, int) ([]string, error) {
	return nil, unsupported("memcache", "scan")
}

func (d *memcacheDriver) Count(context.Context, string, string) (int64, error) {
	return 0, unsupported("memcache", "count")
}

// Noop sends "version".
func (d *memcacheDriver) Noop(ctx context.Context) error {
	_, err := run(ctx, func() (struct{}, error) { return struct{}{}, d.c.Ping() })
	return err
}

func (d *memcacheDriver) Close() error { return d.c.Close() }
