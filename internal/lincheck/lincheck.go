// Package lincheck records histories of reads, writes and compare-and-sets on keys, as clients saw them, and
// checks them for linearizability with porcupine (github.com/anishathalye/porcupine): is there one order of the
// operations, each placed between its call and its return, in which every read returns the latest write? It is
// how the cluster tests prove that anykv over a cluster, while nodes die, behaves as one register per key.
//
// An operation whose outcome the client could not learn (an error, a timeout, a dropped connection) may or may
// not have taken effect: a write or CAS is recorded with Unknown and a return time after every other operation,
// so the checker may place it anywhere after its call, or effectively nowhere; a read that failed is not recorded.
package lincheck

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Kind is what an operation does.
type Kind uint8

// The operations on one key, a register holding a string ("" with Found false: absent).
const (
	Get Kind = iota // read the key
	Put             // write Value
	CAS             // write Value if the key holds Expect (absent if Expect is ""), report whether it did
)

// Input is one operation's request.
type Input struct {
	Kind   Kind
	Key    string
	Value  string // Put, CAS
	Expect string // CAS
}

// Output is what the client learnt.
type Output struct {
	Value   string // Get: the value read ("" when absent)
	OK      bool   // CAS: it wrote
	Unknown bool   // Put, CAS: the outcome is unknown
}

// History collects the operations of concurrent clients; it is safe for concurrent use.
type History struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

// NewHistory starts an empty history; times are taken relative to now.
func NewHistory() *History { return &History{start: time.Now()} }

// Call returns the time to record as an operation's call, taken just before the request is sent.
func (h *History) Call() int64 { return int64(time.Since(h.start)) }

// Done records an operation that returned now. err is the request's error: a read that failed is dropped,
// a write or CAS that failed has an unknown outcome.
func (h *History) Done(client int, in Input, call int64, out Output, err error) {
	ret := int64(time.Since(h.start))
	if err != nil {
		if in.Kind == Get {
			return
		}
		out, ret = Output{Unknown: true}, math.MaxInt64
	}
	h.mu.Lock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	h.mu.Unlock()
}

// Len is the number of operations recorded.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

// Check runs the linearizability checker over the history (at most timeout). It returns nil if the history is
// linearizable; otherwise an error saying so, and the checker's visualization (an HTML page) is written to
// vizPath when it is not "".
func (h *History) Check(timeout time.Duration, vizPath string) error {
	h.mu.Lock()
	ops := append([]porcupine.Operation(nil), h.ops...)
	h.mu.Unlock()
	res, info := porcupine.CheckOperationsVerbose(Model, ops, timeout)
	switch res {
	case porcupine.Ok:
		return nil
	case porcupine.Unknown:
		return fmt.Errorf("lincheck: the checker ran out of its %v on %d operations", timeout, len(ops))
	}
	msg := fmt.Sprintf("lincheck: %d operations are not linearizable", len(ops))
	if vizPath != "" {
		if err := porcupine.VisualizePath(Model, info, vizPath); err == nil {
			msg += "; see " + vizPath
		}
	}
	return fmt.Errorf("%s", msg)
}

// state is one key's register.
type state struct {
	value string
	found bool
}

// Model is the sequential specification: each key an independent register (so the history is checked key by
// key).
var Model = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(Input).Key
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]string, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return state{} },
	Step: func(st, input, output interface{}) (bool, interface{}) {
		s, in, out := st.(state), input.(Input), output.(Output)
		switch in.Kind {
		case Get:
			return out.Value == s.value && (s.found || out.Value == ""), s
		case Put:
			return true, state{value: in.Value, found: true}
		default: // CAS
			match := (in.Expect == "" && !s.found) || (in.Expect != "" && s.found && s.value == in.Expect)
			if out.Unknown {
				if match {
					return true, state{value: in.Value, found: true}
				}
				return true, s
			}
			if out.OK != match {
				return false, s
			}
			if match {
				return true, state{value: in.Value, found: true}
			}
			return true, s
		}
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(Input), output.(Output)
		switch {
		case in.Kind == Get:
			return fmt.Sprintf("get(%s) → %q", in.Key, out.Value)
		case out.Unknown:
			return fmt.Sprintf("%s(%s, %q) → ?", kindName(in.Kind), in.Key, in.Value)
		case in.Kind == Put:
			return fmt.Sprintf("put(%s, %q)", in.Key, in.Value)
		}
		return fmt.Sprintf("cas(%s, %q → %q) → %v", in.Key, in.Expect, in.Value, out.OK)
	},
	DescribeState: func(st interface{}) string {
		s := st.(state)
		if !s.found {
			return "absent"
		}
		return fmt.Sprintf("%q", s.value)
	},
}

func kindName(k Kind) string { return strings.ToLower([]string{"GET", "PUT", "CAS"}[k]) }
