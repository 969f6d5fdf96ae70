#!/usr/bin/env bash
# Runs client libraries' own test suites against a fresh anykv (and, with --with-redis, against redis-server side by
# side) and prints pass/fail counts per suite and server. Not part of CI: it fetches the suites (go-redis's module
# source from the Go module proxy, redis-py's sdist from PyPI) and takes 10-20 minutes on 2 cores.
#
#   scripts/client_suites.sh [--with-redis] [--only go-redis|redis-py]
#
# go-redis: the version in go.mod, its ginkgo suite (TestGinkgoSuite) limited to the plain command files (no
# cluster, sentinel, ring, TLS or module tests), with main_test.go patched so that it connects to one server given
# by address and sets up no cluster, sentinel or ring (SUITE_STANDALONE, SUITE_REDIS_ADDR). REDIS_VERSION=7.0 gates
# its version-dependent tests as for redis-server 7.0.
# redis-py: the installed version (REDISPY_VERSION to choose), its pytest suite with --redis-url, in a venv with
# pytest-asyncio and pytest-timeout, without the cluster, sentinel, module, TLS, multidb, scenario, HTTP, auth,
# credentials and observability tests (files removed, markers deselected).
# Results (JSON and JUnit reports, logs, the failing tests' names) are left in $OUT (default /tmp/anykv-client-suites).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
with_redis=0
only=""
while [ $# -gt 0 ]; do
	case "$1" in
	--with-redis) with_redis=1 ;;
	--only) only=$2; shift ;;
	*) echo "usage: $0 [--with-redis] [--only go-redis|redis-py]" >&2; exit 2 ;;
	esac
	shift
done
OUT=${OUT:-/tmp/anykv-client-suites}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/anykv/client-suites
mkdir -p "$OUT" "$cache"

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
	for _ in $(seq 1 100); do
		if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$1),1)" 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	echo "nothing listens on port $1" >&2
	exit 1
}

echo "building anykv"
(cd "$here" && go build -o "$OUT/anykv" ./cmd/anykv)

# start_servers starts a fresh anykv (and redis-server) and sets ANYKV_PORT (and REDIS_PORT).
start_servers() {
	ANYKV_PORT=$(free_port)
	rm -rf "$OUT/anykv-data"
	"$OUT/anykv" serve --dir "$OUT/anykv-data" --resp "127.0.0.1:$ANYKV_PORT" --memcache "" --http "" --fsync never \
		>"$OUT/anykv.log" 2>&1 &
	pids+=($!)
	wait_port "$ANYKV_PORT"
	if [ $with_redis = 1 ]; then
		REDIS_PORT=$(free_port)
		mkdir -p "$OUT/redis-data"
		redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$OUT/redis-data" \
			--enable-debug-command local >"$OUT/redis.log" 2>&1 &
		pids+=($!)
		wait_port "$REDIS_PORT"
	fi
}

servers() {
	echo "anykv $ANYKV_PORT"
	if [ $with_redis = 1 ]; then echo "redis-server $REDIS_PORT"; fi
}

run_goredis() {
	local ver dir src
	ver=$(cd "$here" && go list -m -f '{{.Version}}' github.com/redis/go-redis/v9)
	dir=$(cd "$here" && GOFLAGS=-mod=mod go mod download -json "github.com/redis/go-redis/v9@$ver" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
	src=$cache/go-redis-$ver
	if [ ! -x "$src/goredis.test" ]; then
		rm -rf "$src"
		cp -r "$dir" "$src"
		chmod -R u+w "$src"
		python3 - "$src/main_test.go" <<'EOF'
import sys
p = sys.argv[1]
s = open(p).read()
a = '\tredisPort = redisStackPort\n\tredisAddr = redisStackAddr\n'
assert a in s, "go-redis main_test.go changed: update the patch"
s = s.replace(a, a + '''\tif a := os.Getenv("SUITE_REDIS_ADDR"); a != "" {
\t\tredisAddr = a
\t\tredisStackAddr = a
\t\t_, redisPort, _ = net.SplitHostPort(a)
\t\tredisStackPort = redisPort
\t}
\tif os.Getenv("SUITE_STANDALONE") != "" {
\t\treturn
\t}
''', 1)
b = 'var _ = AfterSuite(func() {\n\tif !RECluster {'
assert b in s, "go-redis main_test.go changed: update the patch"
s = s.replace(b, 'var _ = AfterSuite(func() {\n\tif !RECluster && os.Getenv("SUITE_STANDALONE") == "" {', 1)
open(p, 'w').write(s)
EOF
		echo "building go-redis $ver's tests"
		(cd "$src" && GOFLAGS=-mod=mod go test -c -o goredis.test .)
	fi
	local files='/(commands|bitmap_commands|pipeline|tx|tx_unwatch|pubsub|iterator|redis|command|monitor|pool|race|error|acl_commands|script_server_sha_integration|autopipeline|himport_commands|hotkeys_commands|array_commands|csc_e2e)_test\.go'
	while read -r name port; do
		[ -n "$name" ] || continue
		(cd "$src" && SUITE_STANDALONE=1 SUITE_REDIS_ADDR=":$port" REDIS_VERSION=7.0 timeout 1800 ./goredis.test \
			-test.run TestGinkgoSuite -test.timeout 30m -ginkgo.focus-file "$files" \
			-ginkgo.skip "cluster races|Credentials Provider Priority" -ginkgo.no-color \
			-ginkgo.json-report "$OUT/go-redis-$name.json" >"$OUT/go-redis-$name.log" 2>&1) || true
		python3 - "$OUT/go-redis-$name.json" "go-redis $ver on $name" "$OUT/go-redis-$name.failed" <<'EOF'
import json, sys, collections
counts, failed = collections.Counter(), []
for suite in json.load(open(sys.argv[1])):
    for s in suite.get("SpecReports") or []:
        if s.get("LeafNodeType") != "It":
            continue
        st = {"passed": "passed", "skipped": "skipped", "pending": "skipped"}.get(s["State"], "failed")
        counts[st] += 1
        if st == "failed":
            loc = s["LeafNodeLocation"]
            failed.append("%s:%d %s" % (loc["FileName"].split("/")[-1], loc["LineNumber"],
                                        " / ".join((s.get("ContainerHierarchyTexts") or []) + [s.get("LeafNodeText", "")])))
open(sys.argv[3], "w").write("".join(f + "\n" for f in sorted(failed)))
print("%s: %d passed, %d failed, %d skipped" % (sys.argv[2], counts["passed"], counts["failed"], counts["skipped"]))
EOF
	done < <(servers)
}

run_redispy() {
	local ver src venv
	ver=${REDISPY_VERSION:-$(python3 -c 'import redis; print(redis.__version__)' 2>/dev/null || echo 8.1.0)}
	src=$cache/redis-py-$ver
	venv=$cache/venv
	if [ ! -d "$src/tests" ]; then
		rm -rf "$src" "$cache/sdist"
		python3 -m pip download -q --no-binary :all: --no-deps "redis==$ver" -d "$cache/sdist"
		mkdir -p "$src"
		tar xzf "$cache/sdist/redis-$ver.tar.gz" -C "$src" --strip-components 1
		if [ ! -d "$src/tests" ]; then
			echo "redis-py $ver's sdist has no tests/" >&2
			return 1
		fi
		(
			cd "$src/tests"
			rm -rf test_multidb test_scenario maint_notifications test_http test_auth test_observability \
				test_asyncio/test_multidb test_asyncio/test_scenario test_asyncio/test_observability
			for f in cluster cluster_transaction sentinel sentinel_managed_connection bloom json search \
				search_aggregation search_querystring search_result timeseries vsets ssl credentials; do
				rm -f "test_$f.py" "test_asyncio/test_$f.py"
			done
		)
	fi
	if [ ! -x "$venv/bin/python" ]; then
		python3 -m venv --system-site-packages "$venv"
		"$venv/bin/pip" install -q pytest pytest-asyncio pytest-timeout
	fi
	while read -r name port; do
		[ -n "$name" ] || continue
		redis-cli -p "$port" FLUSHALL >/dev/null 2>&1 || true
		(cd "$src" && timeout 3000 "$venv/bin/python" -m pytest -p no:cacheprovider -q -o addopts="" \
			--redis-url "redis://127.0.0.1:$port" -W ignore --timeout 60 \
			-m "not onlycluster and not redismod and not ssl and not replica and not experimental and not cp_integration and not multidb_integration" \
			--junitxml "$OUT/redis-py-$name.xml" tests >"$OUT/redis-py-$name.log" 2>&1) || true
		python3 - "$OUT/redis-py-$name.xml" "redis-py $ver on $name" "$OUT/redis-py-$name.failed" <<'EOF'
import sys, collections
import xml.etree.ElementTree as ET
state = {}  # a test whose teardown failed has a second testcase of the same name: one test, failed
for tc in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    st = "passed"
    for ch in tc:
        if ch.tag in ("failure", "error"):
            st = "failed"
        elif ch.tag == "skipped" and st == "passed":
            st = "skipped"
    name = tc.get("classname") + "::" + tc.get("name")
    if state.get(name) != "failed":
        state[name] = st
counts = collections.Counter(state.values())
failed = [n for n, st in state.items() if st == "failed"]
open(sys.argv[3], "w").write("".join(f + "\n" for f in sorted(failed)))
print("%s: %d passed, %d failed, %d skipped" % (sys.argv[2], counts["passed"], counts["failed"], counts["skipped"]))
EOF
	done < <(servers)
}

start_servers
if [ -z "$only" ] || [ "$only" = go-redis ]; then run_goredis; fi
if [ -z "$only" ] || [ "$only" = redis-py ]; then
	cleanup
	pids=()
	start_servers # a fresh server for the second suite
	run_redispy
fi
echo "reports, logs and the failing tests' names (*.failed) are in $OUT"
