package remote

import "anykv/internal/engine"

// Entry is one item of a scan page, with its key.
type Entry struct {
	Key  []byte
	Item engine.Item
}

// ScanPages is engine.Scanner's walk for adapters that read a table in key order a page at a time (SQL
// datastores: ORDER BY key LIMIT size). page returns up to size items in key order starting at from (included
// on the first call, excluded after) and ending before r.End; ScanPages hands them to fn and asks for the page
// after the last key until a page comes back short or fn returns false.
func ScanPages(r engine.Range, size int, page func(from []byte, inclusive bool) ([]Entry, error),
	fn func([]byte, engine.Item) bool) error {
	from, incl := r.Start, true
	if from == nil {
		from = []byte{}
	}
	for {
		got, err := page(from, incl)
		if err != nil {
			return err
		}
		for _, e := range got {
			if !fn(e.Key, e.Item) {
				return nil
			}
		}
		if len(got) < size {
			return nil
		}
		from, incl = got[len(got)-1].Key, false
	}
}
