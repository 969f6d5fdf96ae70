#!/usr/bin/env bash
# tests/run.sh - run the C client tests against a fresh real server.
#
# Starts the server from the command template $KV_SERVER_CMD ({port} and
# {dir} are substituted) on a free 127.0.0.1 port with a temporary data
# directory, waits until it answers PING, runs every test program (then all
# of them again under valgrind when it is installed, unless KV_VALGRIND=0),
# stops the server, prints "N passed, M failed" and exits non-zero on any
# failure.
#
# Default template: the anykv binary,
#   ${ANYKV_BIN:-../../bin/anykv} serve --dir {dir} --resp 127.0.0.1:{port} --memcache '' --http ''
# where a relative ANYKV_BIN is taken relative to clients/c. Against Redis:
#   KV_SERVER_CMD='redis-server --port {port} --dir {dir} --appendonly yes
#                  --appendfsync always --save ""' make -C clients/c test
set -u

CDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B="${KV_BUILD:-$CDIR/build}" # make SANITIZE=1 test: build-san
TESTS=(test_anykv test_kv739 test_restart test_failover test_static)

for t in kvtool "${TESTS[@]}"; do
    if [ ! -x "$B/$t" ]; then
        echo "run.sh: $B/$t is missing; run 'make -C clients/c' first" >&2
        exit 1
    fi
done

# ---- the server command -------------------------------------------------
if [ -z "${KV_SERVER_CMD:-}" ]; then
    bin="${ANYKV_BIN:-../../bin/anykv}"
    case "$bin" in
        /*) ;;
        */*) bin="$CDIR/$bin" ;;
        *) bin=$(command -v "$bin" || echo "$CDIR/$bin") ;;
    esac
    # normalise clients/c/../../bin/anykv to <repo>/bin/anykv when it exists
    bin=$(realpath -m "$bin" 2>/dev/null || echo "$bin")
    if [ ! -x "$bin" ]; then
        echo "run.sh: anykv binary not found at $bin" >&2
        echo "run.sh: build it, or set ANYKV_BIN or KV_SERVER_CMD" >&2
        exit 1
    fi
    KV_SERVER_CMD="$(printf '%q' "$bin") serve --dir {dir} --resp 127.0.0.1:{port} --memcache '' --http ''"
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/anykv-ctest.XXXXXX")

# make_start NAME: a generated script $TMP/start-NAME.sh that starts server NAME (its own free port, data
# directory, pid file and log) in the background, records its pid and waits (up to 20 s, less if the server
# dies) until it answers PING. test_restart runs server a's again after kill -9. Sets PORT and ADDR.
make_start() {
    local name=$1
    mkdir -p "$TMP/$name/data"
    PORT=$("$B/kvtool" freeport) || exit 1
    ADDR="127.0.0.1:$PORT"
    local c=${KV_SERVER_CMD//\{port\}/$PORT}
    c=${c//\{dir\}/$(printf '%q' "$TMP/$name/data")}
    cat >"$TMP/start-$name.sh" <<EOF
#!/usr/bin/env bash
cd $(printf '%q' "$CDIR") || exit 1
bash -c $(printf '%q' "exec $c") >>$(printf '%q' "$TMP/$name/server.log") 2>&1 </dev/null &
pid=\$!
echo \$pid >$(printf '%q' "$TMP/$name/server.pid")
for _ in \$(seq 40); do
    $(printf '%q' "$B/kvtool") wait $ADDR 500 2>/dev/null && exit 0
    kill -0 \$pid 2>/dev/null || { echo "server exited" >&2; exit 1; }
done
echo "server does not answer PING on $ADDR" >&2
exit 1
EOF
    chmod +x "$TMP/start-$name.sh"
}

# Server b stands beside server a for test_failover (a second front end to move to).
make_start b
ADDR2=$ADDR
make_start a
while [ "$ADDR" = "$ADDR2" ]; do make_start a; done # neither is bound yet: do not take b's port
cmd=${KV_SERVER_CMD//\{port\}/$PORT}
PIDFILE="$TMP/a/server.pid"
LOG="$TMP/a/server.log"

stop_server() {
    local pidfile=${1:-$PIDFILE}
    [ -f "$pidfile" ] || return 0
    local pid
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || return 0
        # a zombie (no reaper in some containers) no longer serves: stop waiting
        [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" = Z ] && return 0
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null
}
cleanup() {
    stop_server
    stop_server "$TMP/b/server.pid"
    if [ "${KEEP_TMP:-0}" = 1 ]; then echo "run.sh: kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "run.sh: server: $cmd"
if ! "$TMP/start-b.sh" || ! "$TMP/start-a.sh"; then
    echo "run.sh: server did not start; its log:" >&2
    tail -n 30 "$LOG" >&2
    exit 1
fi

export KV_ADDR="$ADDR" KV_PIDFILE="$PIDFILE" KV_START_CMD="$TMP/start-a.sh" KV_ADDR2="$ADDR2"

PASSED=0
FAILED=0
SUMMARY=()

# run_one LABEL CMD... : run a test program, add up its "N passed, M failed"
# line; a crash, timeout or valgrind error counts as one more failure.
run_one() {
    local label=$1
    shift
    if ! "$B/kvtool" wait "$ADDR" 100 2>/dev/null; then
        echo "run.sh: server is down before $label; restarting it"
        "$TMP/start-a.sh" || { tail -n 30 "$LOG" >&2; }
    fi
    echo "=== $label"
    local out="$TMP/out.txt"
    timeout 900 "$@" 2>&1 | tee "$out"
    local rc=${PIPESTATUS[0]}
    local line p=0 f=0
    line=$(grep -E '^[A-Za-z0-9_]+: [0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)
    if [ -n "$line" ]; then
        p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
        f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed$/\1/')
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "run.sh: $label exited with status $rc (crash, timeout or valgrind errors)"
        f=1
    fi
    PASSED=$((PASSED + p))
    FAILED=$((FAILED + f))
    SUMMARY+=("$(printf '%-28s %4d passed, %d failed' "$label" "$p" "$f")")
}

for t in "${TESTS[@]}"; do
    run_one "$t" "$B/$t"
done

if [ "${KV_VALGRIND:-1}" != 0 ] && command -v valgrind >/dev/null; then
    for t in "${TESTS[@]}"; do
        run_one "valgrind $t" valgrind -q --leak-check=full --error-exitcode=1 \
            --errors-for-leak-kinds=definite,indirect,possible "$B/$t"
    done
else
    echo "run.sh: valgrind not run (not installed or KV_VALGRIND=0)"
fi

if [ "$FAILED" -ne 0 ]; then
    echo "run.sh: last lines of the server log:"
    tail -n 20 "$LOG"
fi
echo "=== summary"
printf '%s\n' "${SUMMARY[@]}"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
