package engine

import "testing"

// TestParseUintAsMemcached: incr/decr read a value as memcached 1.6's safe_strtoull does. The answers are those
// of memcached 1.6.18 to `set` of the value then `incr k 0` (anykv refused " 7", "+7" and "-0", which memcached
// counts from).
func TestParseUintAsMemcached(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{" 7", 7, true}, {"+7", 7, true}, {" +7", 7, true}, {"-0", 0, true}, {"-5", 0, false},
		{"7 x", 7, true}, {"7x", 0, false}, {"", 0, false}, {" ", 0, false}, {"\t7", 7, true},
		{"18446744073709551615", 1<<64 - 1, true}, {"18446744073709551616", 0, false},
		{"-18446744073709551615", 1, true}, {"0007", 7, true}, {"7\t", 7, true}, {"+", 0, false},
		{"-", 0, false}, {"++7", 0, false}, {"\n7", 7, true}, {"12   ", 12, true}, {"7\x00x", 7, true},
	}
	for _, c := range cases {
		if got, ok := ParseUint([]byte(c.in)); got != c.want || ok != c.ok {
			t.Errorf("ParseUint(%q) = %d, %v; memcached: %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
