package clockmap

import (
	"fmt"
	"testing"
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
		if e.pos != i || m.items[e.key] != e {
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
