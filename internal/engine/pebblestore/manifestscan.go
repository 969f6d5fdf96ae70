package pebblestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
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
	data, err := readFile(fs, path)
	if err != nil {
		return logScan{}, err
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

// WAL damage. Pebble stops replaying the last WAL at its first unreadable record and calls that a torn write,
// unless a later chunk's synced offset proves the damaged record had been synced; but it looks for that proof
// only in the blocks after the damaged one (record.Reader.readAheadForCorruption), so damage in the last 32 KiB
// block of the WAL, where the newest acknowledged writes are, goes unnoticed. walDamage looks in the whole rest of
// the file.

// walDamage returns the damage of every WAL in dir: an unreadable record followed by a readable chunk of the
// same WAL whose synced offset lies past it (the record had been synced, so no crash explains it).
func walDamage(fs vfs.FS, dir string) ([]Damage, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, fmt.Errorf("pebblestore: list %s: %w", dir, err)
	}
	var damage []Damage
	for _, name := range names {
		numText, ok := strings.CutSuffix(name, ".log")
		num, perr := strconv.ParseUint(numText, 10, 64)
		if !ok || perr != nil {
			continue
		}
		data, err := readFile(fs, fs.PathJoin(dir, name))
		if err != nil {
			return nil, err
		}
		// record.NewReader takes the WAL's number as a type of Pebble's internal package: a field of that type
		// (set through a type parameter) stands in for its name.
		var info pebble.SSTableInfo
		setUint(&info.BackingSSTNum, num)
		rr := record.NewReader(bytes.NewReader(data), info.BackingSSTNum)
		for {
			at := rr.Offset()
			r, err := rr.Next()
			if err == nil {
				_, err = io.Copy(io.Discard, r)
			}
			if err == nil {
				continue
			}
			if !errors.Is(err, io.EOF) && syncedPast(data, at, uint32(num)) {
				damage = append(damage, Damage{File: name,
					Problem: fmt.Sprintf("unreadable record at offset %d of %d bytes (%v), followed by records "+
						"written after it was synced", at, len(data), err),
					Lost: fmt.Sprintf("the %d bytes of acknowledged writes after offset %d, which replay skips",
						len(data)-int(at), at)})
			}
			break
		}
	}
	return damage, nil
}

// syncedPast reports whether a valid WAL-sync chunk of WAL logNum after offset at says the file was synced past
// at. Such a chunk (Pebble's walSync wire format) has a 19-byte header: checksum uint32, length uint16, type byte
// (9-12), log number uint32, synced offset uint64; the checksum covers the type byte to the payload's end.
func syncedPast(data []byte, at int64, logNum uint32) bool {
	const header = 19
	for p := at + 1; p+header <= int64(len(data)); p++ {
		if typ := data[p+6]; typ < 9 || typ > 12 || binary.LittleEndian.Uint32(data[p+7:]) != logNum {
			continue
		}
		end := p + header + int64(binary.LittleEndian.Uint16(data[p+4:]))
		if end > int64(len(data)) || end > (p/recordBlockSize+1)*recordBlockSize {
			continue
		}
		c := crc32.Checksum(data[p+6:end], castagnoli)
		if binary.LittleEndian.Uint32(data[p:]) == (c>>15|c<<17)+crcMaskDelta &&
			int64(binary.LittleEndian.Uint64(data[p+11:])) > at {
			return true
		}
	}
	return false
}

// setUint sets an integer of a type that cannot be named here.
func setUint[T ~uint64](p *T, v uint64) { *p = T(v) }

// readFile reads a whole file.
func readFile(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("pebblestore: read %s: %w", path, err)
	}
	return data, nil
}
