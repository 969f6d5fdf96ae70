"""Bull (v4), the Node.js job queue BullMQ grew from, against the real anykv binary, unchanged (issue 16: what
Redis users reach for). Bull's Lua scripts announce jobs with PUBLISH (its workers and `global:` events listen
on pub/sub channels) and score delayed jobs with the `bit` library; before either worked in scripts, adding a
job failed with "This Redis command is not allowed from script". scripts/test.sh installs bull with npm into
~/.cache/anykv/node; without it the test fails under CI and is skipped otherwise."""
import json

from conftest import run_node


SCRIPT = r"""
const Queue = require('bull');
const [host, port] = process.argv[1].split(':');
const sleep = ms => new Promise(r => setTimeout(r, ms));
(async () => {
  const out = {};
  const q = new Queue('acceptance', { redis: { host, port: Number(port) } });
  const globalDone = [];
  q.on('global:completed', id => globalDone.push(String(id)));
  await q.isReady();
  const plain = [];
  for (let i = 0; i < 10; i++) plain.push(await q.add({ a: i, b: 1 }));
  const addedDelayed = Date.now();
  const delayed = await q.add({ a: 10, b: 20 }, { delay: 1000 });
  const urgent = await q.add({ a: 100, b: 0 }, { priority: 1 });
  const fail = await q.add({ fail: true }, { attempts: 3, backoff: 50 });
  out.countsBefore = await q.getJobCounts();
  const runs = {};
  let delayedRanAfter = -1;
  q.process(async job => {
    runs[job.id] = (runs[job.id] || 0) + 1;
    if (job.data.fail) throw new Error('boom ' + job.attemptsMade);
    if (job.id === delayed.id) delayedRanAfter = Date.now() - addedDelayed;
    return job.data.a + job.data.b;
  });
  out.delayedResult = await delayed.finished();
  const deadline = Date.now() + 20000;
  for (;;) {
    const c = await q.getJobCounts();
    if (c.completed === 12 && c.failed === 1) break;
    if (Date.now() > deadline) throw new Error('jobs not finished: ' + JSON.stringify(c));
    await sleep(50);
  }
  await sleep(200); // the last global:completed message
  const jobs = await Promise.all([...plain, urgent, fail].map(j => q.getJob(j.id)));
  out.returnvalues = jobs.slice(0, 11).map(j => j.returnvalue);
  out.failed = { attemptsMade: jobs[11].attemptsMade, reason: jobs[11].failedReason, runs: runs[fail.id] };
  out.delayedOnTime = delayedRanAfter >= 1000 && delayedRanAfter < 5000;
  out.countsAfter = await q.getJobCounts();
  out.globalCompleted = globalDone.length;
  await q.close();
  console.log(JSON.stringify(out));
  process.exit(0);
})().catch(e => { console.error(e); process.exit(1); });
"""


def test_bull(anykv):
    stdout = run_node(SCRIPT, f"{anykv.host}:{anykv.resp_port}", ("bull",), 60)
    out = json.loads(stdout.strip().splitlines()[-1])
    assert out["countsBefore"] == {"waiting": 12, "active": 0, "completed": 0, "failed": 0, "delayed": 1,
                                   "paused": 0}
    assert out["delayedResult"] == 30
    assert out["returnvalues"] == [i + 1 for i in range(10)] + [100]
    # retried per attempts: three runs, then failed with the last run's error
    assert out["failed"] == {"attemptsMade": 3, "reason": "boom 2", "runs": 3}
    assert out["delayedOnTime"], out
    assert out["countsAfter"] == {"waiting": 0, "active": 0, "completed": 12, "failed": 0 + 1, "delayed": 0,
                                  "paused": 0}
    # every completion was announced on pub/sub, from Bull's scripts
    assert out["globalCompleted"] == 12, out
