"""rate-limiter-flexible (RateLimiterRedis over ioredis: a Lua script or SET + INCR + PTTL in one MULTI) against the
real anykv binary, unchanged: points are consumed until the limit, the rest refused with the time to wait, a new
window allows again; penalty, reward, block, delete, BurstyRateLimiter and RateLimiterQueue work. scripts/test.sh
installs it with npm into ~/.cache/anykv/node; without it the test fails under CI and is skipped otherwise."""
import json

from conftest import run_node

SCRIPT = r"""
const { RateLimiterRedis, BurstyRateLimiter, RateLimiterQueue } = require('rate-limiter-flexible');
const Redis = require('ioredis');
const [host, port] = process.argv[1].split(':');
const sleep = ms => new Promise(r => setTimeout(r, ms));
(async () => {
  const client = new Redis({ host, port: Number(port), enableOfflineQueue: false });
  await new Promise(r => client.once('ready', r));
  const out = {};
  const limiter = opts => new RateLimiterRedis({ storeClient: client, ...opts });
  const rl = limiter({ keyPrefix: 'rl', points: 3, duration: 1 });
  out.consume = [];
  for (let i = 0; i < 5; i++) {
    let r, ok = true;
    try { r = await rl.consume('u'); } catch (e) { r = e; ok = false; }
    out.consume.push([ok, r.remainingPoints, r.consumedPoints, r.msBeforeNext > 0 && r.msBeforeNext <= 1000]);
  }
  out.get = (await rl.get('u')).consumedPoints;
  await sleep(1100);
  out.nextWindow = (await rl.consume('u')).remainingPoints;
  out.penalty = (await rl.penalty('u', 1)).consumedPoints;
  out.reward = (await rl.reward('u', 1)).consumedPoints;
  await rl.block('b', 2);
  out.blocked = (await rl.get('b')).consumedPoints;
  out.deleted = await rl.delete('u');
  out.gone = await client.exists('rl:u');
  const bursty = new BurstyRateLimiter(limiter({ keyPrefix: 'b1', points: 1, duration: 1 }),
    limiter({ keyPrefix: 'b2', points: 2, duration: 5 }));
  out.bursty = [];
  for (let i = 0; i < 4; i++) out.bursty.push(await bursty.consume('k').then(() => true, () => false));
  const queue = new RateLimiterQueue(limiter({ keyPrefix: 'q', points: 2, duration: 1 }), { maxQueueSize: 5 });
  const start = Date.now();
  for (let i = 0; i < 4; i++) await queue.removeTokens(1);
  out.queueWaited = Date.now() - start >= 500;
  client.disconnect();
  console.log(JSON.stringify(out));
})().catch(e => { console.error(e); process.exit(1); });
"""


def test_rate_limiter_flexible(anykv):
    out = json.loads(run_node(SCRIPT, f"{anykv.host}:{anykv.resp_port}", ("rate-limiter-flexible", "ioredis"),
                              60).strip().splitlines()[-1])
    assert out["consume"] == [[True, 2, 1, True], [True, 1, 2, True], [True, 0, 3, True], [False, 0, 4, True],
                              [False, 0, 5, True]]
    assert out["get"] == 5 and out["nextWindow"] == 2
    assert (out["penalty"], out["reward"], out["blocked"]) == (2, 1, 4)
    assert out["deleted"] is True and out["gone"] == 0
    assert out["bursty"] == [True, True, True, False]
    assert out["queueWaited"]
