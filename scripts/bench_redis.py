#!/usr/bin/env python3
"""Side-by-side redis-benchmark of anykv and Redis on this machine, for docs/benchmarks.md.

Starts each target on a free loopback port with a fresh data dir, then runs the same redis-benchmark commands
against them in turn (alternating, --runs times), and prints medians, ratios against each Redis variant, and the
exact commands. Targets: anykv --fsync always (durable), Redis without persistence, Redis with appendfsync always.

Usage: scripts/bench_redis.py [--runs 3] [--requests 200000] [--keys 100000] [--clients 50] [--anykv bin/anykv]
"""
import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.args}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server did not listen on {port}")


def targets(anykv, tmp):
    """name -> command line template (port substituted later)."""
    return {
        "anykv (fsync always)": lambda p, d: [anykv, "serve", "--dir", d, "--resp", f"127.0.0.1:{p}", "--log-level", "warn"],
        "redis (no persistence)": lambda p, d: ["redis-server", "--port", str(p), "--bind", "127.0.0.1", "--save", "",
                                                 "--appendonly", "no", "--dir", d],
        "redis (appendfsync always)": lambda p, d: ["redis-server", "--port", str(p), "--bind", "127.0.0.1", "--save", "",
                                                     "--appendonly", "yes", "--appendfsync", "always", "--dir", d],
    }


def parse(out):
    """Throughput and latency percentiles (ms) from redis-benchmark's full output."""
    rps = float(re.search(r"throughput summary: ([\d.]+) requests per second", out).group(1))
    summ = re.search(r"avg\s+min\s+p50\s+p95\s+p99\s+max\s*\n\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", out)
    p50, p99 = float(summ.group(3)), float(summ.group(5))
    p999 = None
    for m in re.finditer(r"([\d.]+)% <= ([\d.]+) milliseconds", out):
        if float(m.group(1)) >= 99.9:
            p999 = float(m.group(2))
            break
    return rps, p50, p99, p999


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--keys", type=int, default=100000)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--anykv", default="bin/anykv")
    ap.add_argument("--pipelines", default="1,16")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="anykv-bench-")
    procs = {}
    try:
        for name, cmd in targets(os.path.abspath(a.anykv), tmp).items():
            port, d = free_port(), tempfile.mkdtemp(dir=tmp)
            p = subprocess.Popen(cmd(port, d), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_port(port, p)
            procs[name] = (port, p)
        results = {}  # (name, test, pipeline) -> list of (rps, p50, p99, p999)
        commands = set()
        for pipeline in [int(x) for x in a.pipelines.split(",")]:
            n = a.requests * (4 if pipeline > 1 else 1)
            for run in range(a.runs):
                for name, (port, _) in procs.items():  # alternate targets within each run
                    for test in ("set", "get"):
                        cmd = ["redis-benchmark", "-p", str(port), "-c", str(a.clients), "-n", str(n),
                               "-r", str(a.keys), "-d", str(a.size), "-P", str(pipeline), "-t", test]
                        commands.add(" ".join(cmd[:1] + ["-p", "PORT"] + cmd[3:]))
                        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600).stdout
                        results.setdefault((name, test, pipeline), []).append(parse(out.replace("\r", "\n")))
        names = list(procs)
        print(f"| target | test | pipeline | ops/s (median of {a.runs}) | p50 ms | p99 ms | p99.9 ms | vs redis no-persist | vs redis fsync always |")
        print("|---|---|---|---|---|---|---|---|---|")
        for pipeline in [int(x) for x in a.pipelines.split(",")]:
            for test in ("set", "get"):
                med = {}
                for name in names:
                    rows = results[(name, test, pipeline)]
                    med[name] = tuple(statistics.median([r[i] for r in rows if r[i] is not None] or [0]) for i in range(4))
                for name in names:
                    rps, p50, p99, p999 = med[name]
                    r1 = rps / med[names[1]][0]
                    r2 = rps / med[names[2]][0]
                    print(f"| {name} | {test.upper()} | {pipeline} | {rps:,.0f} | {p50:.3f} | {p99:.3f} | {p999:.3f} | {r1:.2f}x | {r2:.2f}x |")
        print("\nCommands (PORT = each target's port):")
        for c in sorted(commands):
            print("    " + c)
    finally:
        for _, (_, p) in procs.items():
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
