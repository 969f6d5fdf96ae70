#!/usr/bin/env bash
# Sorted-set reads on a big set, a ZPOPMIN queue, a capped stream and the newest entry of a long stream: anykv (--fsync always, GOMAXPROCS=1) and Redis without
# persistence, each pinned to core 0 with the load on core 1. A 200k-member set is loaded in one pipeline, then
# redis-benchmark runs each range command (10 connections, pipeline 1); then 60k ZPOPMIN on one connection, in
# rounds of 10k, print their seconds (a queue over its own deletions); then XADD MAXLEN 1000 (10 connections)
# and, on a stream of 100k entries, XREVRANGE + - COUNT 1. Usage: scripts/bench_zset_ranges.sh [path/to/anykv]
# (default bin/anykv).
set -u
A=${1:-bin/anykv}
PORT=17506
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for t in anykv redis; do
  if [ $t = anykv ]; then
    taskset -c 0 env GOMAXPROCS=1 "$A" serve --dir "$TMP/data" --resp 127.0.0.1:$PORT --memcache "" --http "" \
      --log-level warn >"$TMP/$t.log" 2>&1 &
  else
    taskset -c 0 redis-server --port $PORT --bind 127.0.0.1 --save "" --appendonly no --dir "$TMP" >"$TMP/$t.log" 2>&1 &
  fi
  pid=$!
  for _ in $(seq 50); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.1; done
  python3 - "$PORT" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
n = 200000
cmds = []
for i in range(n):
    m, sc = b"m%d" % i, b"%d" % i
    cmds.append(b"*4\r\n$4\r\nZADD\r\n$1\r\nq\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(sc), sc, len(m), m))
s.sendall(b"".join(cmds))
got = 0
while got < n:
    got += s.recv(1 << 20).count(b"\r\n")
PY
  for c in "zrangebyscore q -inf +inf LIMIT 0 1" "zrangebyscore q 1000 1010" "zcount q 5000 5100" "zrange q 0 9" \
    "zrange q -10 -1" "zrevrangebyscore q +inf -inf LIMIT 0 1" "zrevrange q 0 9"; do
    echo "$t $c: $(taskset -c 1 redis-benchmark -p $PORT -c 10 -n 20000 -q $c 2>&1 | tr '\r' '\n' | grep -v '^$' | tail -1 | sed 's/.*: //')"
  done
  python3 - "$PORT" "$t" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
pop = b"*2\r\n$7\r\nZPOPMIN\r\n$1\r\nq\r\n"
rounds = []
for r in range(6):
    t = time.time()
    for i in range(10000):
        s.sendall(pop)
        s.recv(1000)
    rounds.append("%.2f" % (time.time() - t))
print(sys.argv[2], "ZPOPMIN, seconds per 10k pops:", " ".join(rounds))
PY
  rb() { taskset -c 1 redis-benchmark -p $PORT -c 10 -q "$@" 2>&1 | tr '\r' '\n' | grep -v '^$' | tail -1 | sed 's/.*: //'; }
  echo "$t xadd cs MAXLEN 1000 * f v: $(rb -n 50000 xadd cs MAXLEN 1000 '*' f v)"
  rb -n 100000 -P 16 xadd big '*' f v >/dev/null
  echo "$t xrevrange big + - COUNT 1: $(rb -n 20000 xrevrange big + - COUNT 1)"
  kill $pid
  wait $pid 2>/dev/null
done
