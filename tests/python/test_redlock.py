"""redlock (node-redlock 4, Redlock over ioredis: SET NX PX and Lua scripts to release and extend) against the real
anykv binary, unchanged: a second client is refused a held lock, gets it after the first's expiry, the first can
then not release it, extend lengthens the holder's lock and unlock frees it. scripts/test.sh installs it with npm
into ~/.cache/anykv/node; without it the test fails under CI and is skipped otherwise."""
import json

from conftest import run_node

SCRIPT = r"""
const Redlock = require('redlock');
const Redis = require('ioredis');
const [host, port] = process.argv[1].split(':');
(async () => {
  const a = new Redis({ host, port: Number(port) }), b = new Redis({ host, port: Number(port) });
  const out = {};
  const first = await new Redlock([a], { retryCount: 0 }).lock('res', 500);
  out.refused = await new Redlock([b], { retryCount: 0 }).lock('res', 1000).then(() => 'got it', e => e.name);
  const start = Date.now();
  const second = await new Redlock([b], { retryCount: 20, retryDelay: 100, retryJitter: 0 }).lock('res', 1000);
  out.waited = Date.now() - start;
  out.staleUnlock = await first.unlock().then(() => 'unlocked', e => e.name);
  const extended = await second.extend(5000);
  out.pttl = await a.pttl('res');
  await extended.unlock();
  out.exists = await a.exists('res');
  a.disconnect(); b.disconnect();
  console.log(JSON.stringify(out));
})().catch(e => { console.error(e); process.exit(1); });
"""


def test_redlock(anykv):
    out = json.loads(run_node(SCRIPT, f"{anykv.host}:{anykv.resp_port}", ("redlock", "ioredis"),
                              60).strip().splitlines()[-1])
    assert out["refused"] == "LockError"
    assert 300 <= out["waited"] < 2000, out  # after the first lock's 500 ms expiry
    assert out["staleUnlock"] == "LockError"
    assert 4000 < out["pttl"] <= 5000
    assert out["exists"] == 0
