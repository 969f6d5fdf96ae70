package membudget

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestReserveReleaseClose(t *testing.T) {
	b := New(1000, nil)
	a := b.Open("a", nil)
	if err := a.Reserve(600); err != nil {
		t.Fatal(err)
	}
	if err := a.Reserve(300); err != nil {
		t.Fatal(err)
	}
	a.Release(200)
	if b.Used() != 700 || a.Held() != 700 {
		t.Fatalf("used %d held %d, want 700", b.Used(), a.Held())
	}
	a.Close()
	a.Close()
	if b.Used() != 0 {
		t.Fatalf("used %d after Close, want 0", b.Used())
	}
}

// TestRefuseTheBiggest: when the requester would hold the most, it is refused and nobody is evicted.
func TestRefuseTheBiggest(t *testing.T) {
	b := New(1000, nil)
	evicted := atomic.Bool{}
	small := b.Open("small", func() { evicted.Store(true) })
	defer small.Close()
	big := b.Open("big", nil)
	defer big.Close()
	if err := small.Reserve(300); err != nil {
		t.Fatal(err)
	}
	if err := big.Reserve(400); err != nil {
		t.Fatal(err)
	}
	if err := big.Reserve(400); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("got %v, want ErrOverBudget", err)
	}
	if evicted.Load() || small.Evicted() || b.Used() != 700 || big.Held() != 400 {
		t.Fatalf("evicted %v, used %d, big holds %d", evicted.Load(), b.Used(), big.Held())
	}
	if b.Refusals() != 1 || b.Evictions() != 0 {
		t.Fatalf("refusals %d evictions %d", b.Refusals(), b.Evictions())
	}
}

// TestEvictTheBiggest: a small request evicts the client holding the most, waits for it to let go, and gets
// its bytes; the evicted account's own reservations fail from then on.
func TestEvictTheBiggest(t *testing.T) {
	b := New(1000, nil)
	var hog *Account
	release := make(chan struct{})
	hog = b.Open("hog", func() { close(release) })
	other := b.Open("other", func() { t.Error("the smaller client was evicted") })
	defer other.Close()
	if err := hog.Reserve(800); err != nil {
		t.Fatal(err)
	}
	if err := other.Reserve(150); err != nil {
		t.Fatal(err)
	}
	go func() {
		<-release // the connection notices (its reads fail) and closes
		if err := hog.Reserve(1); !errors.Is(err, ErrEvicted) {
			t.Errorf("evicted account reserved: %v", err)
		}
		hog.Close()
	}()
	small := b.Open("small", nil)
	defer small.Close()
	if err := small.Reserve(100); err != nil {
		t.Fatal(err)
	}
	if !hog.Evicted() || b.Evictions() != 1 || b.Used() != 250 {
		t.Fatalf("evicted %v, evictions %d, used %d", hog.Evicted(), b.Evictions(), b.Used())
	}
}

// TestTryReserveNeverEvicts: TryReserve refuses a reservation past the budget at once, where Reserve would evict
// the bigger client and wait for it, and takes one that fits.
func TestTryReserveNeverEvicts(t *testing.T) {
	b := New(1000, nil)
	hog := b.Open("hog", func() { t.Error("TryReserve evicted a client") })
	defer hog.Close()
	small := b.Open("small", nil)
	defer small.Close()
	if err := hog.Reserve(800); err != nil {
		t.Fatal(err)
	}
	if err := small.TryReserve(150); err != nil {
		t.Fatal(err)
	}
	if err := small.TryReserve(100); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("got %v, want ErrOverBudget", err)
	}
	if hog.Evicted() || b.Evictions() != 0 || b.Refusals() != 1 || b.Used() != 950 || small.Held() != 150 {
		t.Fatalf("evicted %v, evictions %d, refusals %d, used %d, small holds %d", hog.Evicted(), b.Evictions(),
			b.Refusals(), b.Used(), small.Held())
	}
}

// TestNeverOverBudget drives many accounts concurrently, each closing when it is refused or evicted as a
// connection does, and checks the total never passes the limit and everything is given back.
func TestNeverOverBudget(t *testing.T) {
	const limit = 1 << 20
	b := New(limit, nil)
	var wg sync.WaitGroup
	var over atomic.Int64
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 50 {
				stop := make(chan struct{})
				var once sync.Once
				a := b.Open("conn", func() { once.Do(func() { close(stop) }) })
				var bufs [][]byte
				for range rng.IntN(20) {
					buf, err := a.Alloc(rng.IntN(200 << 10))
					if err != nil {
						break
					}
					if u := b.Used(); u > limit {
						over.Store(u)
					}
					bufs = append(bufs, buf)
					if rng.IntN(3) == 0 {
						a.Free(bufs[0])
						bufs = bufs[1:]
					}
				}
				for _, buf := range bufs {
					a.Free(buf)
				}
				a.Close()
			}
		}()
	}
	wg.Wait()
	if u := over.Load(); u != 0 {
		t.Fatalf("used reached %d, over the limit %d", u, limit)
	}
	if b.Used() != 0 {
		t.Fatalf("used %d after every account closed", b.Used())
	}
}

// TestGrowReservesWhatItAdds: a buffer grown into a bigger one reserves the difference, so a request whose new
// buffer fits the budget is not refused for the old one it leaves; a refused Grow leaves the old reservation.
func TestGrowReservesWhatItAdds(t *testing.T) {
	small, big := ClassSize(70<<10), ClassSize(100<<10)
	b := New(int64(big+100), nil)
	a := b.Open("a", nil)
	defer a.Close()
	buf, err := a.Alloc(70 << 10)
	if err != nil {
		t.Fatal(err)
	}
	if buf, err = a.Grow(buf, 100<<10); err != nil || len(buf) != big {
		t.Fatalf("Grow to %d bytes under a %d-byte budget: %d bytes, %v", big, b.Limit(), len(buf), err)
	}
	if a.Held() != int64(big) || b.Used() != int64(big) {
		t.Fatalf("held %d, used %d after Grow, want %d", a.Held(), b.Used(), big)
	}
	if _, err := a.Grow(buf, 200<<10); !errors.Is(err, ErrOverBudget) || a.Held() != int64(big) {
		t.Fatalf("Grow past the budget: %v, holding %d; want ErrOverBudget holding %d", err, a.Held(), big)
	}
	if buf, err = a.Grow(buf, 70<<10); err != nil || len(buf) != small || a.Held() != int64(small) {
		t.Fatalf("Grow to a smaller class: %d bytes, %v, holding %d", len(buf), err, a.Held())
	}
	a.Free(buf)
	if b.Used() != 0 {
		t.Fatalf("used %d after Free", b.Used())
	}
}

func TestNilBudgetAndAccount(t *testing.T) {
	var b *Budget
	a := b.Open("x", nil)
	if a != nil || b.Used() != 0 || b.Limit() != 0 {
		t.Fatal("a nil budget accounts something")
	}
	buf, err := a.Alloc(100 << 10)
	if err != nil || len(buf) != ClassSize(100<<10) || a.Evicted() {
		t.Fatalf("nil account Alloc: %d bytes, %v", len(buf), err)
	}
	a.Free(buf)
	a.Close()
}

func TestClassSize(t *testing.T) {
	for _, c := range []struct{ n, want int }{
		{1, 64<<10 + classSlack}, {64 << 10, 64<<10 + classSlack}, {64<<10 + classSlack + 1, 128<<10 + classSlack},
		{64 << 20, 64<<20 + classSlack}, {64<<20 + 100, 64<<20 + classSlack}, {200 << 20, 200 << 20},
	} {
		if got := ClassSize(c.n); got != c.want {
			t.Errorf("ClassSize(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// TestReclaimCollects: when the reserved bytes fall from a big peak, the budget has the garbage collector run
// (twice), so pooled buffers are freed without waiting for the runtime's two-minute collection.
func TestReclaimCollects(t *testing.T) {
	b := New(0, nil)
	a := b.Open("a", nil)
	if err := a.Reserve(reclaimMin); err != nil {
		t.Fatal(err)
	}
	before := gcCount()
	a.Close()
	deadline := time.Now().Add(10 * time.Second)
	for gcCount() < before+2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d collections within 10 s of the release, want 2", gcCount()-before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func gcCount() uint32 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.NumGC
}

// TestRefusedChoiceMarksNoOne: a choice of victims that cannot make room enough (a is refused instead) marks no
// client evicted, not even while it is made: Evicted and reserve read the mark without the budget's lock, so a
// client marked on the way and unmarked after took itself for evicted (RESP closed its connection, HTTP dropped
// its reply), though it was not.
func TestRefusedChoiceMarksNoOne(t *testing.T) {
	b := New(2000, nil)
	x, y := b.Open("x", nil), b.Open("y", nil)
	defer x.Close()
	defer y.Close()
	for _, v := range []*Account{x, y} {
		if err := v.Reserve(450); err != nil {
			t.Fatal(err)
		}
	}
	b.SetLimit(100)
	a := b.Open("a", nil)
	defer a.Close()
	seen := false
	b.mu.Lock()
	// 200 more: 1000 over the limit, and x and y hold 900 between them.
	victims := b.chooseVictims(a, 200, func(*Account) bool {
		seen = seen || x.Evicted() || y.Evicted() // as another goroutine may read it meanwhile
		return true
	})
	b.mu.Unlock()
	if victims != nil || seen || x.Evicted() || y.Evicted() {
		t.Errorf("a refused choice: victims %v, a mark seen while choosing %v, marked after: x %v y %v",
			victims, seen, x.Evicted(), y.Evicted())
	}
	if err := a.Reserve(200); !errors.Is(err, ErrOverBudget) || x.Evicted() || y.Evicted() {
		t.Errorf("Reserve: %v, x evicted %v, y %v; want the refusal of a alone", err, x.Evicted(), y.Evicted())
	}
}
