package clockmap

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"testing"
	"unsafe"
)

// TestClockKeepsHotEntries: one entry read between every insertion of a stream of entries read once survives
// the stream, while the cold entries are evicted to stay within the bound (random eviction loses the hot entry
// within a few turns).
func TestClockKeepsHotEntries(t *testing.T) {
	m := New[int]()
	const max = 10 * 100
	m.Put("hot", 0, 100, max)
	evicted := 0
	for i := 0; i < 1000; i++ {
		if _, ok := m.Get([]byte("hot")); !ok {
			t.Fatalf("hot entry evicted after %d cold insertions", i)
		}
		evicted += m.Put(fmt.Sprint("cold", i), i, 100, max)
		if m.bytes > max {
			t.Fatalf("%d bytes held, bound %d", m.bytes, max)
		}
	}
	if m.Len() != 10 || evicted != 1001-10 {
		t.Fatalf("%d entries held, %d evicted", m.Len(), evicted)
	}
}

// TestClockRemoveKeepsTheRingConsistent: removing entries anywhere leaves every remaining entry findable through
// the map and the ring, with the byte count right.
func TestClockRemoveKeepsTheRingConsistent(t *testing.T) {
	m := New[int]()
	for i := 0; i < 50; i++ {
		m.Put(fmt.Sprint(i), i, 10, 1<<20)
	}
	for i := 0; i < 50; i += 3 {
		if !m.Remove(fmt.Sprint(i)) {
			t.Fatalf("remove %d: not found", i)
		}
	}
	m.Put("7", 700, 10, 1<<20) // replaces
	if len(m.ring) != m.Len() || m.bytes != int64(10*m.Len()) {
		t.Fatalf("ring %d, map %d, bytes %d", len(m.ring), m.Len(), m.bytes)
	}
	for i, e := range m.ring {
		if e.pos != i || m.items.get(e.hash) != e {
			t.Fatalf("ring[%d] = %q at pos %d", i, e.key, e.pos)
		}
	}
	if e, ok := m.Get([]byte("7")); !ok || e.Val != 700 {
		t.Fatalf("replaced entry: %v %v", e, ok)
	}
}

// TestResizeEvictsToTheBound: an entry that grows in place makes room by evicting, as a Put would.
func TestResizeEvictsToTheBound(t *testing.T) {
	m := New[int]()
	for i := 0; i < 10; i++ {
		m.Put(fmt.Sprint(i), i, 10, 100)
	}
	e, _ := m.Get([]byte("3"))
	if n := m.Resize(e, 50, 100); n == 0 || m.Bytes() > 100 {
		t.Fatalf("Resize to 50 evicted %d entries; %d bytes held, bound 100", n, m.Bytes())
	}
	if m.Len() != len(m.ring) {
		t.Fatalf("ring %d, map %d", len(m.ring), m.Len())
	}
}

// TestHashCollision: a key whose hash slot holds another key's entry (two keys of one hash, forced here since
// seeded hashes do not collide in a test's lifetime) is not found, its Remove leaves the other entry alone, and
// its Put replaces that entry with the ring and the byte count kept right.
func TestHashCollision(t *testing.T) {
	m := New[int]()
	m.Put("a", 1, 10, 1000)
	m.Put("c", 3, 10, 1000)
	e, _ := m.Get([]byte("a"))
	hb := maphash.String(m.seed, "b")
	m.items.del(e.hash)
	e.hash = hb
	m.items.put(hb, e) // "a"'s entry now sits where "b" hashes
	if _, ok := m.Get([]byte("b")); ok || m.Has([]byte("b")) {
		t.Fatal(`"b" found through "a"'s entry`)
	}
	if m.Remove("b") || m.Len() != 2 {
		t.Fatalf(`Remove("b") dropped "a"'s entry: %d entries left`, m.Len())
	}
	m.Put("b", 2, 10, 1000)
	if got, ok := m.Get([]byte("b")); !ok || got.Val != 2 {
		t.Fatalf(`"b" after its Put: %v %v`, got, ok)
	}
	if m.Len() != 2 || len(m.ring) != 2 || m.Bytes() != 20 {
		t.Fatalf("map %d, ring %d, bytes %d after the replacing Put", m.Len(), len(m.ring), m.Bytes())
	}
	for i, e := range m.ring {
		if e.pos != i || m.items.get(e.hash) != e || e.key == "a" {
			t.Fatalf("ring[%d] = %q at pos %d", i, e.key, e.pos)
		}
	}
}

// TestHashedMethodsFindWhatThePlainOnesDo: a Seeded map hashes keys as its owner does, before and after a Reset,
// so the owner's hash finds what the map's own hashing stored, and the other way round.
func TestHashedMethodsFindWhatThePlainOnesDo(t *testing.T) {
	seed := maphash.MakeSeed()
	m := Seeded[int](seed)
	k := []byte("key")
	h := maphash.Bytes(seed, k)
	if m.Hash(k) != h {
		t.Fatal("Hash is not the seed's hash")
	}
	m.PutHashed("key", h, 1, 10, 100)
	if e, ok := m.Get(k); !ok || e.Val != 1 {
		t.Fatalf("Get after PutHashed = %v, %v", e, ok)
	}
	m.Reset()
	m.Put("key", 2, 10, 100)
	if e, ok := m.GetHashed(k, h); !ok || e.Val != 2 {
		t.Fatalf("GetHashed after Reset and Put = %v, %v: Reset changed the seed", e, ok)
	}
	if !m.HasHashed(k, h) || !m.RemoveHashed("key", h) || m.Has(k) || m.Len() != 0 {
		t.Fatal("HasHashed/RemoveHashed do not act on the key Put stored")
	}
}

// TestPutInlineKeepsKeyAndBytes: an inline entry of every size class (and past them) holds its key and bytes,
// replaces the entry of its hash, and counts its size.
func TestPutInlineKeepsKeyAndBytes(t *testing.T) {
	m := New[[]byte]()
	for _, n := range []int{0, 1, 31, 32, 33, 100, 384, 512, 513, 4000} {
		key := fmt.Sprintf("key%d", n)
		data := bytes.Repeat([]byte{byte(n)}, n)
		h := m.Hash([]byte(key))
		m.PutInlineHashed(len(key)+n, h, int64(n+10), 1<<30, func(b []byte) (string, []byte) {
			copy(b, key)
			copy(b[len(key):], data)
			return string(b[:len(key)]), b[len(key):]
		})
		e, ok := m.GetHashed([]byte(key), h)
		if !ok || !bytes.Equal(e.Val, data) || len(e.Val) != n {
			t.Fatalf("n=%d: entry %v, %v", n, ok, e)
		}
	}
	if m.Len() != 10 || m.Bytes() != 5706 { // the sizes given: n+10 each
		t.Fatalf("%d entries of %d bytes, want 10 of 5706", m.Len(), m.Bytes())
	}
	// A put of a key already there replaces its entry.
	h := m.Hash([]byte("key100"))
	m.PutInlineHashed(8, h, 1000, 1<<30, func(b []byte) (string, []byte) {
		copy(b, "key100xy")
		return string(b[:6]), b[6:]
	})
	if e, ok := m.GetHashed([]byte("key100"), h); !ok || string(e.Val) != "xy" || m.Len() != 10 || m.Bytes() != 5706-110+1000 {
		t.Fatalf("replaced entry: %v %q, %d entries of %d bytes", ok, e.Val, m.Len(), m.Bytes())
	}
	if m.InlineSize(100) <= 128 || m.InlineSize(600) < 600 {
		t.Fatalf("InlineSize(100) = %d, InlineSize(600) = %d", m.InlineSize(100), m.InlineSize(600))
	}
}

// TestInlineClassesAllocateTheirClass: newInline allocates, for every n, the class InlineSize charges (an
// inline array of exactly that size), so the cache charges what it holds.
func TestInlineClassesAllocateTheirClass(t *testing.T) {
	for n := 0; n <= maxInline+1; n++ {
		e, b := newInline[[]byte](n)
		c := inlineClass(n)
		// The bytes start right after the entry, and the object ends c bytes later.
		off := uintptr(unsafe.Pointer(unsafe.SliceData(b[:cap(b)]))) - uintptr(unsafe.Pointer(e))
		if len(b) != n || n <= maxInline && (off != unsafe.Sizeof(*e) || c < n) || n > maxInline && c != 0 {
			t.Fatalf("n=%d: class %d, bytes at offset %d of the entry", n, c, off)
		}
	}
}
