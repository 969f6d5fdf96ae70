"""memjs, the Node.js memcached client that speaks only the binary protocol, against the real anykv binary
(issue 15: a binary-only client must work, not hang until its timeout). scripts/test.sh installs memjs with npm
into ~/.cache/anykv/node; without it the test fails under CI and is skipped otherwise."""
from conftest import run_node


SCRIPT = r"""
const memjs = require('memjs');
const c = memjs.Client.create(process.argv[1], {retries: 0, timeout: 5, logger: {log() {}}});
(async () => {
  const out = [];
  await c.set('js:a', 'one', {expires: 0});
  out.push((await c.get('js:a')).value.toString());
  out.push(String((await c.get('js:missing')).value));
  out.push(String(await c.add('js:a', 'x')));
  out.push(String(await c.add('js:b', '2')));
  out.push(String((await c.increment('js:n', 5, {initial: 10})).value));
  out.push(String((await c.increment('js:n', 5)).value));
  out.push(String(await c.delete('js:b')));
  out.push(String((await c.get('js:b')).value));
  await c.set('js:big', 'x'.repeat(100000));
  out.push(String((await c.get('js:big')).value.length));
  console.log(out.join(','));
  c.close();
})().catch(e => { console.error(e); process.exit(1); });
"""


def test_memjs(anykv):
    stdout = run_node(SCRIPT, f"{anykv.host}:{anykv.memcache_port}", ("memjs",), 30)
    # set/get, a miss, add of an existing and a new key, incr with an initial value then +5, delete, a 100 kB value
    assert stdout.strip() == "one,null,false,true,10,15,true,null,100000"
    # and the same data answers the Redis protocol
    import redis
    rc = redis.Redis(host=anykv.host, port=anykv.resp_port)
    assert rc.get("js:a") == b"one"
