package memcache

import (
	"context"
	"testing"

	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

// TestStorageNumbersReadAsMemcachedReadsThem: memcached reads a storage line's flags, exptime, bytes and cas with
// strtoul/strtol (white space before, "-0", white space and anything after), so it stores the data block after
// such a line; anykv refused these lines and then ran the block as commands: a value "flush_all" emptied the
// store (each line below compared with memcached 1.6: STORED, EXISTS for the cas, HD for ms, whose data length
// memcached reads the same way). Now they store as there.
func TestStorageNumbersReadAsMemcachedReadsThem(t *testing.T) {
	store := kv.New(memstore.New(), kv.Options{SweepInterval: -1})
	defer store.Close()
	h := New(store, Options{})
	lines := []string{
		"set a 0 0 \t9", "set a -0 0 9", "set a 0 0 9\tjunk", "set a 0 \t0 9", "set a \v0 0 9",
		"set a 0 0 9\v", "set a 0 0 9\r", "set a 0 -0 9", "set a 0 0 +9", "set a 0 0 09", "cas a 0 0 9 -0",
		"ms a \t9 q", "ms a 9\r", "ms a 9\tT5",
	}
	in := "set keep 0 0 1\r\nx\r\n"
	want := "STORED\r\n"
	for _, l := range lines {
		in += l + "\r\nflush_all\r\n"
		switch l[:3] {
		case "cas":
			want += "EXISTS\r\n"
		case "ms ":
			if l != "ms a \t9 q" { // quiet: no HD
				want += "HD\r\n"
			}
		default:
			want += "STORED\r\n"
		}
	}
	in += "set b 0 0 -9\r\nget keep a\r\n" // refused by memcached too: its line resynchronises, as there
	want += "CLIENT_ERROR bad command line format\r\nVALUE keep 0 1\r\nx\r\nVALUE a 0 9\r\nflush_all\r\nEND\r\n"
	sc := &scriptConn{chunks: [][]byte{[]byte(in)}}
	h.ServeConn(context.Background(), sc)
	if got := sc.out.String(); got != want {
		t.Fatalf("replies %q,\nwant %q", got, want)
	}
}

func TestCNumber(t *testing.T) {
	for in, want := range map[string]int64{"9": 9, " 9": 9, "\t9": 9, "+9": 9, "-0": 0, "9\t": 9, "9\tx": 9, "09": 9} {
		if n, ok := cInt([]byte(in)); !ok || n != want {
			t.Errorf("cInt(%q) = %d, %v; want %d", in, n, ok, want)
		}
	}
	for _, in := range []string{"", "x", "-", "9x", " ", "99999999999999999999999"} {
		if _, ok := cInt([]byte(in)); ok {
			t.Errorf("cInt(%q) accepted", in)
		}
	}
	if _, ok := cUint([]byte("-1")); ok {
		t.Error("cUint(-1) accepted")
	}
	if n, ok := cUint([]byte("-0")); !ok || n != 0 {
		t.Errorf("cUint(-0) = %d, %v", n, ok)
	}
}
