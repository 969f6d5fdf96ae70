"""Huey (RedisHuey and PriorityRedisHuey) against the real anykv binary, unchanged: tasks are enqueued, a consumer
runs them and stores their results, a scheduled task runs after its delay, a failing one is retried per retries,
priorities order the queue, and a task lock refuses a second holder."""
import time

import pytest
from huey import PriorityRedisHuey, RedisHuey
from huey.exceptions import TaskException, TaskLockedException


@pytest.mark.parametrize("kind", [RedisHuey, PriorityRedisHuey])
def test_huey(anykv, kind):
    huey = kind("anykv", host=anykv.host, port=anykv.resp_port, blocking=True, read_timeout=0.2)
    runs = {"flaky": 0}

    @huey.task()
    def add(a, b):
        return a + b

    @huey.task(retries=2, retry_delay=0)
    def flaky():
        runs["flaky"] += 1
        raise ValueError("boom")

    @huey.task()
    @huey.lock_task("only-one")
    def locked():
        return "ran"

    results = [add(i, 10) for i in range(5)]
    scheduled_at = time.time()
    delayed = add.schedule((1, 1), delay=1)
    failing = flaky()
    assert huey.pending_count() == 7  # the scheduled task too, until a consumer reads its eta
    if kind is PriorityRedisHuey:
        low, high = add.s(0, 1, priority=1), add.s(0, 2, priority=9)
        huey.enqueue(low)
        huey.enqueue(high)
        assert [t.id for t in huey.pending()[:2]] == [high.id, low.id]
        huey.flush()
        results = [add(i, 10) for i in range(5)]
        delayed = add.schedule((1, 1), delay=1)
        failing = flaky()
    consumer = huey.create_consumer(workers=2, worker_type="thread", periodic=False, check_worker_health=False)
    consumer.start()
    try:
        assert [r.get(blocking=True, timeout=10) for r in results] == [10, 11, 12, 13, 14]
        assert delayed.get(blocking=True, timeout=10) == 2
        assert 1.0 <= time.time() - scheduled_at < 5
        with pytest.raises(TaskException):
            failing.get(blocking=True, timeout=10)
        assert runs["flaky"] == 3  # the first run and retries=2
        with huey.lock_task("only-one"):
            held = locked()
            with pytest.raises(TaskException) as e:
                held.get(blocking=True, timeout=10)
            assert e.value.metadata["error"].startswith("TaskLockedException")
        assert locked().get(blocking=True, timeout=10) == "ran"
        with huey.lock_task("only-one"):
            with pytest.raises(TaskLockedException):
                with huey.lock_task("only-one"):
                    pass
        assert huey.pending_count() == 0 and huey.scheduled_count() == 0
    finally:
        consumer.stop(graceful=True)
