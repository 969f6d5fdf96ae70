#!/usr/bin/env bash
# BullMQ throughput (docs/benchmarks.md, "Scripts and job queues"): add N jobs with Queue.addBulk (100 a call),
# then a Worker of concurrency 50 runs them all; against anykv (--fsync always, GOMAXPROCS=1) and redis-server
# without persistence and with appendfsync always, each pinned to core 0 with the Node client on core 1, ROUNDS
# alternating rounds. Needs bullmq in ~/.cache/anykv/node (scripts/test.sh installs it).
# Usage: scripts/bench_bullmq.sh [ROUNDS] [path/to/anykv ...]   (N=jobs, default 3000)
set -u
ROUNDS=${1:-3}; shift || true
[ $# -gt 0 ] || set -- bin/anykv
N=${N:-3000}; PORT=17501
JS=$(cd "$(dirname "$0")" && pwd)/bench_bullmq.js
for round in $(seq "$ROUNDS"); do
  for t in "$@" redis redis-always; do
    D=$(mktemp -d)
    case $t in
      redis) taskset -c 0 redis-server --port $PORT --save "" --appendonly no --dir "$D" >/dev/null 2>&1 & ;;
      redis-always) taskset -c 0 redis-server --port $PORT --save "" --appendonly yes --appendfsync always --dir "$D" >/dev/null 2>&1 & ;;
      *) taskset -c 0 env GOMAXPROCS=1 "$t" serve --dir "$D" --resp 127.0.0.1:$PORT --memcache "" --http "" --log-level warn >/dev/null 2>&1 & ;;
    esac
    pid=$!
    for _ in $(seq 50); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.1; done
    echo "$round $t $(NODE_PATH=$HOME/.cache/anykv/node/node_modules taskset -c 1 node "$JS" 127.0.0.1:$PORT "$N" 50 2>&1 | tail -1)"
    kill $pid; wait $pid 2>/dev/null; rm -rf "$D"
  done
done
