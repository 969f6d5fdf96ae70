package memcache

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"

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
