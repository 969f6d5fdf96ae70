package engine

import "context"

// GateFrom is the size from which an engine asks a read's ValueGate before it copies a value out.
const GateFrom = 64 << 10

// A ValueGate admits the big values a read copies out: an engine about to copy a found value of GateFrom bytes or
// more calls Admit with its size first, and when Admit refuses, the read returns Admit's error with nothing
// copied. A client's reads reserve their values' room this way (maxmemory-clients) before the bytes exist: a
// burst of 30 GETs of a 60 MiB value had allocated all 30 copies before most of them found no room.
type ValueGate interface {
	Admit(n int) error
}

type gateKey struct{}

// WithValueGate returns ctx carrying g for the engine reads made with it.
func WithValueGate(ctx context.Context, g ValueGate) context.Context {
	return context.WithValue(ctx, gateKey{}, g)
}

// AdmitValue asks ctx's ValueGate, if any, to admit a value of n bytes about to be copied out (engines call it);
// nil when there is no gate or n is under GateFrom.
func AdmitValue(ctx context.Context, n int) error {
	if n < GateFrom {
		return nil
	}
	if g, ok := ctx.Value(gateKey{}).(ValueGate); ok {
		return g.Admit(n)
	}
	return nil
}
