#!/usr/bin/env bash
# The README's test command: installs what the tests need on a fresh Debian machine, builds anykv, and runs every
# test (Go with -race, the C client under valgrind, the Python clients). Set SKIP_INSTALL=1 to skip installs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

if [ "${SKIP_INSTALL:-0}" != 1 ]; then
  pkgs=$(grep -v '^#' scripts/test-deps.txt | tr '\n' ' ')
  missing=""
  for p in $pkgs; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"; done
  if [ -n "$(echo $missing)" ]; then
    echo "== installing Debian packages:$missing"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
  fi
  echo "== installing Python packages"
  pip_args="-q --disable-pip-version-check -r tests/python/requirements.txt"
  python3 -m pip install $pip_args 2>/dev/null || python3 -m pip install --break-system-packages $pip_args
  if command -v npm >/dev/null; then
    echo "== installing Node packages (memjs, a binary-protocol memcached client; bullmq, bull and bee-queue, job" \
      "queues, rate-limiter-flexible and redlock, with the Redis client ioredis) into ~/.cache/anykv/node"
    mkdir -p ~/.cache/anykv/node
    [ -d ~/.cache/anykv/node/node_modules/memjs ] ||
      npm install --prefix ~/.cache/anykv/node --no-audit --no-fund --silent memjs@1.3.2 >/dev/null
    { [ -d ~/.cache/anykv/node/node_modules/bullmq ] && [ -d ~/.cache/anykv/node/node_modules/ioredis ]; } ||
      npm install --prefix ~/.cache/anykv/node --no-audit --no-fund --silent bullmq@6.7.0 ioredis@6.0.0 >/dev/null
    [ -d ~/.cache/anykv/node/node_modules/bull ] ||
      npm install --prefix ~/.cache/anykv/node --no-audit --no-fund --silent bull@4.16.5 >/dev/null
    # bee-queue (a job queue on the redis v3 client), rate-limiter-flexible and redlock (on ioredis)
    { [ -d ~/.cache/anykv/node/node_modules/bee-queue ] && [ -d ~/.cache/anykv/node/node_modules/redlock ] &&
      [ -d ~/.cache/anykv/node/node_modules/rate-limiter-flexible ]; } ||
      npm install --prefix ~/.cache/anykv/node --no-audit --no-fund --silent bee-queue@2.0.0 \
        rate-limiter-flexible@11.4.0 redlock@4.2.0 >/dev/null
  fi
fi

echo "== build (with cmd/anykv/default.pgo: profile-guided optimization, scripts/pgo_profile.sh) [${SECONDS}s in]"
go build -o bin/anykv ./cmd/anykv
export ANYKV_BIN="$root/bin/anykv"

echo "== gofmt, go vet, staticcheck [${SECONDS}s in]"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt needed:"; echo "$unformatted"; exit 1; fi
go vet ./...
go tool staticcheck ./...

echo "== Cassandra jars (fetched once into ~/.cache/anykv, before the packages that start Cassandra run in parallel) [${SECONDS}s in]"
go test -count=1 -run '^TestCassandraJars$' ./internal/bench/deploy
# The tests' Cassandra nodes start with the C1 compiler only and without bytecode verification: a 3-node cluster
# then forms with half the CPU (28-34 s of it against 56-70 s, 2026-12-01), and the tests start several clusters
# and single nodes. Benchmarks run without these options (internal/cluster: CassandraJVMOptionsEnv; the bench's settings
# lines name them when set).
if [ -z "${ANYKV_CASSANDRA_JVM_OPTS+set}" ]; then
  export ANYKV_CASSANDRA_JVM_OPTS="-XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote -XX:-UsePerfData"
fi

echo "== go test -race [${SECONDS}s in]"
# anykv refuses writes below 2% free space (--min-free-space); servertest lowers the reserve for its servers, but
# the bench harness's deployed servers keep the default. Say so when the disk is that full, for the failures to come.
df -P "${TMPDIR:-/tmp}" | awk 'NR==2 && $4/$2 < 0.03 {print "warning: " $6 " has " int($4/1048576) " GiB free (under 3%): servers started with the default --min-free-space will refuse writes"}'
set +e
# -pgo=off: the tests of cmd/anykv would otherwise rebuild every package a second time with the profile; the
# end-to-end tests run bin/anykv, the optimized build.
# go test runs the packages in the order named, two at a time on two cores: the longest go first (cmd/anykv about
# 400 s, redis and pebblestore about 180 s each), so that no long one is left running alone at the end, and the
# three that start a 3-node Cassandra cluster (cmd/anykv early, bench/deploy after some 20 s, cluster) come at
# different times rather than wait for each other's (servertest.CassandraSlot) while holding one of the two slots.
# In alphabetical order (./... alone) the run took 867 s here, redis alone for the last 150 s and bench/deploy
# waiting 110 s for cmd/anykv's cluster; in this order 647 s. ./... adds the rest, each package once.
first="./cmd/anykv ./internal/protocol/redis ./internal/bench/deploy ./internal/engine/pebblestore ./internal/cluster
  ./internal/engine/remote/cassandrastore ./internal/engine/remote/dial ./internal/engine/remote/redisstore"
go test -race -pgo=off -count=1 -timeout 15m $first ./... 2>&1 | grep -v 'no test files' | tee /tmp/anykv-go-test.log
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 0 ] || { echo "go test failed"; exit 1; }
go_ok=$(grep -c '^ok' /tmp/anykv-go-test.log)

echo "== C client (make -C clients/c test) [${SECONDS}s in]"
make -s -C clients/c test > /tmp/anykv-c-test.log 2>&1 || { cat /tmp/anykv-c-test.log; exit 1; }
tail -n 8 /tmp/anykv-c-test.log

echo "== Python client tests (pytest) [${SECONDS}s in]"
set +e
python3 -m pytest -q tests/python 2>&1 | tail -n 25
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 0 ] || { echo "pytest failed"; exit 1; }

echo "== differential fuzzing against redis-server (tests/difffuzz: fixed seeds, pipelines, MULTI, RESP3, SIGKILL restarts, keyspace events; blockfuzz.py: blocking commands under several clients) [${SECONDS}s in]"
# The runs go side by side (each keeps at most about one core busy, waiting on its servers part of the time; the
# three difffuzz runs took 129 s one after another in CI), each with its own servers and log, reported in order.
fuzz="python3 tests/difffuzz/difffuzz.py --anykv bin/anykv"
runs=("$fuzz --seeds 0:300" "$fuzz --seeds 1000:1100 --pipeline 0.3 --restart 0.05 --events"
  "$fuzz --seeds 2000:2300 --resp3 --members 16 --multi 0.2 --pipeline 0.2 --events"
  "python3 tests/difffuzz/blockfuzz.py --anykv bin/anykv --seeds 0:10")
pids=()
for i in "${!runs[@]}"; do
  # shellcheck disable=SC2086 # a run is a command and its flags
  ${runs[$i]} > "/tmp/anykv-difffuzz-$i.log" 2>&1 &
  pids+=($!)
done
fuzz_failed=0
for i in "${!runs[@]}"; do
  if wait "${pids[$i]}"; then
    grep '^done' "/tmp/anykv-difffuzz-$i.log"
  else
    tail -n 80 "/tmp/anykv-difffuzz-$i.log"; echo "failed: ${runs[$i]}"; fuzz_failed=1
  fi
done
[ "$fuzz_failed" = 0 ] || exit 1

echo "== Redis 7.0.15's own tests of the data types, against anykv (scripts/redis_type_tests.sh) [${SECONDS}s in]"
# A timing-sensitive test of the suite has failed once in a few runs before: a failed run is shown and run once
# more, and CI fails if the second run fails too.
if scripts/redis_type_tests.sh > /tmp/anykv-redis-tests.log 2>&1; then
  tail -n 2 /tmp/anykv-redis-tests.log
else
  tail -n 40 /tmp/anykv-redis-tests.log
  echo "Redis's suites failed (above); running them once more"
  scripts/redis_type_tests.sh
fi

echo "== all tests passed ($go_ok Go packages, C client, Python clients, the differential fuzzer, Redis's type suites) [${SECONDS}s in]"
