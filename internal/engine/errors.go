package engine

import (
	"errors"
	"fmt"
)

// Sentinel errors shared by every engine and the command layer. Protocols map them to their own replies in one
// table each; callers test them with errors.Is because engines wrap them with context.
var (
	// ErrNotFound: the key has no live item (absent or expired).
	ErrNotFound = errors.New("not found")
	// ErrExists: an only-if-absent condition failed because a live item exists.
	ErrExists = errors.New("exists")
	// ErrVersionMismatch: a compare-and-set found a live item with another version.
	ErrVersionMismatch = errors.New("version mismatch")
	// ErrAborted: a guard mutation failed, so no mutation of the batch was applied.
	ErrAborted = errors.New("batch aborted by a failed guard")
	// ErrNotInteger: an integer operation found a value that is not a 64-bit integer.
	ErrNotInteger = errors.New("value is not an integer")
	// ErrNotFloat: a float operation found a value that is not a number.
	ErrNotFloat = errors.New("value is not a valid float")
	// ErrOverflow: a signed increment would overflow 64 bits.
	ErrOverflow = errors.New("increment or decrement would overflow")
	// ErrNaN: a float increment would produce NaN or infinity.
	ErrNaN = errors.New("increment would produce NaN or Infinity")
	// ErrTooLarge: a value would exceed the configured maximum size.
	ErrTooLarge = errors.New("value too large")
	// ErrConditionFailed: an expiry condition (NX, XX, GT, LT) did not hold.
	ErrConditionFailed = errors.New("condition not met")
	// ErrNotSupported: the engine lacks an ability the request needs.
	ErrNotSupported = errors.New("not supported by this engine")
	// ErrCrossSlot: the batch touches keys in several slots of a sharded namespace (a Cassandra namespace spread
	// over several partitions), which no single atomic commit covers; nothing was applied.
	ErrCrossSlot = fmt.Errorf("CROSSSLOT Keys in request don't hash to the same slot: %w", ErrNotSupported)
	// ErrClosed: the engine was closed.
	ErrClosed = errors.New("engine closed")
	// ErrUnknownOutcome: a commit was sent but its outcome could not be learned (a remote datastore's connection
	// broke or timed out after the commit): the batch may or may not have been applied, and it is not retried.
	ErrUnknownOutcome = errors.New("commit outcome unknown")
	// ErrWrongType: the operation is for another kind of item than the one stored (a hash op on a string, ...).
	ErrWrongType = errors.New("operation against a key holding the wrong kind of value")
	// ErrCorrupt: stored data does not decode; it is never taken for absent.
	ErrCorrupt = errors.New("corrupt data")
	// ErrNoSpace: the disk is (nearly) full, so the engine refuses writes until space returns; reads still work.
	ErrNoSpace = errors.New("disk full: writes are refused until space is freed; reads still work")
	// ErrInternal: resolving the batch hit a defect of anykv's own (a panic in an op or function); nothing of
	// the batch was applied, the server keeps running, and the log has the stack.
	ErrInternal = errors.New("internal error")
	// ErrBatchTooBig: the batch is more than can be applied at once: resolving it built more than 256 MiB of
	// values (many writes of big values in one pipeline or transaction), or it is more than the datastore under
	// a remote engine takes in one commit; nothing of it was applied.
	ErrBatchTooBig = errors.New("the pipeline or transaction is too big to apply at once (over 256 MiB of values built, or more than the datastore takes in one commit); nothing of it was applied: send it in smaller parts")
	// ErrReadTooBig: one read would hand out more than MaxBatchRead bytes of a collection's members (SMEMBERS,
	// HGETALL, LRANGE 0 -1, DUMP of a collection that big); nothing was answered. It is an ErrBatchTooBig.
	ErrReadTooBig error = readTooBig{}
	// ErrUnavailable: the datastore under a remote engine cannot be reached now (a member unreachable, no
	// leader); nothing was applied, and the request may succeed if sent again.
	ErrUnavailable = errors.New("the datastore is unavailable")
	// ErrInvalid: a malformed mutation (unknown op, missing key, bad range).
	ErrInvalid = errors.New("invalid mutation")
	// ErrUndeclaredWrite: a function wrote a key its mutation does not name (see Tx); it is an ErrInvalid, and
	// tells a caller that the same call with Call.AnyKey would be allowed.
	ErrUndeclaredWrite = fmt.Errorf("%w: a function wrote a key its mutation does not name", ErrInvalid)
	// ErrOutsideTable: a function's Tx.Apply would write another table than the mutation's (another database)
	// or flush; it is an ErrInvalid. Nothing of that Apply was applied, and the batch goes on: the function
	// decides (a script answers it as an error reply).
	ErrOutsideTable = fmt.Errorf("%w: a function may write only its own table, and may not flush", ErrInvalid)
)

// ReserveStep is how many more bytes a batch's reads hold between two calls of Batch.Reserve.
const ReserveStep = 1 << 20

// ErrReadBudget: the batch's Reserve refused what its reads hold (the caller's memory budget); nothing of the
// batch was applied. The error wraps Reserve's and ErrBatchTooBig.
var ErrReadBudget = fmt.Errorf("%w: its reads' results found no room in the memory budget", ErrBatchTooBig)

type readTooBig struct{}

func (readTooBig) Error() string {
	return "the reply would hold over 256 MiB of the collection's members: read it in parts (SSCAN, HSCAN, ZSCAN, " +
		"ranges of LRANGE, ZRANGE or XRANGE)"
}

func (readTooBig) Unwrap() error { return ErrBatchTooBig }
