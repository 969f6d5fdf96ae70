#!/usr/bin/env python3
"""Resident memory per key and restart time, for docs/benchmarks.md.

Loads N keys of --size bytes with redis-cli --pipe into anykv (pebble, fsync always) and into Redis (no
persistence), reports each process's resident memory per key, then kills anykv with SIGKILL and times how long a
restart takes until it answers PING and serves a key.

Usage: scripts/bench_memory_restart.py [--keys 1000000] [--size 100] [--anykv bin/anykv] [--no-redis]
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ping(port, timeout=600):
    start = time.time()
    while time.time() - start < timeout:
        r = subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True)
        if r.stdout.strip() == "PONG":
            return time.time() - start
        time.sleep(0.01)
    raise RuntimeError("server did not answer PING")


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def load(port, n, size, chunk=200000):
    value = b"v" * size
    for start in range(0, n, chunk):
        buf = bytearray()
        for i in range(start, min(n, start + chunk)):
            k = b"key:%010d" % i
            buf += b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(value), value)
        r = subprocess.run(["redis-cli", "-p", str(port), "--pipe"], input=bytes(buf), capture_output=True)
        if b"errors: 0" not in r.stdout:
            raise RuntimeError(r.stdout.decode() + r.stderr.decode())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1000000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--anykv", default="bin/anykv")
    ap.add_argument("--no-redis", action="store_true")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="anykv-mem-")
    try:
        port = free_port()
        args = [os.path.abspath(a.anykv), "serve", "--dir", tmp + "/data", "--resp", f"127.0.0.1:{port}",
                "--memcache", "", "--http", "", "--log-level", "warn"]
        p = subprocess.Popen(args)
        wait_ping(port)
        base = rss_bytes(p.pid)
        t0 = time.time()
        load(port, a.keys, a.size)
        took = time.time() - t0
        rss = rss_bytes(p.pid)
        print(f"anykv: loaded {a.keys} keys of {a.size} B in {took:.1f}s ({a.keys / took:,.0f} SET/s via redis-cli --pipe)")
        print(f"anykv: RSS {rss / 2**20:.0f} MiB after load ({base / 2**20:.0f} MiB empty): {(rss - base) / a.keys:.0f} B per key")
        du = subprocess.run(["du", "-sb", tmp + "/data"], capture_output=True, text=True).stdout.split()[0]
        print(f"anykv: data directory {int(du) / 2**20:.0f} MiB")
        p.send_signal(signal.SIGKILL)
        p.wait()
        t0 = time.time()
        p = subprocess.Popen(args)
        up = wait_ping(port)
        r = subprocess.run(["redis-cli", "-p", str(port), "get", "key:%010d" % (a.keys - 1)], capture_output=True, text=True)
        assert r.stdout.strip() == "v" * a.size, r.stdout
        print(f"anykv: restart after kill -9 with {a.keys} keys: {time.time() - t0:.2f}s to serve (PING after {up:.2f}s)")
        print(f"anykv: RSS {rss_bytes(p.pid) / 2**20:.0f} MiB right after restart")
        p.terminate()
        p.wait()
        if not a.no_redis:
            rport = free_port()
            rp = subprocess.Popen(["redis-server", "--port", str(rport), "--save", "", "--appendonly", "no",
                                   "--dir", tmp], stdout=subprocess.DEVNULL)
            wait_ping(rport)
            base = rss_bytes(rp.pid)
            load(rport, a.keys, a.size)
            rss = rss_bytes(rp.pid)
            print(f"redis: RSS {rss / 2**20:.0f} MiB after load ({base / 2**20:.0f} MiB empty): {(rss - base) / a.keys:.0f} B per key")
            rp.terminate()
            rp.wait()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
