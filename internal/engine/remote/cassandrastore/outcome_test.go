package cassandrastore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"anykv/internal/engine"
	"anykv/internal/engine/remote"
)

// TestRefused: only errors proving the BATCH never ran are refusals; a write timeout, an unknown CAS result, a
// lost connection or a passed deadline leave the outcome unknown.
func TestRefused(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{gocql.ErrNoConnections, true},
		{&gocql.RequestErrUnavailable{Consistency: gocql.Serial}, true},
		{&gocql.RequestErrUnavailable{Consistency: gocql.LocalSerial}, true},
		{fmt.Errorf("wrapped: %w", &gocql.RequestErrInvalid{}), true},
		{&gocql.RequestErrOverloaded{}, true},
		{&gocql.RequestErrWriteTimeout{WriteType: "CAS"}, false},
		{&gocql.RequestErrCASWriteUnknown{}, false},
		{&gocql.RequestErrReadTimeout{}, false},
		{gocql.ErrConnectionClosed, false},
		{gocql.ErrTimeoutNoResponse, false},
		{context.DeadlineExceeded, false},
	} {
		if got := refused(c.err); got != c.want {
			t.Errorf("refused(%T %v) = %v, want %v", c.err, c.err, got, c.want)
		}
	}
}

// TestUnavailableAtCommitIsUnknown: Paxos v1 (Cassandra 5.0's default paxos_variant) checks the live replicas
// again for its commit phase, after a quorum accepted the proposal, and answers Unavailable at the commit's
// consistency (QUORUM) when too few are alive then: the accepted proposal is completed by the partition's next
// Paxos round, so the BATCH may well be applied. Only an Unavailable at the Paxos consistency (SERIAL, LOCAL_SERIAL:
// the check before any round, v1's and v2's) proves nothing ran; until 2026-12-02 every Unavailable was a refusal,
// and a client told "unavailable, send again" could apply its write twice.
func TestUnavailableAtCommitIsUnknown(t *testing.T) {
	for _, cl := range []gocql.Consistency{gocql.Quorum, gocql.LocalQuorum, gocql.EachQuorum, gocql.One, gocql.All} {
		err := fmt.Errorf("wrapped: %w", &gocql.RequestErrUnavailable{Consistency: cl, Required: 2, Alive: 1})
		if refused(err) {
			t.Errorf("refused(Unavailable at %v) = true, want false: the proposal may have been accepted", cl)
		}
	}
}

// TestUnreachable: the errors of a cluster that cannot serve now are unavailable (503); a refusal of the request
// itself (invalid, unauthorized) is not.
func TestUnreachable(t *testing.T) {
	b := &backend{}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{gocql.ErrNoConnections, true},
		{fmt.Errorf("read: %w", &gocql.RequestErrUnavailable{}), true},
		{&gocql.RequestErrOverloaded{}, true},
		{&gocql.RequestErrReadTimeout{}, true},
		{gocql.ErrConnectionClosed, true},
		{gocql.ErrTimeoutNoResponse, true},
		{&gocql.RequestErrInvalid{}, false},
		{&gocql.RequestErrUnauthorized{}, false},
	} {
		if got := b.Unreachable(c.err); got != c.want {
			t.Errorf("Unreachable(%T %v) = %v, want %v", c.err, c.err, got, c.want)
		}
	}
}

// TestTooManyStatementsRefusedUnsent: a commit of more statements than a BATCH may hold (65,535: an MSET of
// 70,000 keys) is refused before it is sent, as too big (a group holding it is then applied batch by batch).
// gocql refuses it unsent too, with ErrTooManyStmts, which until 2026-12-02 was reported as ErrUnknownOutcome.
func TestTooManyStatementsRefusedUnsent(t *testing.T) {
	b := &backend{s: &gocql.Session{}, items: "ks.anykv_items", p: "anykv", slots: 1} // never used to send
	w := &remote.Writes{}
	for i := range 70000 {
		w.Put = append(w.Put, remote.Put{Slot: remote.Slot{Table: "0", Key: fmt.Appendf(nil, "k%d", i)},
			Item: engine.Item{Value: []byte("v"), Version: 6}})
	}
	err := b.Commit(context.Background(), nil, w, &counter{value: 5, n: 1})
	if !errors.Is(err, engine.ErrBatchTooBig) || errors.Is(err, remote.ErrUnknownOutcome) {
		t.Fatalf("a commit of 70,001 statements: %v, want ErrBatchTooBig (refused unsent)", err)
	}
}
