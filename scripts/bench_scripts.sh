#!/usr/bin/env bash
# Script throughput (docs/benchmarks.md, "Scripts and job queues"): redis-benchmark's EVAL "return 1" 0 and EVALSHA
# of a 38 kB script (700 additions, the size of BullMQ's), -c 20, against each anykv binary (--fsync always,
# GOMAXPROCS=1) and redis-server without persistence, server on core 0, redis-benchmark on core 1.
# Usage: scripts/bench_scripts.sh [ROUNDS] [path/to/anykv ...]
set -u
ROUNDS=${1:-3}; shift || true
[ $# -gt 0 ] || set -- bin/anykv
PORT=17501
BIG=$(python3 -c "print('local x = 0\n' + ''.join('x = x + %d -- padding padding padding padding padding\n' % i for i in range(700)) + 'return 1')")
rps() { tr '\r' '\n' | grep "requests per second" | tail -1 | sed 's/.*: \([0-9.]*\) requests.*/\1/'; }
for round in $(seq "$ROUNDS"); do
  for t in "$@" redis; do
    D=$(mktemp -d)
    if [ "$t" = redis ]; then
      taskset -c 0 redis-server --port $PORT --save "" --appendonly no --dir "$D" >/dev/null 2>&1 &
    else
      taskset -c 0 env GOMAXPROCS=1 "$t" serve --dir "$D" --resp 127.0.0.1:$PORT --memcache "" --http "" --log-level warn >/dev/null 2>&1 &
    fi
    pid=$!
    for _ in $(seq 50); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.1; done
    eval1=$(taskset -c 1 redis-benchmark -p $PORT -c 20 -n 30000 -q eval "return 1" 0 2>&1 | rps)
    sha=$(redis-cli -p $PORT script load "$BIG")
    big=$(taskset -c 1 redis-benchmark -p $PORT -c 20 -n 20000 -q evalsha "$sha" 0 2>&1 | rps)
    echo "$round $t eval=$eval1 evalsha-38kB=$big"
    kill $pid; wait $pid 2>/dev/null; rm -rf "$D"
  done
done
