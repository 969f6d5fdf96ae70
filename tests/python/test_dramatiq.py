"""Dramatiq (its Redis broker, whose enqueue, fetch, ack and requeue are one Lua script, the result backend and
the rate limiters) against the real anykv binary, unchanged: messages are sent, a worker runs them, results come
back, a delayed message runs after its delay, a failing one is retried per max_retries then dead-lettered, groups
and pipelines complete, and the mutex and window limiters limit."""
import time

import dramatiq
from dramatiq import Worker, group, pipeline
from dramatiq.brokers.redis import RedisBroker
from dramatiq.rate_limits import ConcurrentRateLimiter, WindowRateLimiter
from dramatiq.rate_limits.backends import RedisBackend as RateLimitBackend
from dramatiq.results import ResultFailure, Results
from dramatiq.results.backends import RedisBackend


def test_dramatiq(anykv):
    broker = RedisBroker(host=anykv.host, port=anykv.resp_port)
    backend = RedisBackend(client=broker.client)
    broker.add_middleware(Results(backend=backend))
    dramatiq.set_broker(broker)
    runs = {"flaky": 0}

    @dramatiq.actor(store_results=True)
    def add(x, y=0):
        return x + y

    @dramatiq.actor(store_results=True, max_retries=2, min_backoff=10, max_backoff=50)
    def flaky():
        runs["flaky"] += 1
        raise ValueError("boom %d" % runs["flaky"])

    plain = [add.send(i, 10) for i in range(5)]
    sent = time.time()
    delayed = add.send_with_options(args=(1, 1), delay=1000)
    failing = flaky.send()
    worker = Worker(broker, worker_timeout=100, worker_threads=2)
    worker.start()
    try:
        assert [backend.get_result(m, block=True, timeout=10000) for m in plain] == [10, 11, 12, 13, 14]
        assert backend.get_result(delayed, block=True, timeout=10000) == 2
        assert 1.0 <= time.time() - sent < 5
        try:
            backend.get_result(failing, block=True, timeout=10000)
            raise AssertionError("the failing actor's result came back")
        except ResultFailure as e:
            assert (e.orig_exc_type, e.orig_exc_msg) == ("ValueError", "boom 3")
        assert runs["flaky"] == 3  # the first run and max_retries=2
        assert broker.client.zcard("dramatiq:default.XQ") == 1  # dead-lettered
        g = group([add.message(i, 1) for i in range(4)]).run()
        assert list(g.get_results(block=True, timeout=10000)) == [1, 2, 3, 4]
        p = pipeline([add.message(1, 2), add.message(10), add.message(100)]).run()
        assert p.get_result(block=True, timeout=10000) == 113
    finally:
        worker.stop()

    limits = RateLimitBackend(client=broker.client)
    mutex = ConcurrentRateLimiter(limits, "mutex", limit=1, ttl=5000)
    with mutex.acquire(raise_on_failure=False) as outer:
        with mutex.acquire(raise_on_failure=False) as inner:
            assert (outer, inner) == (True, False)
    with mutex.acquire(raise_on_failure=False) as again:
        assert again
    window = WindowRateLimiter(limits, "window", limit=3, window=5)
    got = []
    for _ in range(5):
        with window.acquire(raise_on_failure=False) as ok:
            got.append(ok)
    assert got == [True, True, True, False, False]
    broker.close()
