package workload

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"anykv/internal/bench/driver"
)

// memStore is an in-memory driver with fault injection.
type memStore struct {
	mu    sync.Mutex
	data  map[string][]byte
	prev  map[string][]byte
	kind  string
	caps  driver.Caps
	delay time.Duration
	// putDelay slows puts alone: a write phase cut short by --duration then answers fewer records than the
	// read phase after it would read.
	putDelay time.Duration

	staleEvery int64          // every n-th get returns the previous value
	loseEvery  int64          // every n-th put is acknowledged but dropped
	errEvery   int64          // every n-th operation fails
	phantom    bool           // scans return one extra key
	shortScan  bool           // scans drop their last key
	failPut    string         // puts of this key (table/key) fail
	reads      map[string]int // gets per key (table/key)
	misses     atomic.Int64   // gets that found nothing
	ops        atomic.Int64
	gets       atomic.Int64
	puts       atomic.Int64
}

func newMem() *memStore {
	return &memStore{data: map[string][]byte{}, prev: map[string][]byte{}, reads: map[string]int{}, kind: "mem",
		caps: driver.CapScan | driver.CapCount | driver.CapIncr}
}

var errInjected = errors.New("injected error")

func (m *memStore) op(ctx context.Context) error {
	if m.delay > 0 {
		select {
		case <-time.After(m.delay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if n := m.ops.Add(1); m.errEvery > 0 && n%m.errEvery == 0 {
		return errInjected
	}
	return nil
}

func (m *memStore) Kind() string                   { return m.kind }
func (m *memStore) Caps() driver.Caps              { return m.caps }
func (m *memStore) Settings() string               { return "in memory" }
func (m *memStore) Close() error                   { return nil }
func (m *memStore) Noop(ctx context.Context) error { return m.op(ctx) }

func (m *memStore) Get(ctx context.Context, table, key string) ([]byte, bool, error) {
	if err := m.op(ctx); err != nil {
		return nil, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := table + "/" + key
	m.reads[k]++
	if n := m.gets.Add(1); m.staleEvery > 0 && n%m.staleEvery == 0 {
		if v, ok := m.prev[k]; ok {
			return v, true, nil
		}
	}
	v, ok := m.data[k]
	if !ok {
		m.misses.Add(1)
	}
	return append([]byte(nil), v...), ok, nil
}

func (m *memStore) Put(ctx context.Context, table, key string, value []byte) error {
	time.Sleep(m.putDelay)
	if err := m.op(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := table + "/" + key
	if k == m.failPut {
		return errInjected
	}
	if n := m.puts.Add(1); m.loseEvery > 0 && n%m.loseEvery == 0 {
		return nil
	}
	if old, ok := m.data[k]; ok {
		m.prev[k] = old
	}
	m.data[k] = append([]byte(nil), value...)
	return nil
}

// Incr implements driver.Counter; with loseEvery, every n-th increment is acknowledged but dropped.
func (m *memStore) Incr(ctx context.Context, table, key string) (int64, error) {
	if err := m.op(ctx); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := table + "/" + key
	n, _ := strconv.ParseInt(string(m.data[k]), 10, 64)
	if c := m.puts.Add(1); m.loseEvery > 0 && c%m.loseEvery == 0 {
		return n + 1, nil
	}
	m.data[k] = []byte(strconv.FormatInt(n+1, 10))
	return n + 1, nil
}

func (m *memStore) Delete(ctx context.Context, table, key string) (bool, error) {
	if err := m.op(ctx); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := table + "/" + key
	_, ok := m.data[k]
	delete(m.data, k)
	delete(m.prev, k)
	return ok, nil
}

func (m *memStore) Scan(ctx context.Context, table, prefix string, limit int) ([]string, error) {
	if !m.caps.Has(driver.CapScan) {
		return nil, driver.ErrUnsupported
	}
	if err := m.op(ctx); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.data {
		if rest, ok := strings.CutPrefix(k, table+"/"); ok && strings.HasPrefix(rest, prefix) {
			out = append(out, rest)
		}
	}
	if m.phantom {
		out = append(out, prefix+"phantom")
	}
	sort.Strings(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	if m.shortScan && len(out) > 0 {
		out = out[:len(out)-1]
	}
	return out, nil
}

func (m *memStore) Count(ctx context.Context, table, prefix string) (int64, error) {
	keys, err := m.Scan(ctx, table, prefix, 0)
	return int64(len(keys)), err
}
