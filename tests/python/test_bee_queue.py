"""Bee-Queue (Lua scripts over lists, sets and a delayed sorted set, with the `redis` v3 client, node_redis)
against the real anykv binary, unchanged: jobs are saved, singly and in a batch, a worker runs them and stores
their results, a delayed job runs after its delay, a failing one is retried per retries then fails, checkHealth
counts them and the `job succeeded` events arrive over pub/sub. scripts/test.sh installs bee-queue with npm into
~/.cache/anykv/node; without it the test fails under CI and is skipped otherwise."""
import json

from conftest import run_node

SCRIPT = r"""
const Queue = require('bee-queue');
const [host, port] = process.argv[1].split(':');
const sleep = ms => new Promise(r => setTimeout(r, ms));
(async () => {
  const redis = { host, port: Number(port) };
  const worker = new Queue('bq', { redis, activateDelayedJobs: true, removeOnSuccess: false });
  const producer = new Queue('bq', { redis, isWorker: false, getEvents: true });
  await Promise.all([worker.ready(), producer.ready()]);
  const out = {};
  let announced = 0;
  producer.on('job succeeded', () => announced++);
  const jobs = [];
  for (let i = 0; i < 5; i++) jobs.push(await producer.createJob({ a: i }).save());
  const saved = Date.now();
  const delayed = await producer.createJob({ a: 100 }).delayUntil(saved + 1000).save();
  const failing = await producer.createJob({ fail: true }).retries(2).backoff('fixed', 50).save();
  await producer.saveAll([producer.createJob({ a: 7 }), producer.createJob({ a: 8 })]);
  out.before = await producer.checkHealth();
  const runs = {};
  let delayedAfter = -1;
  worker.process(2, async job => {
    runs[job.id] = (runs[job.id] || 0) + 1;
    if (job.data.fail) throw new Error('boom');
    if (job.id === delayed.id) delayedAfter = Date.now() - saved;
    return job.data.a * 2;
  });
  const deadline = Date.now() + 15000;
  for (;;) {
    out.after = await producer.checkHealth();
    if (out.after.succeeded === 8 && out.after.failed === 1) break;
    if (Date.now() > deadline) throw new Error('jobs not finished: ' + JSON.stringify(out.after));
    await sleep(50);
  }
  await sleep(200); // the last event
  out.results = await Promise.all(jobs.map(async j => (await producer.getJob(j.id)).status));
  const failed = await producer.getJob(failing.id);
  out.failed = { status: failed.status, runs: runs[failing.id] };
  out.delayedOnTime = delayedAfter >= 1000 && delayedAfter < 5000;
  out.announced = announced;
  await worker.close();
  await producer.close();
  console.log(JSON.stringify(out));
  process.exit(0);
})().catch(e => { console.error(e); process.exit(1); });
"""


def test_bee_queue(anykv):
    out = json.loads(run_node(SCRIPT, f"{anykv.host}:{anykv.resp_port}", ("bee-queue",), 60).strip().splitlines()[-1])
    assert out["before"] == {"waiting": 8, "active": 0, "succeeded": 0, "failed": 0, "delayed": 1, "newestJob": 9}
    assert out["after"] == {"waiting": 0, "active": 0, "succeeded": 8, "failed": 1, "delayed": 0, "newestJob": 9}
    assert out["results"] == ["succeeded"] * 5
    assert out["failed"] == {"status": "failed", "runs": 3}  # the first run and retries(2)
    assert out["delayedOnTime"], out
    assert out["announced"] == 8
