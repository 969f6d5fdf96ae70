// Package pubsub routes published messages to the subscribers of channels and patterns (Redis's PUBLISH,
// SUBSCRIBE and PSUBSCRIBE). It knows no wire format: a Subscriber encodes and queues what it is given, so a
// publisher never waits for a slow subscriber's socket.
package pubsub

import (
	"sort"
	"sync"
	"sync/atomic"

	"anykv/internal/glob"
)

// Subscriber receives messages. Deliver must not block: it queues the message (or drops the subscriber when its
// queue is over its bound) and returns.
type Subscriber interface {
	// Deliver hands over one message; pattern is "" for a channel subscription.
	Deliver(pattern, channel string, msg []byte)
}

// Broker holds the subscriptions. Safe for concurrent use. Patterns are matched outside the lock, against a
// snapshot of them compiled when they change: a PUBLISH matching a long channel against long patterns takes its
// time without holding up other clients' SUBSCRIBEs and PUBLISHes (an audit: 3.6 s).
type Broker struct {
	mu       sync.RWMutex
	channels map[string]map[Subscriber]struct{}
	patterns map[string]map[Subscriber]struct{}
	compiled atomic.Pointer[[]compiledPattern] // the patterns with subscribers, rebuilt under mu when they change
}

type compiledPattern struct {
	name string
	p    *glob.Pattern
}

// New returns a broker that matches patterns by Redis's glob rules.
func New() *Broker {
	b := &Broker{channels: map[string]map[Subscriber]struct{}{}, patterns: map[string]map[Subscriber]struct{}{}}
	b.compiled.Store(&[]compiledPattern{})
	return b
}

// recompile rebuilds the snapshot of patterns after one was added or dropped; called under mu. Compiled patterns
// of the old snapshot are reused.
func (b *Broker) recompile() {
	old := map[string]*glob.Pattern{}
	for _, c := range *b.compiled.Load() {
		old[c.name] = c.p
	}
	out := make([]compiledPattern, 0, len(b.patterns))
	for name := range b.patterns {
		p := old[name]
		if p == nil {
			p = glob.Compile([]byte(name))
		}
		out = append(out, compiledPattern{name, p})
	}
	b.compiled.Store(&out)
}

func add(m map[string]map[Subscriber]struct{}, name string, s Subscriber) bool {
	set := m[name]
	if set == nil {
		set = map[Subscriber]struct{}{}
		m[name] = set
	}
	if _, dup := set[s]; dup {
		return false
	}
	set[s] = struct{}{}
	return true
}

func remove(m map[string]map[Subscriber]struct{}, name string, s Subscriber) bool {
	set := m[name]
	if _, ok := set[s]; !ok {
		return false
	}
	delete(set, s)
	if len(set) == 0 {
		delete(m, name)
	}
	return true
}

// Subscribe adds s to channel; false if it was already subscribed.
func (b *Broker) Subscribe(channel string, s Subscriber) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return add(b.channels, channel, s)
}

// Unsubscribe removes s from channel; false if it was not subscribed.
func (b *Broker) Unsubscribe(channel string, s Subscriber) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return remove(b.channels, channel, s)
}

// PSubscribe adds s to pattern; false if it was already subscribed.
func (b *Broker) PSubscribe(pattern string, s Subscriber) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, had := b.patterns[pattern]
	added := add(b.patterns, pattern, s)
	if !had {
		b.recompile()
	}
	return added
}

// PUnsubscribe removes s from pattern; false if it was not subscribed.
func (b *Broker) PUnsubscribe(pattern string, s Subscriber) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	removed := remove(b.patterns, pattern, s)
	if _, has := b.patterns[pattern]; removed && !has {
		b.recompile()
	}
	return removed
}

type delivery struct {
	sub     Subscriber
	pattern string
}

// Publish delivers msg to every subscriber of channel and of every matching pattern, and returns how many
// deliveries it made (Redis's PUBLISH reply). Deliveries happen after the broker's lock is released.
func (b *Broker) Publish(channel string, msg []byte) int {
	var matched []string
	if pats := *b.compiled.Load(); len(pats) > 0 {
		ch := []byte(channel)
		for _, c := range pats {
			if c.p.Matches(ch) { // a match stopped at glob.Limit is none
				matched = append(matched, c.name)
			}
		}
	}
	b.mu.RLock()
	var to []delivery
	for s := range b.channels[channel] {
		to = append(to, delivery{sub: s})
	}
	for _, p := range matched {
		for s := range b.patterns[p] {
			to = append(to, delivery{sub: s, pattern: p})
		}
	}
	b.mu.RUnlock()
	for _, d := range to {
		d.sub.Deliver(d.pattern, channel, msg)
	}
	return len(to)
}

// Channels lists the channels with at least one subscriber that match pattern (all if pattern is nil), sorted.
func (b *Broker) Channels(pattern []byte) []string {
	b.mu.RLock()
	out := make([]string, 0, len(b.channels))
	for c := range b.channels {
		out = append(out, c)
	}
	b.mu.RUnlock()
	if pattern != nil {
		p, all := glob.Compile(pattern), out
		out = out[:0]
		for _, c := range all {
			if p.Matches([]byte(c)) {
				out = append(out, c)
			}
		}
	}
	sort.Strings(out)
	return out
}

// NumSub returns the number of subscribers of channel.
func (b *Broker) NumSub(channel string) int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.channels[channel])
}

// NumPat returns the number of patterns with at least one subscriber.
func (b *Broker) NumPat() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.patterns)
}
