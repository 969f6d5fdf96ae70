#!/usr/bin/env bash
# Runs Redis 7.0.15's own test suites for the data types against anykv (Redis's runtest in external-server
# mode), skipping the tests listed in scripts/redis-tests.skip (deviations documented in docs/resp.md). Exits
# non-zero when a test fails. Needs tclsh and curl. Usage: scripts/redis_type_tests.sh [unit ...]
# (default: the suites below); ANYKV_BIN uses a built binary, REDIS_TESTS_KEEP=1 keeps the run's directory,
# REDIS_TESTS_TIMEOUT (s, default 300) bounds the suite's silence before it gives up, REDIS_TESTS_SHARDS (default
# 3) is how many servers and runtests share the units, REDIS_TESTS_RUN_EXTERNAL (files; default below) whose
# external:skip blocks without configuration of their own run too (scripts/redis-tests-shim.tcl). A server that
# does not start or exits fails the run at once, with the end of its log; on any exit, SIGINT or SIGTERM included,
# the script stops every server and runtest (with the processes runtest spawned) it started.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

version=7.0.15
sha256=4b1dc4ee6d622a09fff9c6777191209750fb5e5a725ef78ea012d6eef4c22982
url=http://deb.debian.org/debian/pool/main/r/redis/redis_$version.orig.tar.gz
cache=${XDG_CACHE_HOME:-$HOME/.cache}/anykv
tarball=$cache/redis_$version.orig.tar.gz
# The default suites, each with the seconds it took alone (2026-11-30): the run deals them out to
# REDIS_TESTS_SHARDS (default 3) servers that run side by side, the longest first to the least loaded. Each shard
# runs its units in this order. One run of them all took 248 s on one server, with the CPU a third busy.
# unit/protocol first: unit/type/list and unit/type/set raise proto-max-bulk-len to 10 GB on the server they run
# on (each file has a server of its own in Redis's CI), and its oversized-bulk tests then wait for the bytes.
# unit/obuf-limits before it: it reads its subscriber as the second line of CLIENT LIST (publishing until that
# line's omem grows, forever if clients other units left open come first), and leaves output limits that would
# close later units' clients (prepare sets Redis's default back at its end).
default=(unit/obuf-limits:20 unit/protocol:1 unit/type/list:12 unit/type/hash:5 unit/type/set:10 unit/type/zset:29 unit/type/incr:0
  unit/type/string:10 unit/type/list-2:18 unit/type/list-3:44 unit/expire:6 unit/keyspace:0 unit/bitops:2
  unit/bitfield:1 unit/pubsub:0 unit/scan:8 unit/hyperloglog:56 unit/type/stream:8 unit/type/stream-cgroups:2
  unit/sort:8 unit/dump:0 unit/functions:1 unit/scripting:2 unit/multi:1 unit/pause:0 unit/tracking:2 unit/geo:17
  unit/quit:0 unit/info-command:0 unit/introspection-2:3 unit/slowlog:0 unit/other:2 unit/acl:1 unit/acl-v2:1
  unit/pubsubshard:1 unit/info:1 unit/latency-monitor:4)
# These files' blocks are tagged external:skip only because they leave ACL users and the like on the server (each
# has a server of its own in Redis's CI); each shard's server is fresh, and the shim runs their blocks that ask
# for no configuration of their own.
export REDIS_TESTS_RUN_EXTERNAL=${REDIS_TESTS_RUN_EXTERNAL-tests/unit/acl.tcl tests/unit/acl-v2.tcl tests/unit/pubsubshard.tcl tests/unit/info.tcl tests/unit/obuf-limits.tcl}
suites=("$@")
if [ ${#suites[@]} -eq 0 ]; then
  suites=("${default[@]}")
else
  suites=("${suites[@]/%/:1}")
fi
shards=${REDIS_TESTS_SHARDS:-3}
[ "$shards" -le ${#suites[@]} ] || shards=${#suites[@]}
# shard[i] is the shard of suites[i]: the longest first, each to the shard with the fewest seconds so far.
declare -a shard load
for ((j = 0; j < shards; j++)); do load[j]=0; done
while read -r secs i; do
  least=0
  for ((j = 1; j < shards; j++)); do [ "${load[j]}" -ge "${load[least]}" ] || least=$j; done
  shard[i]=$least
  load[least]=$((load[least] + secs))
done < <(for i in "${!suites[@]}"; do echo "${suites[i]##*:} $i"; done | sort -k1,1nr -k2,2n)

if [ ! -f "$tarball" ]; then
  mkdir -p "$cache"
  curl -fsSL -o "$tarball.part" "$url"
  mv "$tarball.part" "$tarball"
fi
echo "$sha256  $tarball" | sha256sum -c --quiet

work=$(mktemp -d)
# servers[j] is the pid of shard j's anykv, runners[j] that of its runtest. Each is started with setsid, in a
# session and process group of its own whose id is that pid: "kill -- -PID" reaches runtest's tclsh and the client
# processes it spawns, and a Ctrl-C in the terminal reaches only this script, whose trap stops them all.
declare -a servers runners
# stop PID...: SIGTERM to each (a negative PID is a process group), then SIGKILL to what is left 10 s later.
stop() {
  local p i
  for p in "$@"; do kill -TERM -- "$p" 2>/dev/null || true; done
  for p in "$@"; do
    for ((i = 0; i < 100; i++)); do kill -0 -- "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "$p" 2>/dev/null || true
  done
}
cleanup() {
  local rc=$? groups=() p
  trap '' INT TERM HUP # one cleanup, not interrupted
  for p in "${runners[@]}"; do groups+=("-$p"); done
  stop "${groups[@]}" "${servers[@]/#/-}"
  if [ "${REDIS_TESTS_KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "redis-tests: interrupted (SIGINT), stopping the shards" >&2; exit 130' INT
trap 'echo "redis-tests: terminated (SIGTERM), stopping the shards" >&2; exit 143' TERM
trap 'exit 129' HUP
# fail MESSAGE [LOG]: prints MESSAGE and the end of LOG, and exits (the EXIT trap stops everything started).
fail() {
  echo "redis-tests: $1" >&2
  if [ -n "${2:-}" ]; then
    echo "--- last lines of $2:" >&2
    tail -n 20 "$2" >&2
  fi
  exit 1
}

bin=${ANYKV_BIN:-}
if [ -z "$bin" ]; then
  go build -o bin/anykv ./cmd/anykv
  bin=$root/bin/anykv
fi
{ grep -v '^\s*\(#\|$\)' scripts/redis-tests.skip || true; } > "$work/skip"

# prepare DIR: the suite unpacked into DIR, with the shim and the two waits below.
prepare() {
  mkdir -p "$1"
  tar xzf "$tarball" -C "$1" "redis-$version/tests" "redis-$version/runtest"
  local suite=$1/redis-$version
  # Load the shim after the suite's own procs are defined (just before its main block).
  sed -i "s|^if {\$::client} {\$|source $root/scripts/redis-tests-shim.tcl\n&|" "$suite/tests/test_helper.tcl"
  grep -q redis-tests-shim "$suite/tests/test_helper.tcl"
  # Two tests of 7.0.15 send a blocking XREAD on one connection and at once change its key on another, taking the
  # XREAD to run first: true of a single-threaded Redis, not of anykv, which serves each connection on its own
  # goroutine; on a loaded machine the XREAD then ran after the SET (WRONGTYPE) or after the XADD (its "$" is 667,
  # and it waits forever). Redis's later suites wait for the client to be blocked there, as these lines do.
  # unit/obuf-limits leaves a 100 KB hard limit on normal clients: its server's later units need the default back.
  local obuf=$suite/tests/unit/obuf-limits.tcl
  sed -i '$ s|^}$|    r config set client-output-buffer-limit "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"\n}|' "$obuf"
  [ "$(tail -n 2 "$obuf" | grep -c 'client-output-buffer-limit "normal 0 0 0')" = 1 ]
  local cgroups=$suite/tests/unit/type/stream-cgroups.tcl
  # shellcheck disable=SC2016 # the $ are Tcl's
  sed -i 's|^\( *\)\$rd XREAD BLOCK 0 STREAMS mystream "\$"$|&\n\1wait_for_blocked_clients_count 1|' "$cgroups"
  # shellcheck disable=SC2016
  [ "$(grep -A1 '^ *\$rd XREAD BLOCK 0 STREAMS mystream "\$"$' "$cgroups" | grep -c wait_for_blocked_clients_count)" = 2 ]
}

# serve J: starts shard J's anykv, with its data in the shard's directory, and sets ports[J] to the port it listens
# on. Fails the run if the server exits first, or is not ready within 30 s.
declare -a ports
serve() {
  local dir=$work/shard$1
  : > "$dir/anykv.log" # there before the grep below reads it
  # --fsync never: the suites write a lot and test replies, not durability.
  setsid "$bin" serve --dir "$dir/data" --fsync never --resp 127.0.0.1:0 --memcache '' --http '' \
    > "$dir/anykv.log" 2>&1 &
  servers[$1]=$!
  # The server logs "anykv ready" once it listens; the port it picked is in its "listening" line.
  local deadline=$((SECONDS + 30))
  until grep -q 'anykv ready' "$dir/anykv.log"; do
    kill -0 "${servers[$1]}" 2>/dev/null ||
      fail "shard $1: anykv ($bin) exited before it was ready" "$dir/anykv.log"
    [ "$SECONDS" -lt "$deadline" ] || fail "shard $1: anykv ($bin) not ready after 30 s" "$dir/anykv.log"
    sleep 0.1
  done
  ports[$1]=$(sed -n 's/.*msg=listening protocol=resp addr=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$dir/anykv.log")
  [ -n "${ports[$1]}" ] || fail "shard $1: anykv logged no RESP port" "$dir/anykv.log"
}

start=$(date +%s)
portbase=$((20000 + RANDOM % 4000 * 5)) # the suites' control sockets: random, so two runs on one machine do not collide
# Every shard's directory and server first, then the runtests: a server that cannot start stops the run before
# any test does.
for ((j = 0; j < shards; j++)); do
  units=()
  for i in "${!suites[@]}"; do [ "${shard[i]}" != "$j" ] || units+=("${suites[i]%:*}"); done
  [ ${#units[@]} -gt 0 ] || continue # (runtest with no --single would run every unit)
  dir=$work/shard$j
  prepare "$dir"
  echo "${units[*]}" > "$dir/units"
  serve "$j"
done
for j in "${!servers[@]}"; do
  dir=$work/shard$j
  read -ra units < "$dir/units"
  args=(--host 127.0.0.1 --port "${ports[j]}" --baseport $((portbase + j * 64)) --skipfile "$work/skip"
    --ignore-encoding --ignore-digest --durable --timeout "${REDIS_TESTS_TIMEOUT:-300}" --tags -needs:debug
    --tags -needs:repl --tags -needs:config-maxmemory --tags -needs:save --tags -needs:reset)
  for u in "${units[@]}"; do args+=(--single "$u"); done
  (cd "$dir/redis-$version" && exec setsid ./runtest "${args[@]}" > "$dir/runtest.log" 2>&1) &
  runners[j]=$!
done
# Wait for the runtests, each shard's exit status in its rc file. A server that exits during the run fails it at
# once: its tests would fail with "connection refused", or wait for it.
running=("${!runners[@]}")
while [ ${#running[@]} -gt 0 ]; do
  sleep 0.5
  left=()
  for j in "${running[@]}"; do
    kill -0 "${servers[j]}" 2>/dev/null ||
      fail "shard $j: anykv (pid ${servers[j]}) exited during the run" "$work/shard$j/anykv.log"
    if kill -0 "${runners[j]}" 2>/dev/null; then
      left+=("$j")
    else
      status=0
      wait "${runners[j]}" || status=$?
      echo "$status" > "$work/shard$j/rc"
      kill -KILL -- "-${runners[j]}" 2>/dev/null || true # whatever runtest left running
      unset 'runners[j]'
    fi
  done
  running=("${left[@]}")
done

rc=0 passed=0 failed=0 skipped=0
for ((j = 0; j < shards; j++)); do
  dir=$work/shard$j
  [ -f "$dir/units" ] || continue
  sed 's/\x1b\[[0-9;]*m//g' "$dir/runtest.log" > "$dir/plain.log"
  grep -E '^\[(err|exception|TIMEOUT)\]|^(Expected|ERR|WRONGTYPE)|IN PROGRESS' "$dir/plain.log" | head -n 100 || true
  n=$(grep -c '^\[ok\]' "$dir/plain.log" || true) && passed=$((passed + n))
  f=$(grep -cE '^\[(err|exception|TIMEOUT)\]' "$dir/plain.log" || true) && failed=$((failed + f))
  n=$(grep -cE '^\[(skip|ignore)\]' "$dir/plain.log" || true) && skipped=$((skipped + n))
  # Every unit of the shard must have run to its end: runtest reports each as "[k/n done]".
  read -ra units < "$dir/units"
  done_units=$(grep -cE "^\[[0-9]+/${#units[@]} done\]: " "$dir/plain.log" || true)
  if [ "$(cat "$dir/rc" 2>/dev/null)" != 0 ] || [ "$f" != 0 ] || [ "$done_units" != ${#units[@]} ] ||
    ! grep -q 'All tests passed without errors' "$dir/plain.log"; then
    rc=1
    echo "shard $j (${units[*]}) failed: rc $(cat "$dir/rc" 2>/dev/null), $done_units of ${#units[@]} units done"
    tail -n 20 "$dir/plain.log"
  fi
done
echo "redis $version suites (${suites[*]%:*}) in $(($(date +%s) - start)) s on $shards servers"
echo "redis-tests: $passed passed, $failed failed, $skipped skipped"
[ "$rc" = 0 ] && [ "$failed" = 0 ] && [ "$passed" -gt 0 ]
