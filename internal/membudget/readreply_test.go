package membudget

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestReadForReplyCountsWaitsAndRereads: a big value is counted copies times; one that finds no room is let go of
// and read again once another client's reply is written, counting the size read then; small values and read
// errors count nothing; a wait past its patience refuses with no value.
func TestReadForReplyCountsWaitsAndRereads(t *testing.T) {
	b := New(4*ReplyHold, nil)
	a := b.Open("reader", nil)
	defer a.Close()
	reads := 0
	value := func(n int) func() (string, int, error) {
		return func() (string, int, error) { reads++; return "v", n, nil }
	}

	if v, held, err := ReadForReply(context.Background(), a, nil, 2, time.Second, value(ReplyHold-1)); v != "v" || held != 0 || err != nil {
		t.Fatalf("a small value: %q, held %d, %v", v, held, err)
	}
	boom := errors.New("boom")
	if _, held, err := ReadForReply(context.Background(), a, nil, 2, time.Second, func() (string, int, error) { return "", 1 << 30, boom }); held != 0 || err != boom {
		t.Fatalf("a failed read: held %d, %v", held, err)
	}
	v, held, err := ReadForReply(context.Background(), a, nil, 2, time.Second, value(ReplyHold))
	if v != "v" || held != 2*ReplyHold || err != nil || a.Held() != 2*ReplyHold {
		t.Fatalf("a big value: %q, held %d (account %d), %v", v, held, a.Held(), err)
	}
	a.Release(held)

	// Another client's reply fills the budget but for one ReplyHold: the reader waits, and reads again once it
	// is written; the value then read is smaller, and what the wait reserved beyond it is given back.
	other := b.Open("other", nil)
	defer other.Close()
	if err := other.Reserve(3 * ReplyHold); err != nil {
		t.Fatal(err)
	}
	reads = 0
	sizes := []int{2 * ReplyHold, ReplyHold + 1}
	go func() { time.Sleep(50 * time.Millisecond); other.Release(3 * ReplyHold) }()
	v, held, err = ReadForReply(context.Background(), a, nil, 1, 5*time.Second, func() (string, int, error) {
		n := sizes[min(reads, 1)]
		reads++
		return "v", n, nil
	})
	if v != "v" || err != nil || reads != 2 || held != ReplyHold+1 || a.Held() != int64(held) {
		t.Fatalf("after the wait: %q, %d reads, held %d (account %d), %v", v, reads, held, a.Held(), err)
	}
	a.Release(held)

	// No room within its patience: refused, holding nothing.
	if err := other.Reserve(4 * ReplyHold); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	v, held, err = ReadForReply(context.Background(), a, nil, 1, 100*time.Millisecond, value(ReplyHold))
	if v != "" || held != 0 || !errors.Is(err, ErrOverBudget) || a.Held() != 0 {
		t.Fatalf("no room: %q, held %d (account %d), %v", v, held, a.Held(), err)
	}
	if took := time.Since(start); took < 100*time.Millisecond || took > evictWait+time.Second {
		t.Fatalf("refused after %v, want after its patience (at least evictWait)", took)
	}
}

// TestReadForReplyLeavesWithItsClient: a read waiting for room returns as soon as its context ends (the client
// gone), holding nothing, rather than at the end of its patience.
func TestReadForReplyLeavesWithItsClient(t *testing.T) {
	b := New(2*ReplyHold, nil)
	other := b.Open("other", nil)
	defer other.Close()
	if err := other.Reserve(2 * ReplyHold); err != nil {
		t.Fatal(err)
	}
	a := b.Open("reader", nil)
	defer a.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, held, err := ReadForReply(ctx, a, nil, 1, 10*time.Second, func() (string, int, error) { return "v", ReplyHold, nil })
	if !errors.Is(err, context.Canceled) || held != 0 || a.Held() != 0 {
		t.Fatalf("a gone client's read: held %d (account %d), %v", held, a.Held(), err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("left after %v", took)
	}
}

// TestReplyGateReservesBeforeTheCopy: with a gate, the room of a big value is reserved when the engine asks
// (Admit), before it copies the value out; without room nothing is copied, the read waits for room and runs
// again, and the wait's room is what Admit takes then. Outside ReadForReply the gate admits everything.
func TestReplyGateReservesBeforeTheCopy(t *testing.T) {
	b := New(4*ReplyHold, nil)
	a := b.Open("reader", nil)
	defer a.Close()
	var g ReplyGate
	copies := 0
	// read is an engine's Get of a value of n bytes: it asks the gate, then copies.
	read := func(n int) func() (string, int, error) {
		return func() (string, int, error) {
			if err := g.Admit(n); err != nil {
				return "", 0, err
			}
			copies++
			return "v", n, nil
		}
	}
	if err := g.Admit(1 << 40); err != nil {
		t.Fatalf("outside ReadForReply the gate refused: %v", err)
	}
	v, held, err := ReadForReply(context.Background(), a, &g, 2, time.Second, read(ReplyHold))
	if v != "v" || held != 2*ReplyHold || err != nil || a.Held() != 2*ReplyHold || copies != 1 {
		t.Fatalf("room at once: %q, held %d (account %d), %d copies, %v", v, held, a.Held(), copies, err)
	}
	a.Release(held)

	other := b.Open("other", nil)
	defer other.Close()
	if err := other.Reserve(3 * ReplyHold); err != nil {
		t.Fatal(err)
	}
	copies = 0
	go func() { time.Sleep(50 * time.Millisecond); other.Release(3 * ReplyHold) }()
	v, held, err = ReadForReply(context.Background(), a, &g, 2, 5*time.Second, read(2*ReplyHold))
	if v != "v" || held != 4*ReplyHold || err != nil || a.Held() != 4*ReplyHold || copies != 1 {
		t.Fatalf("after a wait: %q, held %d (account %d), %d copies (want the one made with room), %v",
			v, held, a.Held(), copies, err)
	}
	a.Release(held)

	// No room within its patience: refused, nothing copied, nothing held.
	if err := other.Reserve(4 * ReplyHold); err != nil {
		t.Fatal(err)
	}
	copies = 0
	v, held, err = ReadForReply(context.Background(), a, &g, 1, 100*time.Millisecond, read(ReplyHold))
	if v != "" || held != 0 || !errors.Is(err, ErrOverBudget) || a.Held() != 0 || copies != 0 {
		t.Fatalf("no room: %q, held %d (account %d), %d copies, %v", v, held, a.Held(), copies, err)
	}
}

// TestReplyGateReleasesAnAdmitOfARefusedRead: one read whose engine asks the gate twice (pebblestore.Serving
// runs a Get again on the next store when the first returned ErrClosed after its copy), the first admitted and
// the second refused. What the first reserved must be given back with the refused read; ReadForReply zeroes
// g.reserved at the top of its loop and on ErrWaitersHold without releasing it.
func TestReplyGateReleasesAnAdmitOfARefusedRead(t *testing.T) {
	b := New(4*ReplyHold, nil)
	a := b.Open("reader", nil)
	defer a.Close()
	other := b.Open("other", nil)
	defer other.Close()
	if err := other.Reserve(ReplyHold); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(50 * time.Millisecond); other.Release(ReplyHold) }()
	var g ReplyGate
	reads := 0
	v, held, err := ReadForReply(context.Background(), a, &g, 2, 5*time.Second, func() (string, int, error) {
		reads++
		if reads == 1 {
			if err := g.Admit(ReplyHold); err != nil { // the first store: admitted, copied, then ErrClosed
				t.Fatalf("first admit: %v", err)
			}
		}
		if err := g.Admit(ReplyHold); err != nil { // the next store
			return "", 0, err
		}
		return "v", ReplyHold, nil
	})
	if err != nil || v != "v" {
		t.Fatalf("read: %q, %v", v, err)
	}
	a.Release(held)
	if h := a.Held(); h != 0 {
		t.Fatalf("after the read's room was given back the reader still holds %d bytes (held %d, %d reads)", h, held, reads)
	}
}

// TestReadForReplyOpeningOpensForBigValuesOnly: ReadForReplyOpening opens the account only once a read meets a
// big value: not for small values nor a failed read; then for one the engine asks the gate about (reserved before
// the copy, and waited for when there is no room) and for one it does not (a value a cache shares, reserved once
// read), in the account opened once.
func TestReadForReplyOpeningOpensForBigValuesOnly(t *testing.T) {
	b := New(4*ReplyHold, nil)
	var a *Account
	opens := 0
	open := func() *Account {
		opens++
		if a == nil {
			a = b.Open("reader", nil)
		}
		return a
	}
	defer func() { a.Close() }()
	var g ReplyGate
	gated := func(n int) func() (string, int, error) { // an engine's Get: it asks the gate, then copies
		return func() (string, int, error) {
			if err := admitTo(&g, n); err != nil {
				return "", 0, err
			}
			return "v", n, nil
		}
	}
	shared := func(n int) func() (string, int, error) { return func() (string, int, error) { return "v", n, nil } }
	boom := errors.New("boom")
	for _, read := range []func() (string, int, error){gated(ReplyHold - 1), shared(100), func() (string, int, error) { return "", 0, boom }} {
		if _, held, _ := ReadForReplyOpening(context.Background(), open, &g, 1, time.Second, read); held != 0 || opens != 0 {
			t.Fatalf("a small value or failed read: held %d, account opened %d times", held, opens)
		}
	}
	for _, read := range []func() (string, int, error){gated(ReplyHold), shared(ReplyHold)} {
		v, held, err := ReadForReplyOpening(context.Background(), open, &g, 2, time.Second, read)
		if v != "v" || held != 2*ReplyHold || err != nil || a.Held() != 2*ReplyHold {
			t.Fatalf("a big value: %q, held %d (account %d), %v", v, held, a.Held(), err)
		}
		a.Release(held)
	}
	other := b.Open("other", nil)
	defer other.Close()
	if err := other.Reserve(3 * ReplyHold); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(50 * time.Millisecond); other.Release(3 * ReplyHold) }()
	if v, held, err := ReadForReplyOpening(context.Background(), open, &g, 1, 5*time.Second, gated(2*ReplyHold)); v != "v" || held != 2*ReplyHold || err != nil || a.Held() != 2*ReplyHold {
		t.Fatalf("after a wait: %q, held %d (account %d), %v", v, held, a.Held(), err)
	}
	if opens == 0 || b.Used() != 2*ReplyHold {
		t.Fatalf("account opened %d times; the budget holds %d", opens, b.Used())
	}
	noBudget := func() *Account { return nil }
	for _, read := range []func() (string, int, error){gated(ReplyHold), shared(ReplyHold)} {
		if v, held, err := ReadForReplyOpening(context.Background(), noBudget, &g, 1, time.Second, read); v != "v" || held != 0 || err != nil {
			t.Fatalf("without a budget: %q, held %d, %v", v, held, err)
		}
	}
}

// admitTo is g.Admit as an engine reaches it (engine.AdmitValue asks only for values of GateFrom bytes or more).
func admitTo(g *ReplyGate, n int) error {
	if n < 64<<10 {
		return nil
	}
	return g.Admit(n)
}
