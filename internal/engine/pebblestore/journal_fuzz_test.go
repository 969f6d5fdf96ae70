package pebblestore

import (
	"bytes"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// FuzzJournal reads arbitrary bytes as a journal file, as Open does after a crash: no panic, a damage offset
// inside the file, and records that are slices of it. It also splits the input at 0xff into batches, journals
// them, and reads them back whole, then from the file cut at cut (a kill in the middle of a write): a cut
// file gives a prefix of the records and is never reported damaged, which would make Open refuse the store.
func FuzzJournal(f *testing.F) {
	f.Add([]byte("b1\xffbatch two\xff"), uint16(30))
	f.Add([]byte(journalMagic+"\x02\x00\x00\x00"), uint16(0))
	f.Add([]byte("\x04\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00old1"), uint16(5))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		fs := vfs.NewMem()
		write := func(name string, b []byte) {
			fl, err := fs.Create(name, vfs.WriteCategoryUnspecified)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fl.Write(b); err != nil {
				t.Fatal(err)
			}
			fl.Close()
		}
		write("raw", data)
		recs, at, err := readJournalChecked(fs, "raw")
		if err != nil {
			t.Fatal(err)
		}
		if at < -1 || at >= len(data) {
			t.Fatalf("%x: damage at %d of %d bytes", data, at, len(data))
		}
		total := 0
		for _, r := range recs {
			total += len(r.repr)
		}
		if total > len(data) {
			t.Fatalf("%x: %d bytes of records", data, total)
		}

		j, err := openJournal(fs, "")
		if err != nil {
			t.Fatal(err)
		}
		batches := bytes.Split(data, []byte{0xff})
		for i, b := range batches {
			if err := j.append(uint64(i+1), b); err != nil {
				t.Fatal(err)
			}
		}
		j.close()
		name := j.names[j.cur]
		recs, at, err = readJournalChecked(fs, name)
		if err != nil || at != -1 || len(recs) != len(batches) {
			t.Fatalf("%d batches read back as %d records, damage at %d (%v)", len(batches), len(recs), at, err)
		}
		for i, r := range recs {
			if r.version != uint64(i+1) || !bytes.Equal(r.repr, batches[i]) {
				t.Fatalf("record %d: version %d %q, want %q", i, r.version, r.repr, batches[i])
			}
		}
		fl, err := fs.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		whole := make([]byte, 1<<20)
		n, _ := fl.ReadAt(whole, 0)
		fl.Close()
		whole = whole[:n]
		k := len(journalMagic) + int(cut)%(len(whole)-len(journalMagic)+1)
		write("cut", whole[:k])
		cutRecs, at, err := readJournalChecked(fs, "cut")
		if err != nil || at != -1 || len(cutRecs) > len(recs) {
			t.Fatalf("cut at %d of %d: %d records, damage at %d (%v)", k, len(whole), len(cutRecs), at, err)
		}
		for i, r := range cutRecs {
			if r.version != recs[i].version || !bytes.Equal(r.repr, recs[i].repr) {
				t.Fatalf("cut at %d: record %d differs", k, i)
			}
		}
	})
}
