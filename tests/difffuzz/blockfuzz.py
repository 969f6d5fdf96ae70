#!/usr/bin/env python3
"""Multi-client differential fuzzer of the blocking commands: anykv against redis-server 7, in lockstep.

Each seed opens N clients (some RESP3) on each server and runs the same random script of steps on both: a client
sends a blocking command (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP, XREAD BLOCK,
XREADGROUP BLOCK) or a write (pushes of several elements, ZADD with ties, XADD, LMOVE, pushes inside MULTI/EXEC and
in a Lua script, SET/ZADD/XADD of another type, DEL, RENAME, COPY, expiries, SWAPDB, FLUSHALL), a control connection
sends CLIENT UNBLOCK (TIMEOUT/ERROR) or CLIENT KILL (alone, or with a write pipelined right behind it, which must
not serve the killed client), a blocked client leaves, a client sends a blocking command
inside MULTI or with a short timeout (0.05-0.2 s; the script then waits for its reply, so nothing races the
clock). After each step the runner waits until the server has settled: every client with a command outstanding has
either answered or shows the `b` flag in CLIENT LIST, for a few polls in a row (anykv also until the same clients
as redis-server have answered, within 2 s). redis-server runs each step first. The replies each client got during
the step are compared (null, null array and RESP3's null told apart), and at the end of a seed, after CLIENT
UNBLOCK of whoever still waits, the key space (the difffuzz dump, databases 0 and 1). Clients are matched by
index; the order in which different clients are answered is not compared (only what each got).

  python3 tests/difffuzz/blockfuzz.py --anykv bin/anykv --seeds 0:200
  python3 tests/difffuzz/blockfuzz.py --anykv bin/anykv --seeds 17 --verbose      # replay one seed

scripts/test.sh runs seeds 0:10 (about 20 s; a seed takes about 2 s, most of it the settling polls). Tolerated
unless --strict: the documented Redis 7.2 answers of a blocked XREADGROUP whose stream went (tolerated() below).
Written on 2026-12-01 by a helper; it found XREADGROUP readers served in no order, clients blocked on several keys
served from the first key listed rather than the key filled first, a woken XREAD answering every stream, and a
BLMOVE whose source became a hash answering WRONGTYPE (docs/resp.md, fuzzing paragraph; fixed then).

Exit status 1 if any seed failed; failures print as "FAIL seed=S step=I" with the steps so far.
"""
import argparse, os, random, select, shutil, signal, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from respserver import AnyKV, Conn, Err, ErrReply, Push, Redis
import difffuzz

LISTS = ['l1', 'l2', 'l3']
ZSETS = ['z1', 'z2']
STREAMS = ['s1', 's2']
KEYS = LISTS + ZSETS + STREAMS + ['x']
ELEMS = ['a', 'b', 'c', 'd', 'e', 'f']


class RConn(Conn):
    """A Conn whose replies keep null ($-1), null array (*-1) and RESP3 null (_) apart."""
    def read(self):
        l = self._line()
        t, r = l[:1], l[1:]
        if t == b'$' and int(r) < 0: return '<nil>'
        if t == b'*' and int(r) < 0: return '<nilarray>'
        if t == b'_': return '<null>'
        if t == b'*':
            return [self.read() for _ in range(int(r))]
        if t == b'%':
            return ('map', [(self.read(), self.read()) for _ in range(int(r))])
        if t == b'>':
            return Push([self.read() for _ in range(int(r))])
        self.buf = l + b'\r\n' + self.buf
        return Conn.read(self)

    def ready(self):
        if self.buf:
            return True
        r, _, _ = select.select([self.s], [], [], 0)
        return bool(r)


def norm(rep):
    """Scores print with up to 17 digits in redis-server 7.0 and shortest in anykv: compared as floats."""
    def f(v):
        if isinstance(v, tuple) and v and v[0] == 'double':
            return ('f', repr(float(v[1])))
        return v
    return difffuzz.deep(rep, f)


def tolerated(a, r):
    """Documented deviations (docs/resp.md, streams row): a blocked XREADGROUP whose stream was deleted or now holds
    another type answers as Redis 7.2 (NOGROUP ..., WRONGTYPE ...) where redis-server 7.0 answers `UNBLOCKED the
    stream key no longer exists`. a and r are one client's (command, reply) lists, anykv's and redis-server's."""
    if len(a) != len(r):
        return False
    for (ca, ra), (cr, rr) in zip(a, r):
        if ca != cr:
            return False
        if ra == rr:
            continue
        if not (STRICT is False and isinstance(ca, list) and ca[0] == 'XREADGROUP' and isinstance(ra, ErrReply)
                and isinstance(rr, ErrReply) and rr.s == 'UNBLOCKED the stream key no longer exists'
                and ra.s.split(' ')[0] in ('NOGROUP', 'WRONGTYPE')):
            return False
    return True


STRICT = False


class Side:
    """One server: its control connection and the clients, with what each waits for."""
    def __init__(self, name, port):
        self.name, self.port = name, port
        self.ctl = RConn(port)
        self.clients, self.ids, self.pending, self.got, self.resp3 = [], [], [], [], []

    def open(self, i, resp3):
        c = RConn(self.port)
        if resp3:
            c.cmd('HELLO', '3')
        cid = c.cmd('CLIENT', 'ID')
        if i == len(self.clients):
            self.clients.append(c); self.ids.append(cid); self.pending.append([]); self.got.append([])
            self.resp3.append(resp3)
        else:
            self.clients[i], self.ids[i], self.pending[i], self.resp3[i] = c, cid, [], resp3

    def close(self):
        for c in self.clients + [self.ctl]:
            c.close()

    def send(self, i, cmds):
        self.clients[i].s.sendall(b''.join(encode(c) for c in cmds))
        self.pending[i].extend(cmds)

    def drain(self):
        """Reads every reply that is there; True if any."""
        any_ = False
        for i, c in enumerate(self.clients):
            while self.pending[i] and c.ready():
                cmd = self.pending[i].pop(0)
                try:
                    rep = c.read()
                except (Err, OSError) as e:
                    rep = 'EXC<%s>' % e
                self.got[i].append((cmd, norm(rep)))
                any_ = True
        return any_

    def blocked(self):
        out = set()
        for line in self.ctl.cmd('CLIENT', 'LIST').split('\n'):
            f = dict(x.split('=', 1) for x in line.split(' ') if '=' in x)
            if 'b' in f.get('flags', ''):
                out.add(int(f['id']))
        return out

    def settle(self, expect=None, sync=None, limit=5.0):
        """Waits until every client with a command outstanding answered or is blocked, over 3 polls in a row;
        expect: the counts of replies per client to wait for (redis-server's); sync: a client whose reply must
        come. Returns False at the time limit."""
        stable, end = 0, time.time() + limit
        while True:
            got = self.drain()
            pend = [i for i in range(len(self.clients)) if self.pending[i]]
            ok = not (sync is not None and self.pending[sync])
            if expect is not None:
                ok = ok and all(len(self.got[i]) >= n for i, n in enumerate(expect))
            if ok and pend:
                bl = self.blocked()
                ok = all(self.ids[i] in bl for i in pend) and not self.drain()
            if ok and not got:
                stable += 1
                if stable >= 3:
                    return True
            else:
                stable = 0
            if time.time() > end:
                return False
            time.sleep(0.004)


def encode(args):
    out = [b'*%d\r\n' % len(args)]
    for a in args:
        a = str(a).encode()
        out.append(b'$%d\r\n%s\r\n' % (len(a), a))
    return b''.join(out)


class Gen:
    """The random script of one seed. A step is (kind, client, commands, extra)."""
    def __init__(self, rnd, n):
        self.r, self.n = rnd, n
        self.xid = {s: 0 for s in STREAMS}

    def elems(self):
        return [self.r.choice(ELEMS) + str(self.r.randrange(100)) for _ in range(self.r.choice([1, 1, 2, 3, 3]))]

    def keys(self, pool):
        k = self.r.sample(pool, self.r.choice([1, 1, 2, len(pool)]))
        return k

    def blocking(self, timeout='0'):
        r = self.r
        kind = r.choice(['blpop', 'brpop', 'blpop', 'blmove', 'brpoplpush', 'blmpop', 'bzpopmin', 'bzpopmax',
                         'bzmpop', 'xread', 'xreadgroup', 'xreadgroup'])
        if kind in ('blpop', 'brpop'):
            return [kind.upper()] + self.keys(LISTS) + [timeout]
        if kind == 'blmove':
            return ['BLMOVE', r.choice(LISTS), r.choice(LISTS), r.choice(['LEFT', 'RIGHT']), r.choice(['LEFT', 'RIGHT']), timeout]
        if kind == 'brpoplpush':
            return ['BRPOPLPUSH', r.choice(LISTS), r.choice(LISTS), timeout]
        if kind == 'blmpop':
            k = self.keys(LISTS)
            c = ['BLMPOP', timeout, len(k)] + k + [r.choice(['LEFT', 'RIGHT'])]
            return c + (['COUNT', r.choice([1, 2, 5])] if r.random() < 0.6 else [])
        if kind in ('bzpopmin', 'bzpopmax'):
            return [kind.upper()] + self.keys(ZSETS) + [timeout]
        if kind == 'bzmpop':
            k = self.keys(ZSETS)
            c = ['BZMPOP', timeout, len(k)] + k + [r.choice(['MIN', 'MAX'])]
            return c + (['COUNT', r.choice([1, 2, 5])] if r.random() < 0.6 else [])
        k = self.keys(STREAMS)
        count = ['COUNT', r.choice([1, 2])] if r.random() < 0.4 else []
        ms = str(int(float(timeout) * 1000))
        if kind == 'xread':
            ids = [r.choice(['$', '$', '0-0', '%d-0' % self.xid[s]]) for s in k]
            return ['XREAD'] + count + ['BLOCK', ms, 'STREAMS'] + k + ids
        return ['XREADGROUP', 'GROUP', 'g', 'c%d' % r.randrange(3)] + count + (['NOACK'] if r.random() < 0.2 else []) + \
            ['BLOCK', ms, 'STREAMS'] + k + ['>'] * len(k)

    def xadd(self, s=None):
        s = s or self.r.choice(STREAMS)
        self.xid[s] += 1
        return ['XADD', s, '%d-1' % self.xid[s], 'f', self.r.choice(ELEMS)]

    def write(self):
        r = self.r
        kind = r.choice(['push', 'push', 'push', 'zadd', 'zadd', 'xadd', 'xadd', 'lmove', 'pushx', 'pop'])
        if kind == 'push':
            return [r.choice(['LPUSH', 'RPUSH']), r.choice(LISTS)] + self.elems()
        if kind == 'pushx':
            return [r.choice(['LPUSHX', 'RPUSHX']), r.choice(LISTS)] + self.elems()
        if kind == 'zadd':
            c = ['ZADD', r.choice(ZSETS)]
            for e in self.elems():
                c += [r.choice(['1', '1', '2', '0.5', '-3']), e]
            return c
        if kind == 'xadd':
            return self.xadd()
        if kind == 'pop':
            return [r.choice(['LPOP', 'RPOP']), r.choice(LISTS)]
        return ['LMOVE', r.choice(LISTS), r.choice(LISTS), r.choice(['LEFT', 'RIGHT']), r.choice(['LEFT', 'RIGHT'])]

    def disturb(self):
        r = self.r
        k = r.choice(KEYS)
        kind = r.choice(['set', 'othertype', 'del', 'rename', 'copy', 'pexpireat', 'expire', 'flushall', 'swapdb',
                         'unlink', 'renamenx', 'setx'])
        if kind == 'set':
            return ['SET', k, 'str']
        if kind == 'setx':
            return ['SET', 'x', 'v']
        if kind == 'othertype':
            return r.choice([['ZADD', k, '1', 'zz'], ['RPUSH', k, 'll'], self.xadd(k) if k in STREAMS else ['XADD', k, '1-1', 'f', 'v'],
                             ['HSET', k, 'f', 'v']])
        if kind in ('del', 'unlink'):
            return [kind.upper()] + self.keys(KEYS)
        if kind in ('rename', 'renamenx'):
            return [kind.upper(), r.choice(KEYS), k]
        if kind == 'copy':
            return ['COPY', r.choice(KEYS), k] + (['REPLACE'] if r.random() < 0.5 else [])
        if kind == 'pexpireat':
            return ['PEXPIREAT', k, '1']
        if kind == 'expire':
            return ['EXPIRE', k, '100']
        if kind == 'swapdb':
            return ['SWAPDB', '0', '1']
        return ['FLUSHALL']

    def lua(self):
        r = self.r
        calls, keys = [], []
        for _ in range(r.randrange(1, 4)):
            c = self.write() if r.random() < 0.8 else self.disturb()
            if c[0] in ('FLUSHALL', 'SWAPDB'):
                continue
            calls.append(c)
        declare = r.random() < 0.6
        body, ks = [], []
        for c in calls:
            args = []
            for j, a in enumerate(c):
                if declare and j == 1:
                    ks.append(a); args.append('KEYS[%d]' % len(ks))
                else:
                    args.append("'%s'" % a)
            body.append('redis.call(%s)' % ', '.join(args))
        body.append("return 'done'")
        return ['EVAL', '; '.join(body), len(ks)] + ks

    def step(self, idle, pend):
        """idle: clients with nothing outstanding; pend: clients waiting in a blocking command."""
        r = self.r
        w = [('block', 8 if len(idle) > 1 else 0), ('write', 8), ('multi', 2), ('lua', 1.5), ('disturb', 2),
             ('unblock', 1 if pend else 0), ('kill', 0.4 if pend else 0), ('quit', 0.4 if pend else 0),
             ('killwrite', 0.6 if pend else 0),
             ('timed', 1 if len(idle) > 1 else 0), ('multiblock', 0.8), ('pipe', 0.8), ('read', 0.8)]
        if not idle:
            w = [(k, v) for k, v in w if k in ('unblock', 'kill', 'quit', 'killwrite')]
        tot = sum(v for _, v in w)
        x = r.random() * tot
        for kind, v in w:
            x -= v
            if x < 0:
                break
        i = r.choice(idle) if idle else None
        if kind == 'block':
            return ('send', i, [self.blocking()])
        if kind == 'write':
            return ('send', i, [self.write()])
        if kind == 'disturb':
            return ('send', i, [self.disturb()])
        if kind == 'lua':
            return ('send', i, [self.lua()])
        if kind == 'multi':
            cmds = [self.write() if r.random() < 0.7 else self.disturb() for _ in range(r.randrange(1, 5))]
            return ('send', i, [['MULTI']] + cmds + [['EXEC']])
        if kind == 'multiblock':
            cmds = [self.blocking()] + ([self.write()] if r.random() < 0.5 else [])
            r.shuffle(cmds)
            return ('send', i, [['MULTI']] + cmds + [['EXEC']])
        if kind == 'pipe':
            cmds = [self.write(), self.blocking()] if r.random() < 0.5 else [self.blocking(), ['PING']]
            return ('send', i, cmds)
        if kind == 'timed':
            return ('timed', i, [self.blocking(r.choice(['0.05', '0.1', '0.2']))])
        if kind == 'read':
            return ('send', i, [r.choice([['LRANGE', r.choice(LISTS), '0', '-1'], ['ZRANGE', r.choice(ZSETS), '0', '-1', 'WITHSCORES'],
                                          ['XRANGE', r.choice(STREAMS), '-', '+'], ['TYPE', r.choice(KEYS)]])])
        j = r.choice(pend)
        if kind == 'unblock':
            return ('ctl', j, [['CLIENT', 'UNBLOCK', None] + r.choice([[], ['TIMEOUT'], ['ERROR']])])
        if kind == 'kill':
            return ('kill', j, [['CLIENT', 'KILL', 'ID', None]])
        if kind == 'killwrite':  # the kill and a write in one pipeline: the write must not serve the killed client
            return ('kill', j, [['CLIENT', 'KILL', 'ID', None], self.write()])
        return ('quit', j, [])


class Runner:
    def __init__(self, args):
        self.args = args
        self.redis = Redis(BASE)
        self.anykv = AnyKV(os.path.abspath(args.anykv), BASE, 'blockfuzz')
        self.fails = 0

    def stop(self):
        self.redis.stop(); self.anykv.stop()

    def apply(self, side, st, expect):
        kind, i, cmds = st
        if kind == 'send':
            side.send(i, cmds)
            return side.settle(expect)
        if kind == 'timed':
            side.send(i, cmds)
            return side.settle(expect, sync=i)
        if kind == 'ctl':
            c = [x if x is not None else side.ids[i] for x in cmds[0]]
            side.got[i].append(('ctl:' + ' '.join('<id>' if x is None else str(x) for x in cmds[0]), norm(side.ctl.cmd(*c))))
            return side.settle(expect)
        if kind == 'kill':
            c = [x if x is not None else side.ids[i] for x in cmds[0]]
            if len(cmds) == 1:
                side.got[i].append(('kill', norm(side.ctl.cmd(*c))))
            else:  # the write right behind the kill, pipelined, its reply kept with the kill's
                side.ctl.s.sendall(encode(c) + encode(cmds[1]))
                side.got[i].append(('kill', norm(side.ctl.read())))
                side.got[i].append((cmds[1], norm(side.ctl.read())))
            return self.reopen(side, i, expect)
        if kind == 'quit':
            side.clients[i].close()
            return self.reopen(side, i, expect)

    def reopen(self, side, i, expect):
        """Waits until the server dropped client i (out of CLIENT LIST), then opens a new client in its place."""
        old, end, ok = side.ids[i], time.time() + 5, False
        while time.time() < end:
            if ('id=%d ' % old) not in side.ctl.cmd('CLIENT', 'LIST'):
                ok = True
                break
            time.sleep(0.005)
        side.clients[i].close()
        side.got[i].append(('reopen', 'gone' if ok else 'still listed'))
        side.open(i, side.resp3[i])
        return side.settle(expect) and ok

    def run_seed(self, seed):
        args = self.args
        rnd = random.Random(seed)
        n = args.clients
        resp3 = [rnd.random() < args.resp3 for _ in range(n)]
        sides = [Side('redis', self.redis.port), Side('anykv', self.anykv.port)]
        for s in sides:
            for db in ('1', '0'):
                s.ctl.cmd('SELECT', db)
                s.ctl.cmd('FLUSHDB')
            for st in STREAMS:
                s.ctl.cmd('XGROUP', 'CREATE', st, 'g', '$', 'MKSTREAM')
            for i in range(n):
                s.open(i, resp3[i])
        g = Gen(rnd, n)
        hist = []
        ok = True
        try:
            for step in range(args.len):
                rs = sides[0]
                idle = [i for i in range(n) if not rs.pending[i]]
                pend = [i for i in range(n) if rs.pending[i]]
                st = g.step(idle, pend)
                if swaps(st) and any(keycount(c) > 1 for i in pend for c in rs.pending[i]):
                    st = ('send', st[1], [['PING']])  # which of its filled keys serves it is Redis's dict order
                hist.append(st)
                before = [[len(x) for x in s.got] for s in sides]
                settled = [self.apply(sides[0], st, None)]
                expect = [len(x) for x in sides[0].got]
                settled.append(self.apply(sides[1], st, expect))
                new = [[s.got[i][before[k][i]:] for i in range(n)] for k, s in enumerate(sides)]
                bad = [i for i in range(n) if not tolerated(new[1][i], new[0][i]) or sides[0].pending[i] != sides[1].pending[i]]
                if bad or not all(settled):
                    ok = False
                    self.report(seed, step, hist, sides, new, bad, settled)
                    break
                if args.verbose:
                    print('seed=%d step=%d %s' % (seed, step, fmt(st)))
                    for i in range(n):
                        for c, rep in new[0][i]:
                            print('    c%d %s -> %r' % (i, ' '.join(map(str, c)) if isinstance(c, list) else c, rep))
            if ok:
                # the end: whoever still waits is unblocked, in client order, then the key spaces are compared
                for i in range(n):
                    if sides[0].pending[i] or sides[1].pending[i]:
                        st = ('ctl', i, [['CLIENT', 'UNBLOCK', None]])
                        hist.append(st)
                        before = [[len(x) for x in s.got] for s in sides]
                        self.apply(sides[0], st, None)
                        self.apply(sides[1], st, [len(x) for x in sides[0].got])
                        new = [[s.got[j][before[k][j]:] for j in range(n)] for k, s in enumerate(sides)]
                        if not all(tolerated(new[1][j], new[0][j]) for j in range(n)) or sides[0].pending != sides[1].pending:
                            ok = False
                            self.report(seed, len(hist) - 1, hist, sides, new, list(range(n)), [True])
                            break
            if ok:
                difffuzz.KEYS = KEYS
                # a TTL (EXPIRE k 100, the only one set) in whole seconds, dumped some time apart: compared by presence
                ttl = lambda d: {k: (t, v, 'ttl' if x > 0 else x) for k, (t, v, x) in d.items()}
                da, dr = ttl(difffuzz.dump(sides[1].ctl, db1=True)), ttl(difffuzz.dump(sides[0].ctl, db1=True))
                if da != dr:
                    ok = False
                    print('FAIL seed=%d keyspace differs after %d steps' % (seed, len(hist)))
                    for k in sorted(set(da) | set(dr)):
                        if da.get(k) != dr.get(k):
                            print('  %s\n    anykv: %r\n    redis: %r' % (k, da.get(k), dr.get(k)))
                    self.history(hist)
        finally:
            for s in sides:
                s.close()
        if not ok:
            self.fails += 1
        return ok

    def history(self, hist):
        for j, h in enumerate(hist[-self.args.hist:]):
            print('   %3d %s' % (len(hist) - len(hist[-self.args.hist:]) + j, fmt(h)))

    def report(self, seed, step, hist, sides, new, bad, settled):
        print('FAIL seed=%d step=%d %s%s' % (seed, step, fmt(hist[-1]), '' if all(settled) else ' (not settled: %s)' % settled))
        for i in bad:
            print('  client %d (RESP%d):' % (i, 3 if sides[0].resp3[i] else 2))
            print('    anykv: %r pending %r' % (new[1][i], sides[1].pending[i]))
            print('    redis: %r pending %r' % (new[0][i], sides[0].pending[i]))
        self.history(hist)
        sys.stdout.flush()


def swaps(st):
    """Whether a step swaps databases: a client blocked on several keys that the swap fills is served by
    redis-server from whichever its dict of blocking keys lists first, an order random from one start to the next
    (its hash seed), so such a step is left out."""
    return any(isinstance(c, list) and c and c[0] == 'SWAPDB' for c in st[2])


def keycount(cmd):
    """The number of keys a blocking command waits on."""
    name = str(cmd[0]).upper()
    if name in ('BLPOP', 'BRPOP', 'BZPOPMIN', 'BZPOPMAX'):
        return len(cmd) - 2
    if name in ('BLMPOP', 'BZMPOP'):
        return int(cmd[2])
    if name in ('XREAD', 'XREADGROUP'):
        return (len(cmd) - 1 - [str(a).upper() for a in cmd].index('STREAMS')) // 2
    return 1


def fmt(st):
    kind, i, cmds = st
    return '%s c%s: %s' % (kind, i, ' | '.join(' '.join('<id>' if a is None else str(a) for a in c) for c in cmds))


BASE = ''


def main():
    global BASE
    p = argparse.ArgumentParser()
    p.add_argument('--seeds', default='0:100')
    p.add_argument('--len', type=int, default=40, help='steps per seed')
    p.add_argument('--clients', type=int, default=4)
    p.add_argument('--resp3', type=float, default=0.3, help='probability that a client speaks RESP3')
    p.add_argument('--anykv', default='bin/anykv')
    p.add_argument('--verbose', action='store_true')
    p.add_argument('--hist', type=int, default=30)
    p.add_argument('--stop-first', action='store_true')
    p.add_argument('--workdir', default='')
    p.add_argument('--strict', action='store_true', help='do not tolerate the documented deviations')
    args = p.parse_args()
    global STRICT
    STRICT = args.strict
    BASE = args.workdir or tempfile.mkdtemp(prefix='blockfuzz-')
    os.makedirs(BASE, exist_ok=True)
    if ':' in args.seeds:
        a, b = args.seeds.split(':'); seeds = range(int(a), int(b))
    else:
        seeds = [int(x) for x in args.seeds.split(',')]
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(3))
    run = Runner(args)
    t0, ok = time.time(), 0
    try:
        for s in seeds:
            if run.run_seed(s):
                ok += 1
            elif args.stop_first:
                break
    finally:
        run.stop()
    print('done: %d ok, %d failed, %.1fs (servers in %s)' % (ok, run.fails, time.time() - t0, BASE))
    if run.fails:
        return 1
    if not args.workdir:
        shutil.rmtree(BASE, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
