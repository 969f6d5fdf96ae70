"""RQ enqueues on anykv and its worker runs the jobs and stores their results (issue 16)."""
import os
import sys

from redis import Redis
from rq import Queue, SimpleWorker

sys.path.insert(0, os.path.dirname(__file__))
import rqtasks  # noqa: E402


def test_rq_worker_runs_jobs(anykv):
    r = Redis(host=anykv.host, port=anykv.resp_port)
    q = Queue(connection=r)
    jobs = [q.enqueue(rqtasks.add, i, 10) for i in range(3)]
    assert q.count == 3
    SimpleWorker([q], connection=r).work(burst=True)
    for i, job in enumerate(jobs):
        job.refresh()
        assert job.get_status() == "finished"
        assert job.return_value() == i + 10
    assert q.count == 0
