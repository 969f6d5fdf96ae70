#!/usr/bin/env bash
# Regenerates cmd/anykv/default.pgo, the CPU profile `go build` uses for profile-guided optimization of the
# server (Go picks default.pgo up from the main package's directory). It starts the given anykv build
# (--fsync always, GOMAXPROCS=1) on core 0, drives it from core 1 with the loads docs/benchmarks.md measures
# (anykv bench's GET, SET and GET:SET 10:1 mixes over RESP and memcached at pipelines 1 and 16, and
# redis-benchmark's data-type tests at pipeline 16), takes a 5 s CPU profile of each from --pprof and merges
# them. Needs redis-benchmark and redis-cli. Usage: scripts/pgo_profile.sh [path/to/anykv] (default bin/anykv);
# rebuild afterwards. Rerun it when the hot paths change much; a stale profile only costs the gain, never
# correctness.
set -eu
A=$(realpath "${1:-bin/anykv}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PORT=17651 MPORT=17652 PPORT=17653
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# profile NAME LOAD...: one fresh server, LOAD on core 1, a CPU profile of the server taken 1.5 s into it.
profile() {
  local name=$1
  shift
  taskset -c 0 env GOMAXPROCS=1 "$A" serve --dir "$TMP/data" --resp 127.0.0.1:$PORT --memcache 127.0.0.1:$MPORT \
    --http "" --pprof 127.0.0.1:$PPORT --log-level warn >"$TMP/server.log" 2>&1 &
  local server=$!
  for _ in $(seq 50); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.1; done
  taskset -c 1 "$@" >/dev/null 2>&1 &
  local load=$!
  sleep 1.5
  curl -sf -o "$TMP/$name.pprof" "http://127.0.0.1:$PPORT/debug/pprof/profile?seconds=5"
  kill $load 2>/dev/null || true
  wait $load 2>/dev/null || true
  kill $server
  wait $server 2>/dev/null || true
  rm -rf "$TMP/data"
  echo "profiled $name"
}

mix() { # NAME TARGET RATIO PIPELINE
  profile "$1" "$A" bench --target "$2" --workload mix --ratio "$3" --pipeline "$4" --connections 50 --keys 10000 \
    --value-size 100 --duration 8s
}
mix get16 resp://127.0.0.1:$PORT 1:0 16
mix set16 resp://127.0.0.1:$PORT 0:1 16
mix set1 resp://127.0.0.1:$PORT 0:1 1
mix mix16 resp://127.0.0.1:$PORT 10:1 16
mix mix1 resp://127.0.0.1:$PORT 10:1 1
mix mcmix16 memcache://127.0.0.1:$MPORT 10:1 16
mix mcmix1 memcache://127.0.0.1:$MPORT 10:1 1
for t in lpush sadd hset zadd lrange_100 incr; do
  profile "rb_$t" redis-benchmark -p $PORT -c 50 -n 3000000 -P 16 -r 100000 -q -t $t
done
profile rb_lpop redis-benchmark -p $PORT -c 50 -n 1000000 -P 16 -r 100000 -q -t lpush,lpop # pops need a list
go tool pprof -proto "$TMP"/*.pprof >"$ROOT/cmd/anykv/default.pgo"
echo "wrote cmd/anykv/default.pgo ($(stat -c %s "$ROOT/cmd/anykv/default.pgo") bytes)"
