package membudget

import "sync"

// Big buffers come in size classes: 64 KiB·2^i plus a little headroom, so that a request whose data is a
// power of two (a 64 MiB value) fits the class of that size together with its command line. Each class has a
// sync.Pool: a buffer let go of is reused by the next big request, or, once unused for two collections,
// freed, and its pages go back to the OS. Needs beyond the largest class get a buffer of their own size.
const (
	minClassShift = 16       // the smallest class holds 64 KiB of data
	numClasses    = 11       // up to 64 MiB of data
	classSlack    = 16 << 10 // headroom past the power of two, for the command line before the data
)

var pools [numClasses]sync.Pool // of *[]byte, each of its class's exact size

// classSize returns the length of class c's buffers.
func classSize(c int) int { return 1<<(minClassShift+c) + classSlack }

// classOf returns the smallest class whose buffers hold n bytes, or -1 when n is beyond the largest.
func classOf(n int) int {
	for c := range numClasses {
		if n <= classSize(c) {
			return c
		}
	}
	return -1
}

// ClassSize returns the length of the buffer Alloc returns for n bytes.
func ClassSize(n int) int {
	if c := classOf(n); c >= 0 {
		return classSize(c)
	}
	return n
}

// NextSize returns the size to grow a buffer of n bytes to: the next class (about twice n), or twice n
// beyond the classes.
func NextSize(n int) int {
	if c := classOf(n + 1); c >= 0 {
		return classSize(c)
	}
	return 2 * n
}

// Alloc reserves ClassSize(n) bytes and returns a buffer of that length (len == cap), from its class's pool
// when one is there. Its contents are arbitrary. Give it back with Free.
func (a *Account) Alloc(n int) ([]byte, error) {
	size := ClassSize(n)
	if err := a.Reserve(size); err != nil {
		return nil, err
	}
	return classBuffer(size), nil
}

// Grow returns a buffer of ClassSize(n) bytes to take the place of old (from Alloc or Grow, outgrown by a
// request still arriving), reserving only what it adds to old: old's bytes pass to the new buffer. The caller
// copies what it needs from old and then lets it go to the garbage collector, without Free or Drop. On an error
// nothing changes and old stays reserved. Reserving the new buffer whole beside the old one counted a request
// twice while it grew: one that fitted the budget (a 100 kB SET beside 800 kB of queued MULTI commands under
// 1 MiB) was taken for one over it, and its client closed.
func (a *Account) Grow(old []byte, n int) ([]byte, error) {
	size := ClassSize(n)
	if d := size - cap(old); d < 0 {
		a.Release(-d)
	} else if err := a.Reserve(d); err != nil {
		return nil, err
	}
	return classBuffer(size), nil
}

// classBuffer returns a buffer of size bytes (a ClassSize), from its class's pool when one is there.
func classBuffer(size int) []byte {
	if c := classOf(size); c >= 0 {
		if p, ok := pools[c].Get().(*[]byte); ok {
			return *p
		}
	}
	return make([]byte, size)
}

// Free releases a buffer from Alloc or Grow (whole: len == cap as returned) after the request it held
// completed, and pools it for the next big request. The caller must not touch it afterwards.
func (a *Account) Free(b []byte) {
	b = b[:cap(b)]
	a.Release(len(b))
	if c := classOf(len(b)); c >= 0 && classSize(c) == len(b) {
		pools[c].Put(&b)
	}
}

// Drop releases a buffer from Alloc or Grow that is not worth pooling: one left by a connection that ended
// mid-request (a client that never completes its requests should not fill the pools for others). The garbage
// collector frees it.
func (a *Account) Drop(b []byte) {
	a.Release(cap(b))
}
