#!/usr/bin/env bash
# Runs Redis 7.0.15's own test suites for the data types against anykv (Redis's runtest in external-server
# mode), skipping the tests listed in scripts/redis-tests.skip (deviations documented in docs/resp.md). Exits
# non-zero when a test fails. Needs tclsh and curl. Usage: scripts/redis_type_tests.sh [unit ...]
# (default: the suites below); ANYKV_BIN uses a built binary, REDIS_TESTS_KEEP=1 keeps the run's directory,
# REDIS_TESTS_TIMEOUT (s, default 300) bounds the suite's silence before it gives up.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

version=7.0.15
sha256=4b1dc4ee6d622a09fff9c6777191209750fb5e5a725ef78ea012d6eef4c22982
url=http://deb.debian.org/debian/pool/main/r/redis/redis_$version.orig.tar.gz
cache=${XDG_CACHE_HOME:-$HOME/.cache}/anykv
tarball=$cache/redis_$version.orig.tar.gz
suites=("$@")
# unit/protocol first: unit/type/list and unit/type/set raise proto-max-bulk-len to 10 GB on the one server they
# share (each file has a server of its own in Redis's CI), and its oversized-bulk tests then wait for the bytes.
[ ${#suites[@]} -gt 0 ] || suites=(unit/protocol unit/type/list unit/type/hash unit/type/set unit/type/zset unit/type/incr
  unit/type/string unit/type/list-2 unit/type/list-3 unit/expire unit/keyspace unit/bitops unit/bitfield unit/pubsub unit/scan
  unit/hyperloglog unit/type/stream unit/type/stream-cgroups unit/sort unit/dump unit/functions unit/scripting
  unit/multi unit/pause unit/tracking unit/geo unit/quit unit/info-command unit/introspection-2 unit/slowlog
  unit/other)

if [ ! -f "$tarball" ]; then
  mkdir -p "$cache"
  curl -fsSL -o "$tarball.part" "$url"
  mv "$tarball.part" "$tarball"
fi
echo "$sha256  $tarball" | sha256sum -c --quiet

work=$(mktemp -d)
pid=""
cleanup() {
  [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
  [ -z "$pid" ] || wait "$pid" 2>/dev/null || true
  [ "${REDIS_TESTS_KEEP:-0}" = 1 ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT

tar xzf "$tarball" -C "$work" "redis-$version/tests" "redis-$version/runtest"
suite=$work/redis-$version
# Load the shim after the suite's own procs are defined (just before its main block).
sed -i "s|^if {\$::client} {\$|source $root/scripts/redis-tests-shim.tcl\n&|" "$suite/tests/test_helper.tcl"
grep -q redis-tests-shim "$suite/tests/test_helper.tcl"
# Two tests of 7.0.15 send a blocking XREAD on one connection and at once change its key on another, taking the
# XREAD to run first: true of a single-threaded Redis, not of anykv, which serves each connection on its own
# goroutine; on a loaded machine the XREAD then ran after the SET (WRONGTYPE) or after the XADD (its "$" is 667,
# and it waits forever). Redis's later suites wait for the client to be blocked there, as these lines do.
cgroups=$suite/tests/unit/type/stream-cgroups.tcl
sed -i 's|^\( *\)\$rd XREAD BLOCK 0 STREAMS mystream "\$"$|&\n\1wait_for_blocked_clients_count 1|' "$cgroups"
[ "$(grep -A1 '^ *\$rd XREAD BLOCK 0 STREAMS mystream "\$"$' "$cgroups" | grep -c wait_for_blocked_clients_count)" = 2 ]
{ grep -v '^\s*\(#\|$\)' scripts/redis-tests.skip || true; } > "$work/skip"

bin=${ANYKV_BIN:-}
if [ -z "$bin" ]; then
  go build -o bin/anykv ./cmd/anykv
  bin=$root/bin/anykv
fi
: > "$work/anykv.log" # exists before tail follows it
# --fsync never: the suites write a lot and test replies, not durability.
"$bin" serve --dir "$work/data" --fsync never --resp 127.0.0.1:0 --memcache '' --http '' > "$work/anykv.log" 2>&1 &
pid=$!
# The server logs "anykv ready" once it listens; the port it picked is in its "listening" line.
grep -q -m1 'anykv ready' < <(timeout 30 tail -n +1 -f --pid "$pid" "$work/anykv.log") || { cat "$work/anykv.log"; exit 1; }
port=$(sed -n 's/.*msg=listening protocol=resp addr=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/anykv.log")
[ -n "$port" ] || { cat "$work/anykv.log"; exit 1; }

# --baseport: where the suite's own control socket goes; random so that two runs on one machine do not collide.
args=(--host 127.0.0.1 --port "$port" --baseport $((20000 + RANDOM % 20000)) --skipfile "$work/skip" --ignore-encoding --ignore-digest --durable
  --timeout "${REDIS_TESTS_TIMEOUT:-300}" --tags -needs:debug --tags -needs:repl --tags -needs:config-maxmemory --tags -needs:save
  --tags -needs:reset --tags -needs:config-resetstat --tags -needs:latency)
for s in "${suites[@]}"; do args+=(--single "$s"); done
start=$(date +%s)
set +e
(cd "$suite" && ./runtest "${args[@]}") > "$work/runtest.log" 2>&1
rc=$?
set -e
sed 's/\x1b\[[0-9;]*m//g' "$work/runtest.log" > "$work/plain.log"
grep -E '^\[(err|exception|TIMEOUT)\]|^(Expected|ERR|WRONGTYPE)|IN PROGRESS' "$work/plain.log" | head -n 100 || true
passed=$(grep -c '^\[ok\]' "$work/plain.log" || true)
failed=$(grep -cE '^\[(err|exception|TIMEOUT)\]' "$work/plain.log" || true)
skipped=$(grep -cE '^\[(skip|ignore)\]' "$work/plain.log" || true)
echo "redis $version suites (${suites[*]}) in $(($(date +%s) - start)) s"
echo "redis-tests: $passed passed, $failed failed, $skipped skipped"
[ "$rc" = 0 ] && [ "$failed" = 0 ] && [ "$passed" -gt 0 ] || { tail -n 20 "$work/plain.log"; exit 1; }
