"""python-redis-lock (a SET NX lock whose release signals waiters through a list, BLPOP) against the real anykv
binary, unchanged: two clients contend, the waiter gets the lock as soon as the holder releases it, a lock left to
expire passes to the next client and its old holder can no longer release it, auto-renewal keeps a lock past its
expiry, extend and reset_all work."""
import threading
import time

import pytest
import redis
import redis_lock


def test_redis_lock(anykv):
    a = redis.Redis(host=anykv.host, port=anykv.resp_port)
    b = redis.Redis(host=anykv.host, port=anykv.resp_port)
    first = redis_lock.Lock(a, "res", expire=5, id=b"first")
    second = redis_lock.Lock(b, "res", expire=5, id=b"second")
    assert first.acquire(blocking=False)
    assert not second.acquire(blocking=False)
    started = time.time()
    threading.Timer(0.3, first.release).start()
    assert second.acquire(timeout=3)
    assert 0.25 < time.time() - started < 2  # woken by the release, not by polling or expiry
    assert second.get_owner_id() == "second"
    second.release()

    held = redis_lock.Lock(a, "expiring", expire=1)
    held.acquire()
    started = time.time()
    assert redis_lock.Lock(b, "expiring", expire=1).acquire(timeout=1)
    assert 0.8 < time.time() - started < 1.5
    with pytest.raises(redis_lock.NotAcquired):
        held.release()

    renewed = redis_lock.Lock(a, "renewed", expire=1, auto_renewal=True)
    renewed.acquire()
    time.sleep(1.5)
    assert not redis_lock.Lock(b, "renewed").acquire(blocking=False)
    renewed.release()

    extended = redis_lock.Lock(a, "extended", expire=2)
    extended.acquire()
    extended.extend(expire=10)
    assert 9 <= a.ttl("lock:extended") <= 10
    redis_lock.reset_all(a)
    assert a.keys("lock:*") == []
