package engine

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// randomBatch makes mutations with random arguments for their own op only: the encoding carries no others.
func randomBatch(rng *rand.Rand) *Batch {
	bytesOrNil := func(n int) []byte {
		if n == 0 {
			return nil
		}
		b := make([]byte, n)
		rng.Read(b)
		return b
	}
	coin := func() bool { return rng.Intn(2) == 0 }
	b := &Batch{Now: rng.Int63() - rng.Int63()}
	for i := rng.Intn(5); i > 0; i-- {
		m := Mutation{Op: Op(1 + rng.Intn(int(opMax)-1)), Table: string(bytesOrNil(rng.Intn(4))), Key: bytesOrNil(rng.Intn(9)),
			Cond: Cond(rng.Intn(4)), Guard: coin(), Group: rng.Uint32()}
		if m.Cond == CondVersion {
			m.Version = rng.Uint64()
		}
		value, flags, expires := usesItem(&m)
		switch m.Op {
		case OpGet, OpSet, OpDelete:
			m.AnyKind = coin()
		}
		if m.Op == OpCall {
			m.Call = CallArgs{Name: string(bytesOrNil(rng.Intn(6))), Args: [][]byte{bytesOrNil(rng.Intn(3)), bytesOrNil(rng.Intn(3))},
				AnyKey: coin()}
			if coin() {
				m.Call.Keys = [][]byte{bytesOrNil(rng.Intn(3))}
			}
			m.Target = Target{Table: string(bytesOrNil(rng.Intn(3))), Key: bytesOrNil(rng.Intn(3))}
		}
		if m.Op >= OpMemberGet && m.Op <= OpMembers || m.Op == OpCheck {
			m.Coll = CollArgs{Kind: Kind(rng.Intn(int(kindMax))), Member: bytesOrNil(rng.Intn(5))}
		}
		switch m.Op {
		case OpMemberIncr:
			m.Incr = IncrArgs{Unsigned: coin(), Decr: coin(), Delta: -rng.Int63(), UDelta: rng.Uint64(), Initial: rng.Uint64(), Create: coin()}
		case OpSet:
			m.Set = SetArgs{KeepTTL: coin(), Blind: coin()}
		case OpIncr:
			m.Incr = IncrArgs{Unsigned: coin(), Decr: coin(), Delta: -rng.Int63(), UDelta: rng.Uint64(), Initial: rng.Uint64(), Create: coin()}
			m.Touch = coin()
		case OpGet:
			m.Touch = coin()
			expires = m.Touch
		case OpAppend, OpPrepend, OpSetRange:
			m.Edit = EditArgs{Offset: rng.Int63(), MaxSize: rng.Intn(1 << 20), Create: m.Op != OpSetRange && coin()}
		case OpExpire:
			m.Expire = ExpireArgs{Cond: ExpireCond(rng.Intn(6))}
		case OpRename, OpCopy, OpSwap:
			m.Target = Target{Table: string(bytesOrNil(rng.Intn(3))), Key: bytesOrNil(rng.Intn(3))}
		}
		if value {
			m.Value = bytesOrNil(rng.Intn(30))
		}
		if flags {
			m.Flags = rng.Uint32()
		}
		if expires {
			m.Expires = rng.Int63()
		}
		b.Muts = append(b.Muts, m)
	}
	return b
}

func TestCodecRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 2000; i++ {
		b := randomBatch(rng)
		got, err := DecodeBatch(AppendBatch(nil, b))
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if len(b.Muts) == 0 {
			b.Muts = []Mutation{}
		}
		if !reflect.DeepEqual(got, b) {
			t.Fatalf("round trip changed the batch:\n got %+v\nwant %+v", got, b)
		}
	}
}

func TestCodecRejectsTruncation(t *testing.T) {
	b := &Batch{Now: 5, Muts: []Mutation{{Op: OpSet, Table: "t", Key: []byte("k"), Value: []byte("v")}}}
	enc := AppendBatch(nil, b)
	for i := 0; i < len(enc); i++ {
		if _, err := DecodeBatch(enc[:i]); err == nil {
			t.Fatalf("decoding %d of %d bytes succeeded", i, len(enc))
		}
	}
	if _, err := DecodeBatch(append(enc, 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
}

// FuzzDecodeBatch: any input decodes or fails cleanly, and what decodes survives re-encoding: decoding the
// re-encoded batch gives the same batch once it is in the current version (an older version's fields that the
// current one no longer carries for an op are dropped by the first re-encoding).
func FuzzDecodeBatch(f *testing.F) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 8; i++ {
		f.Add(AppendBatch(nil, randomBatch(rng)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeBatch(data)
		if err != nil {
			return
		}
		cur, err := DecodeBatch(AppendBatch(nil, b))
		if err != nil {
			t.Fatalf("re-encoding failed: %v", err)
		}
		again, err := DecodeBatch(AppendBatch(nil, cur))
		if err != nil || !reflect.DeepEqual(again, cur) {
			t.Fatalf("re-encoding changed the batch: %v", err)
		}
	})
}

func TestParseInt(t *testing.T) {
	good := map[string]int64{"0": 0, "-1": -1, "9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63, "10": 10}
	for s, want := range good {
		if n, ok := ParseInt([]byte(s)); !ok || n != want {
			t.Errorf("ParseInt(%q) = %d, %v", s, n, ok)
		}
	}
	for _, s := range []string{"", "-", "-0", "00", "01", "+1", " 1", "1 ", "9223372036854775808", "1e3", "0x1"} {
		if _, ok := ParseInt([]byte(s)); ok {
			t.Errorf("ParseInt(%q) accepted", s)
		}
	}
}

// Every byte field of an encoded mutation carries a uvarint length, so no two batches share an encoding: these
// pairs, which shift bytes across a field boundary, collide under a design with separators or truncating
// lengths, and here each encodes differently and decodes back to itself.
func TestCodecEncodingCannotCollide(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	set := func(table, key, value string) Mutation {
		m := Mutation{Op: OpSet, Table: table}
		if key != "" {
			m.Key = []byte(key)
		}
		if value != "" {
			m.Value = []byte(value)
		}
		return m
	}
	inner := AppendBatch(nil, &Batch{Muts: []Mutation{set("t", "k2", "v")}})
	pairs := [][2]*Batch{
		{{Muts: []Mutation{set("ab", "c", "")}}, {Muts: []Mutation{set("a", "bc", "")}}},
		{{Muts: []Mutation{set("t", "k", "v")}}, {Muts: []Mutation{set("t", "kv", "")}}},
		{{Muts: []Mutation{set("t", "a\x00b", "c")}}, {Muts: []Mutation{set("t", "a", "b\x00c")}}},
		{{Muts: []Mutation{set(a(65537), "k", "")}}, {Muts: []Mutation{set("a", a(65536)+"k", "")}}},
		{{Muts: []Mutation{set(a(256), "k", "")}}, {Muts: []Mutation{set("t", a(256)+"k", "")}}},
		{{Muts: []Mutation{{Op: OpRename, Table: "t", Key: []byte("k"), Target: Target{Table: "xy"}}}},
			{Muts: []Mutation{{Op: OpRename, Table: "t", Key: []byte("k"), Target: Target{Table: "x", Key: []byte("y")}}}}},
		// A value holding the encoding of a mutation is not a second mutation.
		{{Muts: []Mutation{set("t", "k", string(inner[3:]))}}, {Muts: []Mutation{set("t", "k", ""), set("t", "k2", "v")}}},
	}
	seen := map[string][2]int{}
	for i, p := range pairs {
		for j, b := range p {
			enc := AppendBatch(nil, b)
			if other, ok := seen[string(enc)]; ok {
				t.Fatalf("pair %d batch %d shares its encoding with pair %d batch %d", i, j, other[0], other[1])
			}
			seen[string(enc)] = [2]int{i, j}
			if got, err := DecodeBatch(enc); err != nil || !reflect.DeepEqual(got, b) {
				t.Fatalf("pair %d batch %d does not decode back to itself (error %v)", i, j, err)
			}
		}
	}
}
