"""walrus (Redis containers, full-text search, rate limiting, locks and a cache, several of them Lua) against the
real anykv binary, unchanged. Its ZSet iterates with ZSCAN and its search ranks documents by that order: before
ZSCAN answered a small sorted set in score order, as Redis does, 7 of walrus's own tests failed on anykv."""
import threading
import time

from walrus import Database


def test_walrus(anykv):
    db = Database(host=anykv.host, port=anykv.resp_port)
    zs = db.ZSet("z")
    zs.add({"i9": 9, "i2": -2, "i0": 0, "a": 5})
    assert list(zs) == [(b"i2", -2.0), (b"i0", 0.0), (b"a", 5.0), (b"i9", 9.0)]
    assert list(zs.search("i*")) == [(b"i2", -2.0), (b"i0", 0.0), (b"i9", 9.0)]

    index = db.Index("docs")
    index.add("1", "the cat sat on the mat")
    index.add("2", "cat cat cat everywhere")
    index.add("3", "a dog and a cat")
    index.add("4", "no animals here")
    assert [d["content"] for d in index.search("cat")][0] == "cat cat cat everywhere"
    assert {d["content"] for d in index.search("cat AND dog")} == {"a dog and a cat"}

    limit = db.rate_limit("api", limit=3, per=1)
    assert [limit.limit("user") for _ in range(5)] == [False, False, False, True, True]
    time.sleep(1.1)
    assert not limit.limit("user")

    lock = db.lock("res", ttl=5000)
    other = Database(host=anykv.host, port=anykv.resp_port).lock("res", ttl=5000)
    assert lock.acquire(block=False)
    assert not other.acquire(block=False)
    threading.Timer(0.2, lock.release).start()
    started = time.time()
    assert other.acquire(block=True)
    assert time.time() - started < 2  # woken by the release (an RPUSH to the BLPOP it waits in), not the ttl
    assert other.release()
    assert not lock.release()  # not held any more

    cache = db.cache()
    calls = []

    @cache.cached(timeout=10)
    def square(x):
        calls.append(x)
        return x * x

    assert square(4) == square(4) == 16 and calls == [4]

    hll, counter = db.HyperLogLog("h"), db.counter("n")
    hll.add("a", "b", "a")
    counter.incr(5)
    assert len(hll) == 2 and counter.value() == 5
