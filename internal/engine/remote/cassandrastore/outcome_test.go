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
