package membudget

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestEvictionEndsAWait: a client waiting in ReserveWait (for room its read needs) that another client's
// reservation evicts hears of it at once, and lets go, so the evicting reservation gets its room; the wait does
// not last until its patience ends, nor the evictor's until evictWait refuses it (its client then closed
// although the victim held more than enough).
func TestEvictionEndsAWait(t *testing.T) {
	b := New(1000, nil)
	others := b.Open("others", nil) // replies of other clients being written
	defer others.Close()
	if err := others.Reserve(200); err != nil {
		t.Fatal(err)
	}
	waiter := b.Open("waiter", func() {})       // blocked in ReserveWait, not on its connection
	if err := waiter.Reserve(600); err != nil { // its request buffer
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		start := time.Now()
		err := waiter.ReserveWait(context.Background(), 300, 10*time.Second)
		if err == nil {
			waiter.Release(300)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("the evicted waiter heard of it after %v", took)
		}
		waiter.Close() // the connection closes
		waited <- err
	}()
	time.Sleep(50 * time.Millisecond) // it waits
	small := b.Open("small", nil)
	defer small.Close()
	start := time.Now()
	if err := small.Reserve(300); err != nil {
		t.Fatalf("a reservation that evicted the waiter (holding 600) was refused after %v: %v", time.Since(start), err)
	}
	if err := <-waited; !errors.Is(err, ErrEvicted) {
		t.Fatalf("the waiter's ReserveWait: %v, want ErrEvicted", err)
	}
}

// TestWaitersDoNotWaitOnEachOther: ReserveWait refuses at once, with ErrWaitersHold, a reservation that only the
// bytes of clients themselves waiting for room could make room for; one that bytes of clients not waiting (replies
// being written) can make room for waits for them.
func TestWaitersDoNotWaitOnEachOther(t *testing.T) {
	b := New(1000, nil)
	first := b.Open("first", nil)
	defer first.Close()
	second := b.Open("second", nil)
	defer second.Close()
	for _, a := range []*Account{first, second} {
		if err := a.Reserve(400); err != nil { // what each holds already (a pipeline's first reads)
			t.Fatal(err)
		}
	}
	waited := make(chan error, 1)
	go func() { waited <- first.ReserveWait(context.Background(), 400, 5*time.Second) }() // 1200: second's 400 must go
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	if err := second.ReserveWait(context.Background(), 400, 5*time.Second); !errors.Is(err, ErrWaitersHold) || !errors.Is(err, ErrOverBudget) {
		t.Fatalf("a wait for room only another waiter holds: %v after %v, want ErrWaitersHold at once", err, time.Since(start))
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("refused after %v", took)
	}
	second.Release(400) // it went on without (its reply written)
	if err := <-waited; err != nil {
		t.Fatalf("the first waiter, once the second let go: %v", err)
	}
	if b.Used() != 800 {
		t.Fatalf("used %d, want 800", b.Used())
	}
}

// TestPatientWaitEvictsIdleHolders: a reservation waiting in ReserveWait evicts, once it has waited idleEvict, a
// bigger client that has neither reserved nor released for as long (a request held half-sent), where it waited out
// its patience and failed; a client that keeps reserving and releasing (a reply being written) is waited for,
// never evicted.
func TestPatientWaitEvictsIdleHolders(t *testing.T) {
	b, idle := idleHolder(t, 200*time.Millisecond)
	reader := b.Open("reader", nil)
	defer reader.Close()
	start := time.Now()
	if err := reader.ReserveWait(context.Background(), 500, 5*time.Second); err != nil {
		t.Fatalf("a wait that only an idle client's 800 bytes held up: %v after %v", err, time.Since(start))
	}
	if took := time.Since(start); took < idleEvict || took > idleEvict+time.Second {
		t.Fatalf("served after %v, want after idleEvict (%v)", took, idleEvict)
	}
	if !idle.Evicted() || b.Evictions() != 1 {
		t.Fatalf("the idle client evicted: %v (%d evictions)", idle.Evicted(), b.Evictions())
	}
	reader.Release(500)

	// A busy client, writing: it reserves and releases every 20 ms, and lets go of all after a second.
	busy := b.Open("busy", func() { t.Error("a busy client was evicted") })
	if err := busy.Reserve(800); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			busy.Release(1)
			busy.TryReserve(1)
		}
		busy.Close()
	}()
	start = time.Now()
	if err := reader.ReserveWait(context.Background(), 500, 5*time.Second); err != nil {
		t.Fatalf("waiting for a busy client: %v", err)
	}
	if took := time.Since(start); took < 900*time.Millisecond {
		t.Fatalf("served after %v, before the busy client let go", took)
	}
	<-done
	if b.Evictions() != 1 {
		t.Fatalf("%d evictions, want only the idle client's", b.Evictions())
	}
}

// TestPatientWaitEvictsHoldersThatGoIdleLater: a reservation waiting in ReserveWait evicts a bigger client once it
// has been idle for idleEvict, also when it went idle after the wait began (it released a byte while the reader
// waited) and so was not idle yet when the wait first looked, idleEvict after it began. Before, that one look was
// the only one: nothing woke the wait again, and it waited out its patience and was refused although the holder
// had been idle for most of it.
func TestPatientWaitEvictsHoldersThatGoIdleLater(t *testing.T) {
	b, idle := idleHolder(t, 300*time.Millisecond)
	reader := b.Open("reader", nil)
	defer reader.Close()
	go func() {
		time.Sleep(idleEvict / 2)
		idle.Release(1) // still holding 799, then nothing more: idle from here on
	}()
	start := time.Now()
	if err := reader.ReserveWait(context.Background(), 500, 5*time.Second); err != nil {
		t.Fatalf("a wait that only a client idle since %v held up: %v after %v", idleEvict/2, err, time.Since(start))
	}
	// Idle for idleEvict from idleEvict/2 on: evictable from 1.5 idleEvict; looked at within a second more.
	if took := time.Since(start); took > 3*idleEvict/2+2*time.Second {
		t.Fatalf("served after %v", took)
	}
	if !idle.Evicted() || b.Evictions() != 1 {
		t.Fatalf("the idle client evicted: %v (%d evictions)", idle.Evicted(), b.Evictions())
	}
}

// TestServingIsNotIdle: a patient reservation does not evict a client whose connection runs a request (Serving),
// however long it has reserved and released nothing (a command slow in the engine); once the request is done, the
// client is idle as any other and evicted. SetIdleEvict shortens the budget's idleEvict.
func TestServingIsNotIdle(t *testing.T) {
	const idle = 50 * time.Millisecond
	b := New(1000, nil)
	b.SetIdleEvict(idle)
	running := b.Open("running", nil)
	if err := running.Reserve(800); err != nil {
		t.Fatal(err)
	}
	running.evict = func() { go running.Close() }
	running.Serving(true)
	reader := b.Open("reader", nil)
	defer reader.Close()
	done := make(chan error, 1)
	go func() { done <- reader.ReserveWait(context.Background(), 500, 5*time.Second) }()
	select {
	case err := <-done:
		t.Fatalf("the wait ended (%v) while the client holding its room ran a request", err)
	case <-time.After(10 * idle):
	}
	if running.Evicted() || b.Evictions() != 0 {
		t.Fatalf("a client running a request evicted after %v of a wait (idleEvict %v)", 10*idle, idle)
	}
	running.Serving(false)
	if err := <-done; err != nil {
		t.Fatalf("the wait, once the request was done: %v", err)
	}
	if !running.Evicted() || b.Evictions() != 1 {
		t.Fatalf("the client idle after its request evicted: %v (%d evictions)", running.Evicted(), b.Evictions())
	}
}

// idleHolder sets idleEvict to d for the test and returns a budget of 1000 bytes with a client holding 800 of
// them, whose eviction closes it as its connection's end would.
func idleHolder(t *testing.T, d time.Duration) (*Budget, *Account) {
	old := idleEvict
	idleEvict = d
	t.Cleanup(func() { idleEvict = old })
	b := New(1000, nil)
	idle := b.Open("idle", nil)
	if err := idle.Reserve(800); err != nil {
		t.Fatal(err)
	}
	idle.evict = func() { go func() { time.Sleep(10 * time.Millisecond); idle.Close() }() }
	return b, idle
}

// TestProgressMarksAtAPaceOfWhatIsHeld: bytes of a request coming in mark its account active once they add up to a
// 64th of what it holds since the last mark, not at every read: a client holding 1 MiB that trickles a byte now
// and then stays idle for a waiting read to evict, one sending 16 KiB in the idle limit does not.
func TestProgressMarksAtAPaceOfWhatIsHeld(t *testing.T) {
	b := New(64<<20, nil)
	a := b.Open("sender", nil)
	defer a.Close()
	if err := a.Reserve(1 << 20); err != nil {
		t.Fatal(err)
	}
	a.active.Store(1) // long ago
	for range 1000 {
		a.Progress(1)
	}
	if got := a.active.Load(); got != 1 {
		t.Fatalf("1000 bytes trickled in while holding 1 MiB marked the account active (%d)", got)
	}
	a.Progress(16<<10 - 1000)
	if got := a.active.Load(); got == 1 {
		t.Fatal("16 KiB come in while holding 1 MiB did not mark the account active")
	}
	a.active.Store(1)
	a.Progress(1)
	if got := a.active.Load(); got != 1 {
		t.Fatal("a byte right after a mark marked the account again")
	}
}
