"""redis-py against the real anykv binary: the common client library works unchanged, RESP2 and RESP3."""
import pytest
import redis


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(anykv, request):
    c = redis.Redis(host=anykv.host, port=anykv.resp_port, protocol=request.param)
    yield c
    c.close()


def test_strings_and_counters(r):
    assert r.set("a", "1") is True
    assert r.get("a") == b"1"
    assert r.get("missing") is None
    assert r.incr("n") == 1
    assert r.incrby("n", 41) == 42
    assert r.incrbyfloat("f", 1.5) == 1.5
    assert r.set("a", "x", nx=True) is None
    assert r.set("a", "2", xx=True, get=True) == b"1"
    assert r.mget("a", "missing", "n") == [b"2", None, b"42"]
    assert r.append("a", "34") == 3
    assert r.getrange("a", 1, -1) == b"34"
    r.set("s", "str")
    with pytest.raises(redis.ResponseError, match="not an integer"):
        r.incr("s")


def test_binary_values(r):
    blob = bytes(range(256)) * 4
    r.set(b"\x00key\xff", blob)
    assert r.get(b"\x00key\xff") == blob


def test_expiry(r):
    r.set("t", "v", ex=100)
    assert 99 <= r.ttl("t") <= 100
    assert r.persist("t") is True
    assert r.ttl("t") == -1
    assert r.ttl("none") == -2
    r.set("p", "v", px=1500)
    assert 0 < r.pttl("p") <= 1500


def test_pipeline_and_transaction(r):
    with r.pipeline(transaction=False) as p:
        for i in range(100):
            p.set(f"k{i}", i)
        p.get("k99")
        out = p.execute()
    assert out[-1] == b"99"
    with r.pipeline() as p:  # MULTI/EXEC
        p.set("tx", 1).incr("tx").get("tx")
        assert p.execute() == [True, 2, b"2"]


def test_watch_compare_and_set(r, anykv):
    r.set("balance", 10)
    other = redis.Redis(host=anykv.host, port=anykv.resp_port)
    with r.pipeline() as p:
        p.watch("balance")
        value = int(p.get("balance"))
        other.set("balance", 99)  # a concurrent write between WATCH and EXEC
        p.multi()
        p.set("balance", value + 1)
        with pytest.raises(redis.WatchError):
            p.execute()
    assert r.get("balance") == b"99"
    other.close()


def test_scan_and_keys(r):
    for i in range(50):
        r.set(f"user:{i}", i)
    r.set("other", 1)
    assert sorted(r.scan_iter(match="user:*", count=7)) == sorted(f"user:{i}".encode() for i in range(50))
    assert len(r.keys("user:1*")) == 11
    assert r.dbsize() == 51
    assert r.exists("user:1", "user:2", "nope") == 2


def test_server_commands(r):
    assert r.ping() is True
    info = r.info()
    assert info["redis_version"].startswith("7.")
    assert r.config_get("databases") == {"databases": "16"}
    r.client_setname("py")
    assert r.client_getname() in ("py", b"py")  # redis-py decodes it under RESP2 only
    r.select(3)
    r.set("db3key", 1)
    r.select(0)
    assert r.get("db3key") is None
    assert r.hset("h", "f", "v") == 1
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.get("h")
    with pytest.raises(redis.ResponseError, match="unknown command"):
        r.execute_command("NOSUCHCMD", "s", "1-1")


def test_kill_minus_nine_keeps_acknowledged_collection_writes(anykv):
    """LPUSH, ZADD and HINCRBY acknowledged before a kill -9 are all there after the restart, lists in order."""
    r = redis.Redis(host=anykv.host, port=anykv.resp_port)
    for i in range(300):
        r.rpush("durable:list", f"e{i}")
        r.zadd("durable:zset", {f"m{i}": i})
        r.hincrby("durable:hash", f"f{i % 10}", 1)
    anykv.kill()
    anykv.start()
    r = redis.Redis(host=anykv.host, port=anykv.resp_port)
    assert r.lrange("durable:list", 0, -1) == [f"e{i}".encode() for i in range(300)]
    assert r.zrange("durable:zset", 0, -1, withscores=True) == [(f"m{i}".encode(), float(i)) for i in range(300)]
    assert r.hgetall("durable:hash") == {f"f{j}".encode(): b"30" for j in range(10)}


def test_kill_minus_nine_keeps_acknowledged_writes(anykv):
    r = redis.Redis(host=anykv.host, port=anykv.resp_port)
    for i in range(500):
        r.set(f"durable:{i}", f"v{i}")
    anykv.kill()
    anykv.start()
    r = redis.Redis(host=anykv.host, port=anykv.resp_port)
    assert r.mget([f"durable:{i}" for i in range(500)]) == [f"v{i}".encode() for i in range(500)]


def test_redis_py_lock(anykv):
    """redis-py's Lock (its Lua scripts) excludes a second owner, extends, releases and is taken again."""
    r = redis.Redis(host=anykv.host, port=anykv.resp_port)
    lock = r.lock("resource", timeout=5)
    assert lock.acquire(blocking=False)
    other = r.lock("resource", timeout=5)
    assert not other.acquire(blocking=False)
    assert lock.extend(5)
    assert 5000 < r.pttl("resource") <= 10000
    lock.release()
    assert other.acquire(blocking=False)
    lock.local.token = b"stale"  # a client whose lock expired and was taken: releasing must not free the other's
    with pytest.raises(redis.exceptions.LockNotOwnedError):
        lock.release()
    other.release()
