package pebblestore

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"anykv/internal/engine"
)

// ErrDamaged is Open's refusal of a store whose files are damaged (see DamageError for which ones). It wraps
// engine.ErrCorrupt.
var ErrDamaged = fmt.Errorf("%w: store damaged", engine.ErrCorrupt)

// Damage is one problem found in a store's files: which file, what is wrong with it, and what opening the
// store anyway (Options.Recover) loses, as far as can be known.
type Damage struct {
	File    string // base name in the store's directory
	Problem string
	Lost    string
}

// String is one line for logs and reports.
func (d Damage) String() string {
	s := d.File + ": " + d.Problem
	if d.Lost != "" {
		s += "; " + d.Lost
	}
	return s
}

// DamageError is the error of an Open that found damage and was not told to recover: it names every damaged
// file. errors.Is(err, ErrDamaged) holds.
type DamageError struct {
	Dir    string
	Damage []Damage
	cause  error // Pebble's own error, when Pebble found the damage
}

func (e *DamageError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pebblestore: store %s is damaged:", e.Dir)
	for _, d := range e.Damage {
		b.WriteString("\n  ")
		b.WriteString(d.String())
	}
	return b.String()
}

func (e *DamageError) Unwrap() []error {
	if e.cause != nil {
		return []error{ErrDamaged, e.cause}
	}
	return []error{ErrDamaged}
}

// pebbleFileRE finds the sstables Pebble's errors name: "L6: 000013: object size mismatch", "backing file
// 000015 error", "invalid table 000015", "file 000013: block 12056/1369: crc32c checksum mismatch".
var pebbleFileRE = regexp.MustCompile(`(?:L\d: |file |table )(\d{6})\b`)

// namedDamage turns an error of Pebble's that names damaged sstables into a DamageError naming them; other
// errors are returned as they are. Pebble cannot open past these (Options.Recover neither).
func namedDamage(fs vfs.FS, dir string, err error) error {
	if !pebble.IsCorruptionError(err) && !errors.Is(err, os.ErrNotExist) && !strings.Contains(err.Error(), "size mismatch") {
		return err
	}
	de := &DamageError{Dir: dir, cause: err}
	seen := map[string]bool{}
	for _, m := range pebbleFileRE.FindAllStringSubmatch(err.Error(), -1) {
		if name := m[1] + ".sst"; !seen[name] {
			seen[name] = true
			de.Damage = append(de.Damage, Damage{File: name, Problem: err.Error(),
				Lost: "the store cannot open without it: restore a backup"})
		}
	}
	if len(de.Damage) == 0 && strings.Contains(err.Error(), "replaying WAL") {
		de.Damage, _ = walDamage(fs, dir) // Pebble does not say which WAL
	}
	if len(de.Damage) == 0 {
		return err
	}
	return de
}

// DamagedFiles returns the files named by err if it is a DamageError, else nil.
func DamagedFiles(err error) []string {
	var de *DamageError
	if !errors.As(err, &de) {
		return nil
	}
	files := make([]string, len(de.Damage))
	for i, d := range de.Damage {
		files[i] = d.File
	}
	return files
}
