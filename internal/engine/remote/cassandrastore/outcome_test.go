package cassandrastore

import (
	"context"
	"fmt"
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// TestRefused: only errors proving the BATCH never ran are refusals; a write timeout, an unknown CAS result, a
// lost connection or a passed deadline leave the outcome unknown.
func TestRefused(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{gocql.ErrNoConnections, true},
		{&gocql.RequestErrUnavailable{}, true},
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
