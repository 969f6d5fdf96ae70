package pebblestore

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestVerify: a healthy store (cleanly closed, and a checkpoint of it open) verifies with every item counted; each
// damage Open refuses is reported by Verify naming the same file; Verify changes nothing.
func TestVerify(t *testing.T) {
	live, crashed := cleanAndCrashed(t)
	for name, dir := range map[string]string{"clean": live, "crashed": crashed} {
		rep, err := Verify(dir, nil)
		if err != nil || len(rep.Damage) != 0 {
			t.Fatalf("%s: Verify = %+v, %v", name, rep, err)
		}
		// A clean close leaves the exact last version; a crash leaves the ceiling the writer last recorded.
		exact := rep.Version == sweepKeys
		if name == "crashed" {
			exact = rep.Version >= sweepKeys && rep.Version <= sweepKeys+versionReserve
		}
		if rep.Items != sweepKeys || !exact || rep.Clean != (name == "clean") ||
			rep.Tables == 0 || rep.ManifestRecords == 0 {
			t.Fatalf("%s: report %+v", name, rep)
		}
	}
	if _, err := os.Stat(filepath.Join(live, cleanName)); err != nil {
		t.Fatalf("Verify removed the clean-shutdown record: %v", err)
	}

	names := listNames(t, live)
	cases := []struct {
		from string
		kind fileKind
		dmg  damageKind
	}{
		{live, fileKinds[0], damageKinds[0]},    // last WAL, after a clean shutdown
		{live, fileKinds[3], damageKinds[2]},    // OPTIONS
		{live, fileKinds[4], damageKinds[1]},    // the record itself
		{crashed, fileKinds[0], walEarly},       // last WAL, a third in, after a crash
		{crashed, fileKinds[1], damageKinds[1]}, // MANIFEST middle, after a crash
		{crashed, fileKinds[2], damageKinds[1]}, // sstable data block
		{crashed, fileKinds[2], damageKinds[2]}, // truncated sstable
	}
	for _, c := range cases {
		file := c.kind.pick(names)
		if c.from == crashed {
			file = c.kind.pick(listNames(t, crashed))
		}
		t.Run(c.kind.name+"/"+c.dmg.name, func(t *testing.T) {
			dir := copyDir(t, c.from)
			c.dmg.do(t, filepath.Join(dir, file))
			rep, err := Verify(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			var files []string
			for _, d := range rep.Damage {
				files = append(files, d.File)
			}
			if !slices.Contains(files, file) {
				t.Fatalf("Verify names %v, not the damaged %s: %+v", files, file, rep.Damage)
			}
		})
	}
	s, err := Open(Options{Dir: live, CacheBytes: 8 << 20, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(live, nil); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("Verify of an open store: %v, want it refused as in use", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(t.TempDir(), nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Verify of an empty directory: %v", err)
	}
}
