"""limits (the rate limiting library behind Flask-Limiter and SlowAPI; Lua scripts over counters and lists)
against the real anykv binary, unchanged: the fixed window, moving window and sliding window counter strategies
allow as many hits as the limit, refuse the rest, report the window's remaining hits and allow again in the next
window."""
import time

import pytest
from limits import parse, storage, strategies


@pytest.mark.parametrize("strategy", [strategies.FixedWindowRateLimiter, strategies.MovingWindowRateLimiter,
                                      strategies.SlidingWindowCounterRateLimiter])
def test_limits(anykv, strategy):
    store = storage.RedisStorage(f"redis://{anykv.host}:{anykv.resp_port}")
    assert store.check()
    limiter = strategy(store)
    limit = parse("5/second")
    assert [limiter.hit(limit, "user") for _ in range(7)] == [True] * 5 + [False] * 2
    assert limiter.get_window_stats(limit, "user").remaining == 0
    assert not limiter.test(limit, "user")
    assert limiter.hit(limit, "other")  # another key has its own window
    time.sleep(1.1)
    assert limiter.hit(limit, "user")
    if strategy is not strategies.SlidingWindowCounterRateLimiter:  # it still weighs the previous window
        assert limiter.get_window_stats(limit, "user").remaining == 4
    limiter.clear(limit, "user")
    assert limiter.get_window_stats(limit, "user").remaining == 5
