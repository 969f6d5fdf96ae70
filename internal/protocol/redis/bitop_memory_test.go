package redis

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// TestBitOpHoldsOneSourceAtATime: BITOP combines its sources one at a time. It held every source's value until
// the end, and on a disk engine each read is a copy: BITOP AND d k k ... k of one 64 MiB key held 64 MiB per
// argument (4.4 GB for 60, from a 400-byte command). Here 200 arguments of a 512 KiB key: 100 MiB held before,
// a few values' worth now.
func TestBitOpHoldsOneSourceAtATime(t *testing.T) {
	ts := startPebbleServer(t)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	const size, n = 512 << 10, 200
	if err := c.Set(ctx, "k", strings.Repeat("\xa5", size), 0).Err(); err != nil {
		t.Fatal(err)
	}
	args := []any{"bitop", "and", "d"}
	for range n {
		args = append(args, "k")
	}
	var got int64
	var err error
	peak := heapPeak(func() { got, err = c.Do(ctx, args...).Int64() })
	if err != nil || got != size {
		t.Fatalf("BITOP AND d k*%d: %d, %v", n, got, err)
	}
	if peak > 16*size {
		t.Errorf("BITOP AND over %d arguments of a %d KiB key held %d MiB at its peak; want a few values' worth", n, size>>10, peak>>20)
	}
	if v, err := c.Get(ctx, "d").Result(); err != nil || v != strings.Repeat("\xa5", size) {
		t.Errorf("GET d: %d bytes, %v", len(v), err)
	}
}

// TestBitOpMatchesByteByByte: AND, OR, XOR and NOT over sources of different lengths, missing keys and empty
// strings answer what combining byte by byte (a shorter string padded with zeros) answers.
func TestBitOpMatchesByteByByte(t *testing.T) {
	ts := startServer(t, Options{}, 0)
	c := ts.client(t, &goredis.Options{PoolSize: 1})
	rng := rand.New(rand.NewSource(1))
	for round := range 200 {
		op := []string{"and", "or", "xor", "not"}[rng.Intn(4)]
		k := 1 + rng.Intn(4)
		if op == "not" {
			k = 1
		}
		var srcs [][]byte
		args := []any{"bitop", op, "dst"}
		for i := range k {
			key := fmt.Sprintf("s%d", i)
			args = append(args, key)
			if rng.Intn(5) == 0 {
				c.Del(ctx, key)
				srcs = append(srcs, nil)
				continue
			}
			v := make([]byte, rng.Intn(6))
			rng.Read(v)
			c.Set(ctx, key, v, 0)
			srcs = append(srcs, v)
		}
		longest := 0
		for _, v := range srcs {
			longest = max(longest, len(v))
		}
		want := make([]byte, longest)
		for i := range want {
			at := func(v []byte) byte {
				if i < len(v) {
					return v[i]
				}
				return 0
			}
			b := at(srcs[0])
			for _, v := range srcs[1:] {
				switch op {
				case "and":
					b &= at(v)
				case "or":
					b |= at(v)
				case "xor":
					b ^= at(v)
				}
			}
			if op == "not" {
				b = ^b
			}
			want[i] = b
		}
		n, err := c.Do(ctx, args...).Int64()
		if err != nil || n != int64(longest) {
			t.Fatalf("round %d: %v: %d, %v; want %d", round, args, n, err, longest)
		}
		got, err := c.Get(ctx, "dst").Bytes()
		if longest == 0 {
			if err != goredis.Nil {
				t.Fatalf("round %d: %v: dst %x, %v; want no key", round, args, got, err)
			}
			continue
		}
		if err != nil || string(got) != string(want) {
			t.Fatalf("round %d: %v over %x: %x, %v; want %x", round, args, srcs, got, err, want)
		}
	}
}
