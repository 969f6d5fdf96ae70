"""python-binary-memcached (bmemcached) against the real anykv binary: memcached's binary protocol, quiet
multi-key commands and CAS included, and SASL PLAIN when a password is set."""
import pytest
import redis
import bmemcached
from bmemcached.exceptions import MemcachedException

from conftest import Anykv, anykv_binary


def client(server, **kw):
    return bmemcached.Client((f"{server.host}:{server.memcache_port}",), socket_timeout=10, **kw)


def test_commands(anykv):
    c = client(anykv)
    assert c.set("a", "1") is True
    assert c.get("a") == "1"
    assert c.get("missing") is None
    assert c.add("a", "x") is False
    assert c.add("b", "2") is True
    assert c.replace("a", "one") is True
    assert c.replace("missing", "x") is False
    assert c.delete("b") is True
    assert c.get("b") is None
    assert c.incr("n", 5) == 0  # bmemcached creates a missing counter at 0, as against memcached
    assert c.incr("n", 5) == 5
    c.set("cnt", 10)
    assert c.incr("cnt", 5) == 15
    assert c.decr("cnt", 100) == 0
    value, cas = c.gets("a")
    assert value == "one" and cas
    assert c.cas("a", "two", cas) is True
    assert c.cas("a", "three", cas) is False  # written since gets
    assert c.get("a") == "two"
    c.disconnect_all()


def test_multi_and_flush(anykv):
    c = client(anykv)
    assert c.set_multi({"m1": "x", "m2": "y", "m3": "z"}) == []  # quiet sets, then a noop: no key failed
    assert c.get_multi(["m1", "m2", "missing", "m3"]) == {"m1": "x", "m2": "y", "m3": "z"}  # getkq + noop
    assert c.delete_multi(["m1", "m2"]) is True
    assert c.delete_multi(["m1", "m3"]) is False  # m1 is gone: its quiet delete answers "not found"
    assert c.get_multi(["m1", "m2", "m3"]) == {}
    stats = c.stats()
    (server_stats,) = stats.values()
    assert server_stats["version"].startswith(b"1.6.18-anykv-")
    c.set("f", "x")
    assert c.flush_all() is True
    assert c.get("f") is None
    c.disconnect_all()


def test_one_keyspace(anykv):
    """A value set over the binary protocol is the one RESP sees."""
    c = client(anykv)
    c.set("shared", "from binary")
    r = redis.Redis(host=anykv.host, port=anykv.resp_port)
    assert r.get("shared") == b"from binary"
    r.set("shared", "from redis")
    assert c.get("shared") == "from redis"
    c.disconnect_all()


def test_sasl():
    server = Anykv(anykv_binary(), extra=("--requirepass", "s3cret")).start()
    try:
        good = client(server, username="alice", password="s3cret")
        assert good.set("k", "v") is True
        assert good.get("k") == "v"
        good.disconnect_all()
        bad = client(server, username="alice", password="wrong")
        with pytest.raises(MemcachedException):
            bad.set("k", "x")
        bad.disconnect_all()
        anonymous = client(server)
        with pytest.raises(MemcachedException):
            anonymous.get("k")
        anonymous.disconnect_all()
    finally:
        server.close()
