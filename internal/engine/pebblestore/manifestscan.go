package pebblestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/atomicfs"
)

// Pebble loads the MANIFEST (the log of version edits that lists the live sstables) up to its first unreadable
// record and silently ignores the rest (version_set.go load: "Break instead of returning an error if the record
// is corrupted"), so one flipped byte in the middle of it drops every sstable added after that point. A crash
// can only tear the tail: a readable record after an unreadable one means damage. scanManifest checks that.

// manifestName returns the base name of the store's current MANIFEST, or "" for a store not created yet.
func manifestName(fs vfs.FS, dir string) (string, error) {
	name, err := atomicfs.ReadMarker(fs, dir, "manifest")
	if errors.Is(err, os.ErrNotExist) || (err == nil && name == "") {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("pebblestore: find the MANIFEST: %w", err)
	}
	return name, nil
}

// logScan is what scanRecords found in a record log.
type logScan struct {
	size     int64 // bytes in the file
	validEnd int64 // offset where the readable records end
	records  int
	// damaged: a readable chunk follows the first unreadable record, so the records after validEnd were written
	// and later damaged; a crash does not leave that.
	damaged bool
	// readErr is why reading stopped at validEnd (nil at a clean end).
	readErr error
}

// scanRecords reads the record log at path (Pebble's record format, as the MANIFEST uses) to its end.
func scanRecords(fs vfs.FS, path string) (logScan, error) {
	f, err := fs.Open(path)
	if err != nil {
		return logScan{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return logScan{}, fmt.Errorf("pebblestore: read %s: %w", path, err)
	}
	ls := logScan{size: int64(len(data))}
	rr := record.NewReader(bytes.NewReader(data), 0)
	for {
		ls.validEnd = rr.Offset()
		r, err := rr.Next()
		if err == nil {
			_, err = io.Copy(io.Discard, r)
		}
		if errors.Is(err, io.EOF) {
			ls.validEnd = ls.size
			return ls, nil
		}
		if err != nil {
			ls.readErr = err
			ls.damaged = validChunkAfter(data, ls.validEnd+1)
			return ls, nil
		}
		ls.records++
	}
}

// Pebble's record chunks: a 7-byte header (checksum uint32, length uint16, type byte) then the payload, inside
// 32 KiB blocks; the checksum is a masked CRC-32C of the type byte and the payload.
const (
	recordBlockSize  = 32 << 10
	chunkHeaderSize  = 7
	chunkTypeFull    = 1
	chunkTypeLast    = 4
	crcMaskDelta     = 0xa282ead8
	minTrustedLength = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// validChunkAfter reports whether any offset at or after from holds a chunk whose checksum matches: a false
// positive needs a 32-bit checksum collision, and a zeroed or truncated tail has none.
func validChunkAfter(data []byte, from int64) bool {
	for p := from; p+chunkHeaderSize <= int64(len(data)); p++ {
		typ := data[p+6]
		if typ < chunkTypeFull || typ > chunkTypeLast {
			continue
		}
		length := int64(binary.LittleEndian.Uint16(data[p+4:]))
		end := p + chunkHeaderSize + length
		blockEnd := (p/recordBlockSize + 1) * recordBlockSize
		if length < minTrustedLength || end > int64(len(data)) || end > blockEnd {
			continue
		}
		c := crc32.Checksum(data[p+6:end], castagnoli)
		if binary.LittleEndian.Uint32(data[p:]) == (c>>15|c<<17)+crcMaskDelta {
			return true
		}
	}
	return false
}

// checkManifest scans the current MANIFEST and returns its damage, if any.
func checkManifest(fs vfs.FS, dir string) ([]Damage, error) {
	name, err := manifestName(fs, dir)
	if err != nil || name == "" {
		return nil, err
	}
	ls, err := scanRecords(fs, fs.PathJoin(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return []Damage{{File: name, Problem: "missing (the manifest marker names it)", Lost: "the list of live sstables: every item"}}, nil
	}
	if err != nil {
		return nil, err
	}
	if !ls.damaged {
		return nil, nil
	}
	return []Damage{{
		File: name,
		Problem: fmt.Sprintf("unreadable record at offset %d of %d bytes (%v), followed by readable ones",
			ls.validEnd, ls.size, ls.readErr),
		Lost: fmt.Sprintf("%d bytes of version edits after offset %d, and the sstables only they list", ls.size-ls.validEnd, ls.validEnd),
	}}, nil
}
