"""Celery 5 with anykv as broker and result backend: a worker runs tasks and returns their results (issue 16)."""
import os
import subprocess
import sys

import pytest


@pytest.fixture
def worker(anykv):
    env = dict(os.environ, ANYKV_CELERY_URL=f"redis://{anykv.host}:{anykv.resp_port}",
               PYTHONPATH=os.path.dirname(__file__))
    os.environ["ANYKV_CELERY_URL"] = env["ANYKV_CELERY_URL"]
    proc = subprocess.Popen([sys.executable, "-m", "celery", "-A", "celeryapp", "worker", "--pool=solo",
                             "--loglevel=warning"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    yield proc
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_celery_worker_runs_tasks(worker):
    sys.path.insert(0, os.path.dirname(__file__))
    import celeryapp
    results = [celeryapp.add.delay(i, i) for i in range(5)]
    try:
        assert [r.get(timeout=60) for r in results] == [0, 2, 4, 6, 8]
    except Exception:
        worker.terminate()
        out, _ = worker.communicate(timeout=30)
        pytest.fail(f"tasks did not complete; worker output:\n{out.decode(errors='replace')[-4000:]}")
