"""Pottery (Redlock and its Redis-backed Python containers) against the real anykv binary, unchanged: two clients
contend for a Redlock, the second gets it once the first's expires and the first can then not release it; the
dict, list, set, counter, deque, Bloom filter, HyperLogLog, NextID, queue and cache behave as their Python
counterparts."""
import time
import warnings

import pytest
import redis
from pottery import (BloomFilter, HyperLogLog, NextID, RedisCounter, RedisDeque, RedisDict, RedisList, RedisSet,
                     RedisSimpleQueue, Redlock, ReleaseUnlockedLock, redis_cache)


def test_pottery(anykv):
    warnings.simplefilter("ignore")  # pottery warns of its own O(n) operations
    a = redis.Redis(host=anykv.host, port=anykv.resp_port)
    b = redis.Redis(host=anykv.host, port=anykv.resp_port)
    first = Redlock(key="res", masters={a}, auto_release_time=1)
    second = Redlock(key="res", masters={b}, auto_release_time=1)
    assert first.acquire(blocking=False)
    assert not second.acquire(blocking=False)
    assert first.locked() > 0
    started = time.time()
    assert second.acquire(timeout=3)
    assert 0.8 < time.time() - started < 2
    with pytest.raises(ReleaseUnlockedLock):
        first.release()
    second.extend()
    second.release()

    d = RedisDict(redis=a, key="d", x=1)
    d["y"] = [1, 2]
    assert dict(d) == {"x": 1, "y": [1, 2]}
    lst = RedisList([1, 2, 3], redis=a, key="l")
    lst.insert(1, 9)
    lst.append(4)
    del lst[0]
    assert list(lst) == [9, 2, 3, 4] and lst[1:3] == [2, 3]
    s = RedisSet({1, 2}, redis=a, key="s")
    s.add(3)
    assert sorted(s) == [1, 2, 3] and 2 in s
    assert RedisCounter("abracadabra", redis=a, key="c").most_common(2) == [("a", 5), ("b", 2)]
    dq = RedisDeque([1, 2, 3], redis=a, key="dq", maxlen=3)
    dq.appendleft(0)
    assert list(dq) == [0, 1, 2]
    bf = BloomFilter(num_elements=100, false_positives=0.01, redis=a, key="bf")
    bf.add("x")
    assert "x" in bf and "y" not in bf
    h = HyperLogLog(redis=a, key="h")
    h.update(["a", "b", "a"])
    assert len(h) == 2
    ids = NextID(key="ids", masters={a})
    assert (next(ids), next(ids)) == (1, 2)
    q = RedisSimpleQueue(redis=a, key="q")
    q.put(1)
    q.put(2)
    assert (q.get(), q.get(), q.qsize()) == (1, 2, 0)

    @redis_cache(redis=a, key="cache")
    def square(x):
        return x * x

    assert square(3) == square(3) == 9
    assert (square.cache_info().hits, square.cache_info().misses) == (1, 1)
