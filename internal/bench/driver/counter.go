package driver

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Counter is a driver that can increment a counter atomically with the datastore's own conditional-write
// primitive, for the incr workload (issue 12's conditional-write figure): RESP INCR, a PostgreSQL upsert that adds
// one in the row, an etcd transaction comparing the key's revision (retried on conflict). The counter's value is
// the decimal text of a number, as Get returns it.
type Counter interface {
	Incr(ctx context.Context, table, key string) (int64, error)
}

// Incr implements Counter with INCR.
func (d *respDriver) Incr(ctx context.Context, table, key string) (int64, error) {
	c, note := d.c()
	n, err := c.Incr(ctx, table+":"+key).Result()
	return n, note(err)
}

// Incr implements Counter with one upsert that adds one to the stored number in the row (the row lock makes
// concurrent increments queue, none lost).
func (d *pgDriver) Incr(ctx context.Context, table, key string) (int64, error) {
	var n int64
	err := d.with(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, "INSERT INTO "+d.table+" AS t (tbl, k, v) VALUES ($1, $2, '1') "+
			"ON CONFLICT (tbl, k) DO UPDATE SET v = convert_to((convert_from(t.v, 'UTF8')::bigint + 1)::text, 'UTF8') "+
			"RETURNING convert_from(v, 'UTF8')::bigint", table, key).Scan(&n)
	})
	return n, err
}

// Incr implements Counter with etcd's compare-and-swap: read the key and its revision, then a transaction that
// writes the next number only if the revision is unchanged, again on conflict.
func (d *etcdDriver) Incr(ctx context.Context, table, key string) (int64, error) {
	k := etcdKey(table, key)
	for {
		r, err := d.c.Get(ctx, k)
		if err != nil {
			return 0, err
		}
		n, rev := int64(0), int64(0)
		if len(r.Kvs) > 0 {
			if n, err = strconv.ParseInt(string(r.Kvs[0].Value), 10, 64); err != nil {
				return 0, errors.New("etcd: counter " + k + " holds no number")
			}
			rev = r.Kvs[0].ModRevision
		}
		t, err := d.c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", rev)).
			Then(clientv3.OpPut(k, strconv.FormatInt(n+1, 10))).Commit()
		if err != nil {
			return 0, err
		}
		if t.Succeeded {
			return n + 1, nil
		}
	}
}
