package driver

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// etcdDriver uses the etcd v3 gRPC API. A table is the key prefix
// "/anykv-bench/table/"; scans are range reads with keys only.
type etcdDriver struct {
	c         *clientv3.Client
	endpoints []string
	noHealth  atomic.Bool
}

func openEtcd(u *url.URL, opt Options) (Driver, error) {
	var eps []string
	for _, h := range strings.Split(u.Host, ",") {
		eps = append(eps, "http://"+h)
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   eps,
		DialTimeout: opt.Timeout,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd %s: %w", u.Host, err)
	}
	return &etcdDriver{c: c, endpoints: eps}, nil
}

func (d *etcdDriver) Kind() string { return "etcd" }
func (d *etcdDriver) Caps() Caps   { return CapScan | CapCount | CapIncr }
func (d *etcdDriver) Settings() string {
	return fmt.Sprintf("etcd v3 gRPC to %s, linearizable reads, keys \"/anykv-bench/table/key\"", strings.Join(d.endpoints, ","))
}

func etcdKey(table, key string) string { return "/anykv-bench/" + table + "/" + key }

func (d *etcdDriver) Get(ctx context.Context, table, key string) ([]byte, bool, error) {
	r, err := d.c.Get(ctx, etcdKey(table, key))
	if err != nil {
		return nil, false, err
	}
	if len(r.Kvs) == 0 {
		return nil, false, nil
	}
	return r.Kvs[0].Value, true, nil
}

func (d *etcdDriver) Put(ctx context.Context, table, key string, value []byte) error {
	_, err := d.c.Put(ctx, etcdKey(table, key), string(value))
	return err
}

func (d *etcdDriver) Delete(ctx context.Context, table, key string) (bool, error) {
	r, err := d.c.Delete(ctx, etcdKey(table, key))
	if err != nil {
		return false, err
	}
	return r.Deleted > 0, nil
}

func (d *etcdDriver) Scan(ctx context.Context, table, prefix string, limit int) ([]string, error) {
	full := etcdKey(table, "")
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)}
	if limit > 0 {
		opts = append(opts, clientv3.WithLimit(int64(limit)))
	}
	r, err := d.c.Get(ctx, full+prefix, opts...)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(r.Kvs))
	for _, kv := range r.Kvs {
		out = append(out, strings.TrimPrefix(string(kv.Key), full))
	}
	return out, nil
}

func (d *etcdDriver) Count(ctx context.Context, table, prefix string) (int64, error) {
	r, err := d.c.Get(ctx, etcdKey(table, prefix), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return r.Count, nil
}

// Noop is a gRPC health check, served without touching the store or raft.
// Servers without the health service get a maintenance Status call instead.
func (d *etcdDriver) Noop(ctx context.Context) error {
	if !d.noHealth.Load() {
		_, err := healthpb.NewHealthClient(d.c.ActiveConnection()).Check(ctx, &healthpb.HealthCheckRequest{})
		if status.Code(err) != codes.Unimplemented {
			return err
		}
		d.noHealth.Store(true)
	}
	_, err := d.c.Status(ctx, d.endpoints[0])
	return err
}

func (d *etcdDriver) Close() error { return d.c.Close() }
