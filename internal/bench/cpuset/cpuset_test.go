package cpuset

import (
	"runtime"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string][]int{"0": {0}, "0-2": {0, 1, 2}, "3,1-2,1": {1, 2, 3}, " 1 , 0 ": {0, 1}} {
		got, err := Parse(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
		if again, _ := Parse(String(got)); !slices.Equal(again, want) {
			t.Errorf("String(%v) = %q does not parse back", got, String(got))
		}
	}
	for _, bad := range []string{"", ",", "a", "2-1", "-1", "0-", "5000"} {
		if got, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", bad, got)
		}
	}
}

// TestPinSelf pins the test process to its last allowed CPU, checks
// /proc/self/status and GOMAXPROCS, and restores both.
func TestPinSelf(t *testing.T) {
	orig, err := Allowed(0)
	if err != nil {
		t.Fatal(err)
	}
	procs := runtime.GOMAXPROCS(0)
	t.Cleanup(func() {
		if err := PinSelf(orig); err != nil {
			t.Errorf("restore: %v", err)
		}
		runtime.GOMAXPROCS(procs)
	})
	one := orig[len(orig)-1:]
	if err := PinSelf(one); err != nil {
		t.Fatal(err)
	}
	got, err := Allowed(0)
	if err != nil || !slices.Equal(got, one) {
		t.Errorf("Cpus_allowed_list = %v, %v; want %v", got, err, one)
	}
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("GOMAXPROCS = %d, want 1", n)
	}
}
