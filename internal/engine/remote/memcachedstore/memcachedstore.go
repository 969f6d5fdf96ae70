// Package memcachedstore is the memcached engine: anykv's items in a memcached server people already run.
//
// memcached changes one item atomically and no more (gets returns an item with its cas unique, cas and add
// store one item only if it is unchanged or absent), so this engine applies a batch only if it touches one item:
// remote.Engine.SingleItem refuses any other batch (MSET of two keys, RENAME, collections, FLUSH, MULTI/EXEC over
// two keys) with an error naming the engine, applying nothing. memcached cannot list keys either: no Scanner and
// no TableLister, so KEYS, SCAN and range queries answer "not supported".
//
// Layout, under a key prefix (default "anykv:"): each item is the memcached key P+"k"+base64url(uvarint(len(table))
// +table+key), or, when that would pass memcached's 250 bytes, P+"h"+base64url(SHA-256 of the same bytes). Its
// value is an envelope: 'A', the length-prefixed table and key again (so a hash collision or foreign data is an
// error, never a wrong answer), then remote.AppendItem's header and the value. A delete stores a tombstone ('T'
// and the table and key) with cas, since memcached's delete cannot be conditional. The item's cas unique is its
// stamp for remote's optimistic check. Versions come from incr on P+"version"; if memcached lost that counter
// (restart, eviction) it is re-created at the current time in microseconds times 1024, above every version a
// previous counter can have handed out unless the front ends' clocks step back.
//
// anykv judges expiry; memcached's exptime only reclaims space: the anykv expiry rounded up, relative up to 30
// days and absolute beyond. memcached evicts items under memory pressure unless started with -M: Open reports it
// (Warning), and docs/engines.md says so, since an evicted item is lost.
package memcachedstore

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
)

// Store is the memcached engine: remote's optimistic Apply, for batches of one item.
type Store struct {
	*remote.Engine
	b       *backend
	warning string
}

var _ engine.Engine = (*Store)(nil)

type backend struct {
	c       *memcache.Client
	prefix  string
	counter string
	maxItem int // the server's item_size_max
}

// Open connects to the server at rawURL (memcached://host:port[?prefix=P&timeout=D], D a Go duration bounding
// each request, 5s by default) and returns the engine once the server answers "stats settings".
func Open(ctx context.Context, rawURL string) (*Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", remote.ErrBadURL, err)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%w: no host:port", remote.ErrBadURL)
	}
	q := u.Query()
	prefix := "anykv:"
	if q.Has("prefix") {
		prefix = q.Get("prefix")
	}
	if len(prefix) > 64 || strings.ContainsFunc(prefix, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		return nil, fmt.Errorf("%w: prefix %q: at most 64 printable ASCII characters, no spaces", remote.ErrBadURL, prefix)
	}
	timeout := 5 * time.Second
	if q.Has("timeout") {
		if timeout, err = time.ParseDuration(q.Get("timeout")); err != nil || timeout <= 0 {
			return nil, fmt.Errorf("%w: timeout %q", remote.ErrBadURL, q.Get("timeout"))
		}
	}
	settings, err := statsSettings(ctx, u.Host)
	if err != nil {
		return nil, err
	}
	if settings["cas_enabled"] == "no" {
		return nil, errors.New("memcached runs with CAS disabled (-C): the engine needs cas to apply batches safely")
	}
	maxItem, err := strconv.Atoi(settings["item_size_max"])
	if err != nil {
		return nil, fmt.Errorf("memcached: stats settings gave no item_size_max: %v", err)
	}
	c := memcache.New(u.Host)
	c.Timeout, c.MaxIdleConns = timeout, 64
	b := &backend{c: c, prefix: prefix, counter: prefix + "version", maxItem: maxItem}
	s := &Store{Engine: remote.New(b), b: b}
	s.Engine.SingleItem = "memcached"
	if settings["evictions"] != "off" {
		s.warning = fmt.Sprintf("memcached at %s evicts items when its memory is full (it runs without -M): "+
			"anykv items evicted are lost; start memcached with -M (see docs/engines.md)", u.Host)
	}
	return s, nil
}

// Warning is what the operator must know before serving from this server ("" if nothing): evictions lose data.
func (s *Store) Warning() string { return s.warning }

// statsSettings asks the server at addr for "stats settings" on a connection of its own.
func statsSettings(ctx context.Context, addr string) (map[string]string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	} else {
		conn.SetDeadline(time.Now().Add(10 * time.Second))
	}
	if _, err := conn.Write([]byte("stats settings\r\n")); err != nil {
		return nil, err
	}
	out := map[string]string{}
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("memcached: stats settings: %w", err)
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 1 && f[0] == "END":
			return out, nil
		case len(f) == 3 && f[0] == "STAT":
			out[f[1]] = f[2]
		default:
			return nil, fmt.Errorf("memcached: stats settings answered %q", strings.TrimSpace(line))
		}
	}
}

// slotBytes is the slot's identity: uvarint(len(table)), table, key.
func slotBytes(s remote.Slot) []byte {
	raw := binary.AppendUvarint(make([]byte, 0, 2+len(s.Table)+len(s.Key)), uint64(len(s.Table)))
	return append(append(raw, s.Table...), s.Key...)
}

// maxKey is memcached's limit on a key's length.
const maxKey = 250

// key is the memcached key of a slot: its bytes in base64url, or their SHA-256 when that is too long.
func (b *backend) key(raw []byte) string {
	if len(b.prefix)+1+base64.RawURLEncoding.EncodedLen(len(raw)) <= maxKey {
		return b.prefix + "k" + base64.RawURLEncoding.EncodeToString(raw)
	}
	sum := sha256.Sum256(raw)
	return b.prefix + "h" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// Envelope markers.
const (
	live      = 'A'
	tombstone = 'T'
)

// envelope is what memcached stores for raw: a tombstone when it is nil, else the item.
func envelope(raw []byte, it *engine.Item) []byte {
	mark := byte(tombstone)
	if it != nil {
		mark = live
	}
	v := binary.AppendUvarint([]byte{mark}, uint64(len(raw)))
	v = append(v, raw...)
	if it != nil {
		v = remote.AppendItem(v, *it)
	}
	return v
}

// unwrap parses an envelope stored under raw's key; a tombstone is an absent item.
func unwrap(raw, v []byte) (engine.Item, bool, error) {
	if len(v) == 0 || (v[0] != live && v[0] != tombstone) {
		return engine.Item{}, false, fmt.Errorf("memcached: %w: not an anykv item", engine.ErrCorrupt)
	}
	n, w := binary.Uvarint(v[1:])
	if w <= 0 || uint64(len(v)-1-w) < n {
		return engine.Item{}, false, fmt.Errorf("memcached: %w: truncated item", engine.ErrCorrupt)
	}
	if own := v[1+w : 1+w+int(n)]; !bytes.Equal(own, raw) {
		return engine.Item{}, false, fmt.Errorf("memcached: %w: the item stored under this key belongs to another key "+
			"(SHA-256 collision or foreign data under the prefix)", engine.ErrCorrupt)
	}
	if v[0] == tombstone {
		return engine.Item{}, false, nil
	}
	it, err := remote.DecodeItem(v[1+w+int(n):])
	if err != nil {
		return engine.Item{}, false, fmt.Errorf("memcached: %w", err)
	}
	return it, true, nil
}

// Read implements remote.Backend: one gets for the slots and, at the same time, one incr for the versions.
func (b *backend) Read(ctx context.Context, slots []remote.Slot, n int) ([]remote.Stored, []uint64, bool, any, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, false, nil, err
	}
	type reserved struct {
		versions []uint64
		err      error
	}
	var ch chan reserved
	if n > 0 {
		ch = make(chan reserved, 1)
		go func() {
			v, err := b.reserve(n)
			ch <- reserved{v, err}
		}()
	}
	items, err := b.fetch(slots)
	var versions []uint64
	if ch != nil {
		r := <-ch
		versions, err = r.versions, errors.Join(err, r.err)
	}
	if err != nil {
		return nil, nil, false, nil, err
	}
	return items, versions, len(slots) <= 1, nil, nil
}

// fetch reads slots with one gets.
func (b *backend) fetch(slots []remote.Slot) ([]remote.Stored, error) {
	if len(slots) == 0 {
		return nil, nil
	}
	raws, keys := make([][]byte, len(slots)), make([]string, len(slots))
	for i, s := range slots {
		raws[i] = slotBytes(s)
		keys[i] = b.key(raws[i])
	}
	var got map[string]*memcache.Item
	err := b.fresh(func() (err error) { got, err = b.c.GetMulti(keys); return err })
	if err != nil {
		return nil, fmt.Errorf("memcached: gets: %w", err)
	}
	out := make([]remote.Stored, len(slots))
	for i := range slots {
		mi := got[keys[i]]
		if mi == nil {
			continue
		}
		it, found, err := unwrap(raws[i], mi.Value)
		if err != nil {
			return nil, err
		}
		out[i] = remote.Stored{Item: it, Found: found, Stamp: mi.CasID}
	}
	return out, nil
}

// fresh runs the read op, and once more on new connections if it failed on a dead one: after memcached restarts,
// the client's idle connections (up to 64) each failed the next request (EOF) before one was dialled again. A
// read, or an increment of the version counter (whose lost outcome only skips versions), is safe to repeat.
func (b *backend) fresh(op func() error) error {
	err := op()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) {
		_ = b.c.Close() // the idle connections: those opened before the restart are all dead
		err = op()
	}
	return err
}

// reserve takes n versions from the counter, re-creating it (see the package comment) if memcached lost it.
func (b *backend) reserve(n int) ([]uint64, error) {
	for range 3 {
		var last uint64
		err := b.fresh(func() (err error) { last, err = b.c.Increment(b.counter, uint64(n)); return err })
		if errors.Is(err, memcache.ErrCacheMiss) {
			seed := strconv.FormatUint(uint64(time.Now().UnixMicro())<<10, 10)
			err = b.c.Add(&memcache.Item{Key: b.counter, Value: []byte(seed)})
			if err == nil || errors.Is(err, memcache.ErrNotStored) { // ours, or another front end's
				continue
			}
		}
		if err != nil {
			return nil, fmt.Errorf("memcached: incr %s: %w", b.counter, err)
		}
		versions := make([]uint64, n)
		for i := range versions {
			versions[i] = last - uint64(n-1-i)
		}
		return versions, nil
	}
	return nil, fmt.Errorf("memcached: the version counter %s keeps vanishing (evicted?)", b.counter)
}

// Commit implements remote.Backend. remote.Engine.SingleItem guarantees the checks and writes reach one item:
// the write is a cas on the stamp read (an add when it was absent), so it applies only if the item is unchanged.
func (b *backend) Commit(ctx context.Context, checks []remote.Check, w *remote.Writes, _ any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(w.Put)+len(w.Delete) > 1 || w.FlushAll || len(w.Flush) > 0 {
		return fmt.Errorf("memcached: %w: a commit of several items", engine.ErrNotSupported)
	}
	if len(w.Put)+len(w.Delete) == 0 { // validate reads: every stamp unchanged
		slots := make([]remote.Slot, len(checks))
		for i, c := range checks {
			slots[i] = c.Slot
		}
		got, err := b.fetch(slots)
		if err != nil {
			return err
		}
		for i, c := range checks {
			if got[i].Stamp != c.Stamp {
				return remote.ErrConflict
			}
		}
		return nil
	}
	var slot remote.Slot
	var it *engine.Item
	if len(w.Put) == 1 {
		slot, it = w.Put[0].Slot, &w.Put[0].Item
	} else {
		slot = w.Delete[0]
	}
	raw := slotBytes(slot)
	mi := &memcache.Item{Key: b.key(raw), Value: envelope(raw, it), Expiration: tombstoneTTL}
	if it != nil {
		mi.Expiration = exptime(it.Expires, time.Now())
	}
	if size := len(mi.Key) + len(mi.Value) + itemOverhead; size > b.maxItem {
		return fmt.Errorf("memcached: %w: an item of %d bytes with its key and envelope, above the server's item size "+
			"limit of %d bytes (memcached -I)", engine.ErrTooLarge, size, b.maxItem)
	}
	if len(checks) > 0 {
		c := checks[0]
		if len(checks) > 1 || c.Table != slot.Table || !bytes.Equal(c.Key, slot.Key) {
			return fmt.Errorf("memcached: %w: a commit checking another item than it writes", engine.ErrNotSupported)
		}
		return b.store(mi, c.Stamp)
	}
	// A write that read nothing (a blind SET): store over whatever is there, still with cas, since memcached's
	// set drops the old item when it fails for memory.
	for range 16 {
		got, err := b.fetch([]remote.Slot{slot})
		if err != nil {
			return err
		}
		if err := b.store(mi, got[0].Stamp); !errors.Is(err, remote.ErrConflict) {
			return err
		}
	}
	return remote.ErrConflict
}

// itemOverhead bounds what memcached adds to an item's key and value (item header, cas, flags, CRLF).
const itemOverhead = 64

// tombstoneTTL is how long memcached keeps a tombstone, in seconds: it only stands in for a conditional delete.
const tombstoneTTL = 60

// store writes mi if its key's cas unique is still stamp (0: still absent).
func (b *backend) store(mi *memcache.Item, stamp uint64) error {
	var err error
	if stamp == 0 {
		err = b.c.Add(mi)
	} else {
		mi.CasID = stamp
		err = b.c.CompareAndSwap(mi)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, memcache.ErrNotStored), errors.Is(err, memcache.ErrCASConflict), errors.Is(err, memcache.ErrCacheMiss):
		return remote.ErrConflict // present after all, changed, or gone (expired, evicted): nothing stored
	case strings.Contains(err.Error(), "SERVER_ERROR object too large"):
		return fmt.Errorf("memcached: %w: the server refused an item of %d bytes as too large (memcached -I)",
			engine.ErrTooLarge, len(mi.Value))
	case strings.Contains(err.Error(), "SERVER_ERROR") || strings.Contains(err.Error(), "CLIENT_ERROR"):
		return fmt.Errorf("memcached refused the write, nothing stored: %w", err)
	}
	return fmt.Errorf("memcached: %w: %v", remote.ErrUnknownOutcome, err)
}

// maxRelative is memcached's largest relative exptime (30 days); larger values are absolute unix times.
const maxRelative = 30 * 24 * 3600

// exptime is memcached's exptime for an item expiring at expires (unix ms, 0: never), written at now: the
// remaining time rounded up plus a second, relative while within 30 days, else the absolute time plus a minute
// (the server's clock then matters), and never for times past what memcached's 32 bits hold.
func exptime(expires int64, now time.Time) int32 {
	if expires <= 0 {
		return 0
	}
	ms := expires - now.UnixMilli()
	secs := max((ms+999)/1000+1, 1)
	if secs <= maxRelative {
		return int32(secs)
	}
	abs := (expires+999)/1000 + 60
	if abs > math.MaxInt32 {
		return 0
	}
	return int32(abs)
}

// Get implements remote.Backend.
func (b *backend) Get(ctx context.Context, s remote.Slot) (engine.Item, bool, error) {
	if err := ctx.Err(); err != nil {
		return engine.Item{}, false, err
	}
	raw := slotBytes(s)
	var mi *memcache.Item
	err := b.fresh(func() (err error) { mi, err = b.c.Get(b.key(raw)); return err })
	if errors.Is(err, memcache.ErrCacheMiss) {
		return engine.Item{}, false, nil
	}
	if err != nil {
		return engine.Item{}, false, fmt.Errorf("memcached: get: %w", err)
	}
	return unwrap(raw, mi.Value)
}

// Close implements remote.Backend.
func (b *backend) Close() error { return b.c.Close() }
