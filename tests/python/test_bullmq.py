"""BullMQ, the Node.js job queue, against the real anykv binary, unchanged (issue 16: what Redis users reach for).
BullMQ runs all its queue operations as Lua scripts (msgpacked arguments, job keys built inside the script, many
KEYS), blocks its worker in BZPOPMIN on a marker key and reads its events with XREAD BLOCK. scripts/test.sh
installs bullmq and ioredis with npm into ~/.cache/anykv/node; without them the test fails under CI and is
skipped otherwise."""
import json

from conftest import run_node


SCRIPT = r"""
const { Queue, Worker, QueueEvents } = require('bullmq');
const [host, port] = process.argv[1].split(':');
const connection = { host, port: Number(port) };
const sleep = ms => new Promise(r => setTimeout(r, ms));
(async () => {
  const out = {};
  const q = new Queue('acceptance', { connection });
  const add = await q.add('add', { a: 2, b: 3 });
  const fail = await q.add('fail', {}, { attempts: 3, backoff: { type: 'fixed', delay: 50 } });
  const addedDelayed = Date.now();
  const delayed = await q.add('add', { a: 10, b: 20 }, { delay: 1000 });
  out.countsBefore = await q.getJobCounts('waiting', 'delayed', 'active', 'completed', 'failed');
  const runs = {};
  let delayedRanAfter = -1, lastRan = 0;
  const worker = new Worker('acceptance', async job => {
    runs[job.id] = (runs[job.id] || 0) + 1;
    lastRan = Date.now();
    if (job.name === 'fail') throw new Error('boom ' + job.attemptsMade);
    if (job.id === delayed.id) delayedRanAfter = Date.now() - addedDelayed;
    return job.data.a + job.data.b;
  }, { connection });
  worker.on('error', e => console.error('worker error', e));
  const deadline = Date.now() + 20000;
  for (;;) {
    const c = await q.getJobCounts('completed', 'failed');
    if (c.completed === 2 && c.failed === 1) break;
    if (Date.now() > deadline) throw new Error('jobs not finished: ' + JSON.stringify(c));
    await sleep(50);
  }
  const [j1, j2, j3] = await Promise.all([add, fail, delayed].map(j => q.getJob(j.id)));
  out.states = await Promise.all([j1, j2, j3].map(j => j.getState()));
  out.returnvalues = [j1.returnvalue, j3.returnvalue];
  out.failed = { attemptsMade: j2.attemptsMade, reason: j2.failedReason, runs: runs[fail.id] };
  out.delayedOnTime = delayedRanAfter >= 1000 && delayedRanAfter < 5000;
  out.countsAfter = await q.getJobCounts('waiting', 'delayed', 'active', 'completed', 'failed');

  // An idle worker (blocked in BZPOPMIN on the queue's marker) takes a new job at once, not when its block times
  // out (5 s); QueueEvents (XREAD BLOCK on the events stream) reports the result.
  const events = new QueueEvents('acceptance', { connection });
  await events.waitUntilReady();
  await sleep(Math.max(0, lastRan + 500 - Date.now()));
  const t0 = Date.now();
  const late = await q.add('add', { a: 1, b: 1 });
  out.lateResult = await late.waitUntilFinished(events, 10000);
  out.idlePickupFast = Date.now() - t0 < 2000;
  await worker.close();
  await events.close();
  await q.close();
  console.log(JSON.stringify(out));
  process.exit(0);
})().catch(e => { console.error(e); process.exit(1); });
"""


def test_bullmq(anykv):
    stdout = run_node(SCRIPT, f"{anykv.host}:{anykv.resp_port}", ("bullmq", "ioredis"), 60)
    out = json.loads(stdout.strip().splitlines()[-1])
    assert out["countsBefore"] == {"waiting": 2, "delayed": 1, "active": 0, "completed": 0, "failed": 0}
    assert out["states"] == ["completed", "failed", "completed"]
    assert out["returnvalues"] == [5, 30]
    # retried per attempts: three runs, then failed with the last run's error
    assert out["failed"] == {"attemptsMade": 3, "reason": "boom 2", "runs": 3}
    assert out["delayedOnTime"], out
    assert out["countsAfter"] == {"waiting": 0, "delayed": 0, "active": 0, "completed": 2, "failed": 1}
    assert out["lateResult"] == 2
    assert out["idlePickupFast"], out
