// Package pubsub routes published messages to the subscribers of channels and patterns (Redis's PUBLISH,
// SUBSCRIBE and PSUBSCRIBE). It knows no wire format: a Subscriber encodes and queues what it is given, so a
// publisher never waits for a slow subscriber's socket.
package pubsub

import (
	"sort"
	"sync"

	"anykv/internal/glob"
)

// Subscriber receives messages. Deliver must not block: it queues the message (or drops the subscriber when its
// queue is over its bound) and returns.
type Subscriber interface {
	// Deliver hands over one message; pattern is "" for a channel subscription.
	Deliver(pattern, channel string, msg []byte)
}

// Broker holds the subscriptions. Safe for concurrent use. Patterns are compiled once, when first subscribed,
// and matched outside the lock: a PUBLISH matching a long channel against long patterns takes its time without
// holding up other clients' SUBSCRIBEs and PUBLISHes (an audit: 3.6 s).
type Broker struct {
	mu       sync.RWMutex
	channels map[string]map[Subscriber]struct{}
	patterns map[string]*patternSubs
}

// patternSubs is one pattern's compiled form and its subscribers.
type patternSubs struct {
	p    *glob.Pattern
	subs map[Subscriber]struct{}
}

type compiledPattern struct {
	name string
	p    *glob.Pattern
}

// New returns a broker that matches patterns by Redis's glob rules.
func New() *Broker {
	return &Broker{channels: map[string]map[Subscriber]struct{}{}, patterns: map[string]*patternSubs{}}
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

// PSubscribe adds s to pattern, compiled as p (glob.Compile of it; the broker keeps the first one given for a
// pattern); false if it was already subscribed.
func (b *Broker) PSubscribe(pattern string, p *glob.Pattern, s Subscriber) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	ps := b.patterns[pattern]
	if ps == nil {
		ps = &patternSubs{p: p, subs: map[Subscriber]struct{}{}}
		b.patterns[pattern] = ps
	}
	if _, dup := ps.subs[s]; dup {
		return false
	}
	ps.subs[s] = struct{}{}
	return true
}

// PUnsubscribe removes s from pattern; false if it was not subscribed.
func (b *Broker) PUnsubscribe(pattern string, s Subscriber) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	ps := b.patterns[pattern]
	if ps == nil {
		return false
	}
	if _, ok := ps.subs[s]; !ok {
		return false
	}
	delete(ps.subs, s)
	if len(ps.subs) == 0 {
		delete(b.patterns, pattern)
	}
	return true
}

type delivery struct {
	sub     Subscriber
	pattern string
}

// Publish delivers msg to every subscriber of channel and of every matching pattern, and returns how many
// deliveries it made (Redis's PUBLISH reply). Deliveries happen after the broker's lock is released.
func (b *Broker) Publish(channel string, msg []byte) int {
	to := b.receivers(channel)
	for _, d := range to {
		d.sub.Deliver(d.pattern, channel, msg)
	}
	return len(to)
}

// Receivers returns how many deliveries a Publish to channel would make now.
func (b *Broker) Receivers(channel string) int { return len(b.receivers(channel)) }

// receivers lists the deliveries a message to channel makes: its subscribers', then those of the patterns it
// matches.
func (b *Broker) receivers(channel string) []delivery {
	var to []delivery
	var pats []compiledPattern
	b.mu.RLock()
	for s := range b.channels[channel] {
		to = append(to, delivery{sub: s})
	}
	if len(b.patterns) > 0 {
		pats = make([]compiledPattern, 0, len(b.patterns))
		for name, ps := range b.patterns {
			pats = append(pats, compiledPattern{name, ps.p})
		}
	}
	b.mu.RUnlock()
	var matched []string
	ch := []byte(channel)
	for _, c := range pats {
		if c.p.Matches(ch) { // a match stopped at glob.Limit is none
			matched = append(matched, c.name)
		}
	}
	if len(matched) > 0 {
		b.mu.RLock()
		for _, name := range matched {
			if ps := b.patterns[name]; ps != nil {
				for s := range ps.subs {
					to = append(to, delivery{sub: s, pattern: name})
				}
			}
		}
		b.mu.RUnlock()
	}
	return to
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
