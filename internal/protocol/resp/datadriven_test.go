package resp

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestDataDriven runs the golden transcripts in testdata/parser and
// testdata/writer. Regenerate them with `go test -run TestDataDriven -rewrite`.
//
// parser: `parse [max-bulk=N] [max-args=N] [max-inline=N]` feeds the input
// (\r \n \t \\ \xHH escapes; the file's line breaks are dropped) and prints
// each command, then the error or the bytes left over. The same input is
// also parsed split at every byte and one byte at a time; any difference
// fails the test.
//
// writer: `write` runs one call per input line and prints the bytes it
// appends in RESP2 and in RESP3.
func TestDataDriven(t *testing.T) {
	datadriven.RunTest(t, "testdata/parser", runParse)
	datadriven.RunTest(t, "testdata/writer", runWrite)
}

func runParse(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "parse" {
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	l := DefaultLimits()
	d.MaybeScanArgs(t, "max-bulk", &l.MaxBulk)
	d.MaybeScanArgs(t, "max-args", &l.MaxArgs)
	d.MaybeScanArgs(t, "max-inline", &l.MaxInline)
	data, err := unescapeInput(d.Input)
	if err != nil {
		d.Fatalf(t, "input: %v", err)
	}
	whole := parseWhole(l, data)
	for k := 0; k <= len(data); k++ {
		if got := parseChunks(l, data[:k], data[k:]); !got.equal(whole) {
			d.Fatalf(t, "split at %d gives\n%s\nbut whole gives\n%s", k, got, whole)
		}
	}
	if got := parseBytewise(l, data); !got.equal(whole) {
		d.Fatalf(t, "byte by byte gives\n%s\nbut whole gives\n%s", got, whole)
	}
	if len(whole.cmds) == 0 && whole.err == "" && whole.buffered == 0 {
		return "(nothing)"
	}
	return whole.String()
}

func runWrite(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "write" {
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	var out strings.Builder
	w2, w3 := NewWriter(2), NewWriter(3)
	for _, line := range strings.Split(d.Input, "\n") {
		fmt.Fprintln(&out, line)
		for _, w := range []*Writer{w2, w3} {
			before := w.Len()
			if err := writeCall(w, line); err != nil {
				d.Fatalf(t, "%s: %v", line, err)
			}
			fmt.Fprintf(&out, "  resp%d: %q\n", w.Proto(), w.Bytes()[before:])
		}
	}
	return out.String()
}

// writeCall performs one Writer call described as "<method> [argument]".
func writeCall(w *Writer, line string) error {
	method, raw, _ := strings.Cut(line, " ")
	b, err := unescapeInput(raw)
	if err != nil {
		return err
	}
	arg := string(b)
	num := func() (int64, error) { return strconv.ParseInt(arg, 10, 64) }
	switch method {
	case "simple":
		w.SimpleString(arg)
	case "error":
		w.Error(arg)
	case "bulk", "bulkstring":
		if method == "bulk" {
			w.Bulk(b)
		} else {
			w.BulkString(arg)
		}
	case "null":
		w.Null()
	case "nullarray":
		w.NullArray()
	case "bool":
		b, err := strconv.ParseBool(arg)
		if err != nil {
			return err
		}
		w.Bool(b)
	case "double":
		f, err := strconv.ParseFloat(arg, 64)
		if arg == "-0" {
			f = math.Copysign(0, -1)
		}
		if err != nil {
			return err
		}
		w.Double(f)
	case "verbatim":
		format, text, _ := strings.Cut(arg, " ")
		w.Verbatim(format, text)
	case "int", "array", "map", "set", "push":
		n, err := num()
		if err != nil {
			return err
		}
		switch method {
		case "int":
			w.Int(n)
		case "array":
			w.ArrayHeader(int(n))
		case "map":
			w.MapHeader(int(n))
		case "set":
			w.SetHeader(int(n))
		case "push":
			w.PushHeader(int(n))
		}
	default:
		return fmt.Errorf("unknown writer call %q", method)
	}
	return nil
}
