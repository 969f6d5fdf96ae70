package memcache

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"anykv/internal/engine"
	"anykv/internal/engine/enginetest"
	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
	"anykv/internal/membudget"
)

// TestMetaGetWithoutValueReservesNothing: an mg that does not ask for the value (no v: the item's flags, size or
// CAS only) reads a big item without counting it against --maxmemory-clients, as its reply carries none of it: it
// neither waits for room nor is refused when the value could never fit twice in the budget.
func TestMetaGetWithoutValueReservesNothing(t *testing.T) {
	b := membudget.New(64<<20, nil)
	nc := dialBudget(t, b)
	val := strings.Repeat("v", 900<<10)
	fmt.Fprintf(nc, "set big 0 0 %d\r\n%s\r\n", len(val), val)
	r := bufio.NewReader(nc)
	if line, err := r.ReadString('\n'); line != "STORED\r\n" {
		t.Fatalf("set: %q, %v", line, err)
	}
	b.SetLimit(512 << 10) // the value and its reply would not fit
	io.WriteString(nc, "mg big s\r\nmg big\r\nversion\r\n")
	for _, want := range []string{"HD s921600", "HD", "VERSION"} {
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, want) {
			t.Fatalf("got %q, %v; want a line starting %q", line, err, want)
		}
	}
}

// TestBigGetIsNotCopiedBeforeItsRoom: a get of a big value that finds no room in maxmemory-clients is refused by
// the engine before it copies the value out (engine.ValueGate through membudget.ReplyGate), waits for room, and
// copies it once. Before, it copied the value, found no room, let it go and copied it again after the wait.
func TestBigGetIsNotCopiedBeforeItsRoom(t *testing.T) {
	b := membudget.New(3<<20, nil)
	e := &enginetest.Copies{Engine: memstore.New()}
	ts := startServerOver(t, e, func(o *Options, _ *kv.Options) { o.Budget = b })
	nc := dial(t, ts.addr).c
	r := bufio.NewReader(nc)
	val := strings.Repeat("v", 1<<20)
	fmt.Fprintf(nc, "set big 0 0 %d\r\n%s\r\n", len(val), val)
	if line, err := r.ReadString('\n'); line != "STORED\r\n" {
		t.Fatalf("set: %q, %v", line, err)
	}
	others := b.Open("others", nil)
	defer others.Close()
	if err := others.Reserve(3 << 19); err != nil { // 1.5 MiB free: less than the value and its reply
		t.Fatal(err)
	}
	time.AfterFunc(300*time.Millisecond, func() { others.Release(3 << 19) })
	start := time.Now()
	io.WriteString(nc, "get big\r\n")
	line, err := r.ReadString('\n')
	if err != nil || line != fmt.Sprintf("VALUE big 0 %d\r\n", len(val)) {
		t.Fatalf("get: %q, %v", line, err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("get answered in %v, before there was room", took)
	}
	if n := e.N.Load(); n != 1 {
		t.Errorf("the get copied the value %d times, want once (with room)", n)
	}
}

// TestBigGetsGiveTheirRoomBack: what a get reserves for a big value is given back after an engine error that
// came after the gate admitted the value, and when the value is deleted while the get waits for room (the get
// then answers END). (An independent review's test of the ValueGate change.)
func TestBigGetsGiveTheirRoomBack(t *testing.T) {
	b := membudget.New(3<<20, nil)
	ts := startServerOver(t, enginetest.FailsAfterGet{Engine: memstore.New(), Key: "fail", Err: errors.New("durability wait failed")}, func(o *Options, _ *kv.Options) { o.Budget = b })
	nc := dial(t, ts.addr).c
	r := bufio.NewReader(nc)
	val := strings.Repeat("v", 1<<20)
	for _, k := range []string{"big", "fail"} {
		fmt.Fprintf(nc, "set %s 0 0 %d\r\n%s\r\n", k, len(val), val)
		if line, err := r.ReadString('\n'); line != "STORED\r\n" {
			t.Fatalf("set: %q, %v", line, err)
		}
	}
	used := func(what string) {
		t.Helper()
		time.Sleep(50 * time.Millisecond)
		if u := b.Used(); u > 64<<10 {
			t.Fatalf("%s: budget holds %d after the reply", what, u)
		}
	}
	io.WriteString(nc, "get fail\r\n")
	if line, _ := r.ReadString('\n'); !strings.HasPrefix(line, "SERVER_ERROR") {
		t.Fatalf("get fail: %q", line)
	}
	used("error after admit")
	others := b.Open("others", nil)
	defer others.Close()
	others.Reserve(3 << 19)
	time.AfterFunc(200*time.Millisecond, func() {
		ts.store.Apply(context.Background(), []engine.Mutation{{Op: engine.OpDelete, Table: kv.DefaultTable, Key: []byte("big")}})
		others.Release(3 << 19)
	})
	io.WriteString(nc, "get big\r\n")
	if line, _ := r.ReadString('\n'); line != "END\r\n" {
		t.Fatalf("get of a value gone meanwhile: %q", line)
	}
	used("value gone")
}
