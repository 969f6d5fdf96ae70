// Package pubsub routes published messages to the subscribers of channels and patterns (Redis's PUBLISH,
// SUBSCRIBE and PSUBSCRIBE). It knows no wire format: a Subscriber encodes and queues what it is given, so a
// publisher never waits for a slow subscriber's socket.
package pubsub

import (
	"sort"
	"sync"
)

// Subscriber receives messages. Deliver must not block: it queues the message (or drops the subscriber when its
// queue is over its bound) and returns.
type Subscriber interface {
	// Deliver hands over one message; pattern is "" for a channel subscription.
	Deliver(pattern, channel string, msg []byte)
}

// Broker holds the subscriptions. Safe for concurrent use.
type Broker struct {
	match    func(pattern, channel []byte) bool
	mu       sync.RWMutex
	channels map[string]map[Subscriber]struct{}
	patterns map[string]map[Subscriber]struct{}
}

// New returns a broker that matches patterns with match (Redis's glob rules).
func New(match func(pattern, channel []byte) bool) *Broker {
	return &Broker{match: match, channels: map[string]map[Subscriber]struct{}{}, patterns: map[string]map[Subscriber]struct{}{}}
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
	return add(b.patterns, pattern, s)
}

// PUnsubscribe removes s from pattern; false if it was not subscribed.
func (b *Broker) PUnsubscribe(pattern string, s Subscriber) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return remove(b.patterns, pattern, s)
}

type delivery struct {
	sub     Subscriber
	pattern string
}

// Publish delivers msg to every subscriber of channel and of every matching pattern, and returns how many
// deliveries it made (Redis's PUBLISH reply). Deliveries happen after the broker's lock is released.
func (b *Broker) Publish(channel string, msg []byte) int {
	b.mu.RLock()
	var to []delivery
	for s := range b.channels[channel] {
		to = append(to, delivery{sub: s})
	}
	for p, set := range b.patterns {
		if b.match([]byte(p), []byte(channel)) {
			for s := range set {
				to = append(to, delivery{sub: s, pattern: p})
			}
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
	defer b.mu.RUnlock()
	var out []string
	for c := range b.channels {
		if pattern == nil || b.match(pattern, []byte(c)) {
			out = append(out, c)
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
