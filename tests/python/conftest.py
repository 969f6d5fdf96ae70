"""Shared pytest fixtures: a real anykv server (the binary from $ANYKV_BIN) on free loopback ports."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PortTaken(RuntimeError):
    """The server could not listen: another process holds one of its ports."""


class Anykv:
    """One anykv process with RESP, memcached and HTTP listeners; kill() and start() keep ports and data."""

    host = "127.0.0.1"

    def __init__(self, binary, extra=()):
        self.binary = binary
        self.dir = tempfile.mkdtemp(prefix="anykv-py-")
        self.resp_port, self.memcache_port, self.http_port = free_port(), free_port(), free_port()
        self.extra = list(extra)
        self.proc = None
        self.log = open(os.path.join(self.dir, "server.log"), "ab")

    def args(self):
        return [self.binary, "serve", "--dir", os.path.join(self.dir, "data"),
                "--resp", f"{self.host}:{self.resp_port}",
                "--memcache", f"{self.host}:{self.memcache_port}",
                "--http", f"{self.host}:{self.http_port}", "--log-level", "warn"] + self.extra

    def start(self):
        """Start the server. A first start whose free port another process took meanwhile (between free_port and
        the server's bind) retries on new ports; a restart keeps its ports, as clients expect."""
        first = self.proc is None
        for attempt in range(3):
            try:
                return self._start()
            except PortTaken:
                if not first or attempt == 2:
                    raise
                self.resp_port, self.memcache_port, self.http_port = free_port(), free_port(), free_port()

    def _start(self):
        before = len(self.output())
        self.proc = subprocess.Popen(self.args(), stdout=self.log, stderr=self.log)
        deadline = time.time() + 20
        for port in (self.resp_port, self.memcache_port, self.http_port):
            while True:
                if self.proc.poll() is not None:
                    out = self.output()
                    if "address already in use" in out[before:]:
                        raise PortTaken(out[before:])
                    raise RuntimeError(f"anykv exited with {self.proc.returncode}: {out}")
                try:
                    socket.create_connection((self.host, port), timeout=0.2).close()
                    break
                except OSError:
                    if time.time() > deadline:
                        raise RuntimeError(f"anykv did not listen on {port}: {self.output()}")
                    time.sleep(0.02)
        return self

    def kill(self):
        """SIGKILL, as a crash would."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def output(self):
        self.log.flush()
        with open(os.path.join(self.dir, "server.log"), "rb") as f:
            return f.read().decode(errors="replace")

    def close(self):
        self.stop()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def anykv_binary():
    path = os.environ.get("ANYKV_BIN")
    if not path:
        raise RuntimeError("set ANYKV_BIN to the anykv binary (scripts/test.sh does)")
    return path


@pytest.fixture
def anykv():
    """A fresh anykv server (pebble engine, fsync always) for one test."""
    server = Anykv(anykv_binary()).start()
    yield server
    server.close()


NODE_PATH = os.path.expanduser("~/.cache/anykv/node/node_modules")


def run_node(script, arg, packages, timeout):
    """Runs a Node script with the npm packages scripts/test.sh installs (skipped without them unless CI is set,
    where their absence fails) and returns its standard output; a non-zero exit fails the test."""
    if shutil.which("node") is None or not all(os.path.isdir(os.path.join(NODE_PATH, p)) for p in packages):
        missing = "node or " + ", ".join(packages) + " missing (scripts/test.sh installs them with npm)"
        if os.environ.get("CI") == "true":
            pytest.fail(missing)
        pytest.skip(missing + " (CI unset: skipping)")
    r = subprocess.run(["node", "-e", script, arg], env=dict(os.environ, NODE_PATH=NODE_PATH),
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return r.stdout
