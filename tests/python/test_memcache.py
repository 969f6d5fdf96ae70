"""pymemcache against the real anykv binary: the usual Python memcached client works unchanged, and nothing is
lost when the server is killed. Uses the `anykv` fixture of conftest.py (pebble engine, fsync always)."""
import socket
import time

import pytest
import redis
from pymemcache.client.base import Client
from pymemcache.exceptions import MemcacheClientError


@pytest.fixture
def mc(anykv):
    c = Client((anykv.host, anykv.memcache_port), default_noreply=False, connect_timeout=5, timeout=10)
    yield c
    c.close()


def raw(anykv, data: bytes, until: bytes) -> bytes:
    """Sends data on a fresh connection and reads until the reply ends with `until`."""
    with socket.create_connection((anykv.host, anykv.memcache_port), timeout=10) as s:
        s.sendall(data)
        out = b""
        while not out.endswith(until):
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
        return out


def test_set_get_add_replace(mc):
    assert mc.set("a", b"1") is True
    assert mc.get("a") == b"1"
    assert mc.get("missing") is None
    assert mc.add("a", b"x") is False
    assert mc.add("b", b"2") is True
    assert mc.replace("a", b"one") is True
    assert mc.replace("missing", b"x") is False
    assert mc.get_many(["a", "b", "missing"]) == {"a": b"one", "b": b"2"}


def test_append_prepend(mc):
    mc.set("s", b"mid")
    assert mc.append("s", b">") is True
    assert mc.prepend("s", b"<") is True
    assert mc.get("s") == b"<mid>"
    assert mc.append("missing", b"x") is False


def test_gets_cas(mc):
    mc.set("c", b"v1")
    value, cas = mc.gets("c")
    assert value == b"v1" and int(cas) > 0
    assert mc.cas("c", b"v2", cas) is True
    assert mc.cas("c", b"v3", cas) is False  # EXISTS: someone wrote since gets
    assert mc.get("c") == b"v2"
    assert mc.cas("missing", b"x", cas) is None  # NOT_FOUND


def test_incr_decr(mc):
    mc.set("n", b"10")
    assert mc.incr("n", 5) == 15
    assert mc.decr("n", 100) == 0  # decr floors at zero
    assert mc.incr("n", 2**64 - 1) == 2**64 - 1
    assert mc.incr("n", 1) == 0  # incr wraps at 64 bits
    assert mc.incr("missing", 1) is None
    mc.set("text", b"abc")
    with pytest.raises(MemcacheClientError, match="non-numeric"):
        mc.incr("text", 1)


def test_delete_touch_expiry(mc):
    mc.set("d", b"x")
    assert mc.delete("d") is True
    assert mc.delete("d") is False
    mc.set("t", b"x", expire=1)
    mc.set("keep", b"x", expire=1)
    assert mc.touch("keep", 100) is True
    assert mc.touch("missing", 100) is False
    time.sleep(2.2)
    assert mc.get("t") is None
    assert mc.get("keep") == b"x"


def test_binary_values_and_many(mc):
    blob = bytes(range(256)) * 1000 + b"\r\nEND\r\n"
    mc.set("blob", blob)
    assert mc.get("blob") == blob
    data = {f"k{i}": f"v{i}".encode() for i in range(200)}
    assert mc.set_many(data, noreply=True) == []
    assert mc.get_many(list(data)) == data


def test_flush_all(mc):
    mc.set("f1", b"x")
    mc.set("f2", b"y")
    assert mc.flush_all() is True
    assert mc.get_many(["f1", "f2"]) == {}


def test_stats_and_version(mc):
    mc.get("x")
    stats = mc.stats()
    assert stats[b"curr_connections"] >= 1
    assert stats[b"cmd_get"] >= 1
    assert mc.version()


def test_meta_commands(anykv):
    out = raw(anykv, b"ms mk 3 T0 F9 c\r\nabc\r\nmg mk v f t s\r\nma cnt N0 J10 v\r\nmg nope v q\r\nmn\r\n", b"MN\r\n")
    lines = out.split(b"\r\n")
    assert lines[0].startswith(b"HD c")
    assert lines[1:3] == [b"VA 3 f9 t-1 s3", b"abc"]
    assert lines[3:5] == [b"VA 2", b"10"]
    assert lines[5] == b"MN"


def test_same_item_over_resp(anykv, mc):
    mc.set("shared", b"from memcached", expire=100)
    r = redis.Redis(host=anykv.host, port=anykv.resp_port)
    assert r.get("shared") == b"from memcached"
    assert 99 <= r.ttl("shared") <= 100
    r.set("shared", "from redis")
    assert mc.get("shared") == b"from redis"
    r.close()


def test_kill9_keeps_items_with_flags(anykv, mc):
    mc.set("durable", b"value", flags=1234)
    mc.set("counter", b"41")
    assert mc.incr("counter", 1) == 42
    mc.close()
    anykv.kill()
    anykv.start()
    out = raw(anykv, b"get durable counter\r\n", b"END\r\n")
    assert out == b"VALUE durable 1234 5\r\nvalue\r\nVALUE counter 0 2\r\n42\r\nEND\r\n"
