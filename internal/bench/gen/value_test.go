package gen

import (
	"errors"
	"testing"
)

func TestValueRoundTrip(t *testing.T) {
	kh := KeyHash("usertable", "user1")
	for _, size := range []int{0, 10, HeaderLen, HeaderLen + 1, 100, 1000, 65536} {
		v := Encode(nil, kh, 77, size)
		want := size
		if want < HeaderLen {
			want = HeaderLen
		}
		if len(v) != want {
			t.Fatalf("size %d: len %d", size, len(v))
		}
		h, err := Decode(v)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if h.KeyHash != kh || h.Seq != 77 || h.Len != want {
			t.Errorf("size %d: header %+v", size, h)
		}
		for _, c := range v {
			if c < 0x21 || c > 0x7e {
				t.Fatalf("size %d: unprintable byte %q", size, c)
			}
		}
	}
}

func TestValueDetectsDamage(t *testing.T) {
	v := Encode(nil, KeyHash("t", "k"), 5, 200)
	for i := range v {
		bad := append([]byte(nil), v...)
		bad[i] ^= 0x01
		if _, err := Decode(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("flipping byte %d (%q) went unnoticed", i, v[i])
		}
	}
	if _, err := Decode(v[:len(v)-1]); err == nil {
		t.Error("truncation went unnoticed")
	}
	if _, err := Decode([]byte("hello")); err == nil {
		t.Error("foreign value accepted")
	}
	// Different writes and keys give different payloads.
	a := Encode(nil, KeyHash("t", "k"), 1, 200)
	b := Encode(nil, KeyHash("t", "k"), 2, 200)
	c := Encode(nil, KeyHash("t", "j"), 1, 200)
	if string(a[HeaderLen:]) == string(b[HeaderLen:]) || string(a[HeaderLen:]) == string(c[HeaderLen:]) {
		t.Error("payloads do not depend on key and write")
	}
}
