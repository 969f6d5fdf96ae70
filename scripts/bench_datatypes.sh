#!/usr/bin/env bash
# Issue 16's data-type figures: redis-benchmark's LPUSH LPOP SADD HSET ZADD LRANGE_100 at pipeline 16 against
# anykv (--fsync always, GOMAXPROCS=1) and Redis without persistence, each pinned to core 0 with redis-benchmark
# on core 1, three alternating rounds. Usage: scripts/bench_datatypes.sh [path/to/anykv] (default bin/anykv).
set -u
A=${1:-bin/anykv}
PORT=17501
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for round in 1 2 3; do
  for t in anykv redis; do
    if [ $t = anykv ]; then
      taskset -c 0 env GOMAXPROCS=1 "$A" serve --dir "$TMP/data$round" --resp 127.0.0.1:$PORT --memcache "" --http "" \
        --log-level warn >"$TMP/$t.log" 2>&1 &
    else
      taskset -c 0 redis-server --port $PORT --bind 127.0.0.1 --save "" --appendonly no --dir "$TMP" >"$TMP/$t.log" 2>&1 &
    fi
    pid=$!
    for _ in $(seq 50); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.1; done
    taskset -c 1 redis-benchmark -p $PORT -c 50 -n 400000 -P 16 -r 100000 -q -t lpush,lpop,sadd,hset,zadd,lrange_100 2>&1 |
      tr '\r' '\n' | grep "requests per second" | sed "s/^/$round $t /"
    kill $pid
    wait $pid 2>/dev/null
  done
done
