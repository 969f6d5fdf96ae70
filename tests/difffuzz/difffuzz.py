#!/usr/bin/env python3
"""Differential fuzzer: anykv against redis-server 7, command by command and key space by key space.

Each seed is a FLUSHALL'd sequence of random commands (gen.py) over 6 keys (strings, expiry, keys, hashes, lists, sets,
sorted sets, bitmaps, streams, Lua scripts; MULTI blocks, pipelines, RESP3), sent to both servers; replies are compared (unordered
ones sorted), and every few steps the whole key space (types, contents, TTLs). With --restart anykv is killed
with SIGKILL between steps and restarted on its directory, and must hold every acknowledged write. A helper
wrote it for an audit on 2026-11-24; it found the bitmap, SMOVE, ZADD, HINCRBYFLOAT and ZUNION/ZINTER
differences fixed then (testdata/redis7/difffuzz.txt holds them). scripts/test.sh runs a few hundred seeds;
long runs by hand:

  python3 tests/difffuzz/difffuzz.py --anykv bin/anykv --seeds 0:2000
  python3 tests/difffuzz/difffuzz.py --anykv bin/anykv --seeds 17 --verbose     # replay one seed
  python3 tests/difffuzz/difffuzz.py --anykv bin/anykv --seeds 0:300 --pipeline 0.3 --restart 0.05
  python3 tests/difffuzz/difffuzz.py --anykv bin/anykv --seeds 0:500 --resp3 --members 16

The misc group (added 2026-11-30) covers SORT/SORT_RO (BY, GET, LIMIT, STORE), LCS, the HyperLogLogs, GEOADD and
its reads, MOVE and COPY ... DB 1 (database 1 is then dumped too), KEYS, SCAN and the collection scans (compared
unordered), DBSIZE, TOUCH, PSETEX and the absolute expiries, DUMP (strings of up to 20 bytes byte for byte, others by
presence) and RESTORE of redis-server's own DUMP of a key into both (listpack, intset and LZF payloads into anykv);
SRANDMEMBER, HRANDFIELD, ZRANDMEMBER and SPOP compare by length, or by content when the count takes every member.

The stream group (added 2026-12-01) covers XADD (NOMKSTREAM, MAXLEN/MINID with `=` or none), XLEN, XRANGE/XREVRANGE,
XDEL, XTRIM, XREAD (no BLOCK), XSETID, XGROUP, XREADGROUP (no BLOCK), XACK, XPENDING (the extended form's idle
times masked), XCLAIM and XAUTOCLAIM with min-idle-time 0, with explicit IDs only (a bare `*` is the clock). The key
space compares a stream by its entries, XINFO STREAM's counters (not the radix-tree figures), and each group's
counters, consumers with pending entries, XPENDING summary and pending entries (delivery counts, not idle times);
consumers without pending entries may be more in anykv (its XREADGROUP makes its consumer even when it reads
nothing, as Redis 7.2; then XGROUP CREATECONSUMER answers 0 where redis-server 7.0 answers 1). DUMP and RESTORE of
streams are refused by anykv (documented): a DUMP of a stream passes, and a RESTORE from one is sent as a DUMP.

The script group (added 2026-12-01) EVALs scripts (gen.py, gen_script) that redis.call and redis.pcall the other
groups' commands over KEYS and ARGV (arguments as ARGV, Lua strings or Lua integers) and return their replies as
they are, inside tables, through pcall, as cjson, or described by their Lua types (d(): 's:', 'n:', 'ok:', 'err:' and
its first word, tables); scripts that return Lua values (numbers truncated, booleans, tables with holes and nested,
{ok=}, {err=}, redis.error_reply/status_reply, the RESP3 tables), cjson.encode/decode, redis.sha1hex, tonumber,
tostring and string.format; scripts that catch a WRONGTYPE or bad argument with pcall and write on, or that fail
after writing (the writes stay, checked by the key space, and with --restart after a SIGKILL); EVALSHA and
EVALSHA_RO of scripts SCRIPT LOAD or EVAL brought and of unknown SHA1s, SCRIPT EXISTS and FLUSH, EVAL_RO of writes,
bad numkeys, blocking and forbidden commands, and a SELECT that reads database 1. Deterministic: no TIME or random
commands; the replies of SMEMBERS, HKEYS, HGETALL and the other unordered ones are sorted in the script, TTLs
reduced to their sign, and an EXPIRE GT/LT's 0 or 1 not returned (a tie, as same() says). Each seed starts with
SCRIPT FLUSH on both (anykv's cache evicts EVAL's scripts past 500), and a restart flushes redis-server's (anykv's
is lost with it, as a restarted Redis's). A script's error is compared by its first word, never tolerated further;
one of Lua alone (no redis.call in the script) whole, less the documented deviations (docs/resp.md, scripting row):
runtime errors name no variable, and a compile error is gopher-lua's parser's message. Scores in the replies of a
script that calls a sorted set's command, and {double=}, compare in Redis 7.2's shortest form (docs/resp.md). It
found tonumber, string.format and cjson differing from Lua 5.1's and Lua CJSON's, {ok=,err=} answered as the
status, pcall(f) of a library function naming a position and '(anonymous)', and SCRIPT LOAD queued in MULTI unseen
by the EVALSHA after it (fixed then: TestScript*MatchesRedis in internal/protocol/redis/script_difffuzz_test.go).

--events (added 2026-12-01) also compares the keyspace notifications: both servers get notify-keyspace-events KEA
(again after each restart), a subscriber of each PSUBSCRIBEs __key*@*__:* and a private marker channel, and after
every step the events of each are read up to a marker PUBLISHed after the step's replies (a command's events go out
before its reply, on both), then compared in order, channel and message. Not compared: expired and evicted (timing),
and unless --strict xgroup-createconsumer and xgroup-delconsumer (the documented XREADGROUP consumers above). A
restart happens between steps, after their events were compared; a step whose anykv connection was lost is skipped.
It found SETBIT/BITFIELD's events for writes that changed nothing, COPY ... DB's events in the source's database and
RESP3's SPOP of nothing sending spop (fixed then).

Options: --len N (commands per sequence), --stop-first, --groups str,hash,... (restrict), --strict (do not
tolerate the documented deviations: error texts and the order of argument checks, lexicographic ranges over
mixed scores, -0 scores, the cardinality PFCOUNT caches). Failures print as "FAIL seed=S step=I ..." with the command
history; the exit status is 1 if any seed failed.
"""
import argparse, os, random, re, signal, sys, tempfile, time, shutil

from respserver import AnyKV, Conn, Err, ErrReply, Redis
import gen
from gen import FIELDS, GROUPS, IDX, KEYS, MEMBERS, gen_cmd

ANYKV = 'bin/anykv'  # --anykv
BASE = ''  # --workdir: the servers' directories and anykv's logs (default: a fresh temporary directory)
SKIP_FAIL = True  # tolerate the documented deviations (see --strict)
SHORT_EXPIRY = False  # --short-expiry (gen.SHORT_EXPIRY too)

# ---------------------------------------------------------------- keyspace events (--events)
EV_CLASSES = 'KEA'  # every class but n (new) and m (miss), both channels
EV_PATTERN = '__key*@*__:*'
EV_MARK = 'difffuzz-events-mark'  # a private channel: the drain reads until its marker
EV_TIMING = ('expired', 'evicted')  # sent when a clock or a sweep decides: never compared
# documented (docs/resp.md, streams and keyspace notifications): anykv's XREADGROUP makes its consumer even when it
# reads nothing (Redis 7.2), redis-server 7.0 does not, so the consumers, and the events of their making and removal
# by XREADGROUP, XCLAIM, XAUTOCLAIM and XGROUP CREATECONSUMER/DELCONSUMER, may differ: not compared unless --strict
EV_CONSUMERS = ('xgroup-createconsumer', 'xgroup-delconsumer')

def ev_skipped(channel, msg):
    skip = EV_TIMING if not SKIP_FAIL else EV_TIMING + EV_CONSUMERS
    if channel.startswith('__keyevent@'):
        return channel.rsplit(':', 1)[-1] in skip
    return msg in skip

# ---------------------------------------------------------------- normalisation
UNORDERED = {'SMEMBERS', 'SINTER', 'SUNION', 'SDIFF', 'HKEYS', 'HVALS'}
PAIRS = {'HGETALL'}

def normfloat(x):
    if isinstance(x, tuple) and x and x[0] == 'double':
        x = x[1]
    if isinstance(x, str):
        try:
            f = float(x)
            if f == 0 and SKIP_FAIL: f = 0.0  # documented: anykv prints a computed -0 as 0
            return ('f', repr(f))
        except ValueError:
            return x
    return x

def deep(x, f):
    if isinstance(x, list): return [deep(e, f) for e in x]
    if isinstance(x, tuple) and x and x[0] in ('map', 'set'):
        return (x[0], [deep(e, f) for e in x[1]])
    if isinstance(x, tuple) and len(x) == 2 and x[0] != 'double':
        return tuple(deep(e, f) for e in x)
    return f(x)

def skey(x): return repr(x)

SCRIPTS = ('EVAL', 'EVALSHA', 'EVAL_RO', 'EVALSHA_RO')
SCORE17 = re.compile(r'-?[0-9]\.[0-9]{14,}(e[-+][0-9]+)?')

def script_scores(x):
    """A score in Redis 7.0's 17 digits, in a script's reply (a string of it, or within a description or a JSON
    text), in the shortest form anykv prints, as every score (docs/resp.md, ZADD's and the scripting rows)."""
    if isinstance(x, tuple) and len(x) == 2 and x[0] == 'double':
        return ('double', script_scores(x[1]))
    if isinstance(x, str) and SCORE17.search(x):
        return SCORE17.sub(lambda m: repr(float(m.group())), x)
    return x

def normalize(cmd, rep, ttl_now=None):
    name = cmd[0].upper()
    if isinstance(rep, ErrReply):
        return rep
    if name in SCRIPTS and len(cmd) > 1 and (re.search(r"'b?z[a-z]+'", cmd[1], re.I) or 'double=' in cmd[1]):
        rep = deep(rep, script_scores)  # a script that called a sorted set's command or returned a double
    if name.startswith('Z') or name in ('BZPOPMIN', 'BZPOPMAX', 'BZMPOP'):
        # score printing: Redis 7.0 17 digits vs anykv shortest
        rep = deep(rep, lambda v: normfloat(v) if isinstance(v, (str, tuple)) and not (isinstance(v, str) and v.startswith('m')) else v)
    if isinstance(rep, tuple) and rep[0] == 'set':
        rep = ('set', sorted(rep[1], key=skey))
    if isinstance(rep, tuple) and rep[0] == 'map':
        rep = ('map', sorted(rep[1], key=skey))
    if name in UNORDERED and isinstance(rep, list):
        rep = sorted(rep, key=skey)
    if name in PAIRS and isinstance(rep, list):
        rep = sorted(zip(rep[0::2], rep[1::2]), key=skey)
    if name in ('KEYS', 'SPOP', 'SSCAN', 'HSCAN', 'SCAN') or (name in ('SORT', 'SORT_RO') and 'nosort' in cmd):
        # unordered: KEYS, SPOP of every member, a small collection's scan (whole, cursor 0), SORT BY nosort of a set
        if name.endswith('SCAN') and isinstance(rep, list) and len(rep) == 2 and isinstance(rep[1], list):
            inner = rep[1]
            inner = sorted(zip(inner[0::2], inner[1::2]), key=skey) if name == 'HSCAN' else sorted(inner, key=skey)
            rep = [rep[0], inner]
        elif isinstance(rep, list):
            rep = ('len', len(rep)) if 'LIMIT' in cmd else sorted(rep, key=skey)
    if name in ('SRANDMEMBER', 'HRANDFIELD', 'ZRANDMEMBER') and len(cmd) > 2:
        # random picks: compared by length, and by content when the count takes every member
        if isinstance(rep, list):
            if cmd[2] == '100':
                if len(cmd) > 3 and rep and not isinstance(rep[0], list): rep = list(zip(rep[0::2], rep[1::2]))
                rep = ('all', sorted(rep, key=skey))
            else:
                rep = ('len', len(rep))
    elif name in ('SRANDMEMBER', 'HRANDFIELD', 'ZRANDMEMBER') and isinstance(rep, str):
        rep = ('one',)
    if name == 'OBJECT' and isinstance(rep, str):
        # anykv names its own encodings (docs/resp.md), a string's from its value where Redis's depends on how it was
        # written (INCRBYFLOAT's "100" is embstr, an empty PFADD's raw): only whether the key exists compares
        rep = ('an encoding',)
    if name == 'DUMP' and isinstance(rep, str) and (not rep.startswith('\x00') or rep.startswith('\x00\xc3') or len(rep) > 32):
        # anykv writes collections in plain encodings and strings never LZF-compressed (docs/resp.md), where Redis
        # compresses strings over 20 bytes: strings of up to 20 bytes compare byte for byte
        rep = ('dump',)
    if name == 'XPENDING' and len(cmd) > 3 and isinstance(rep, list):
        # the extended form's entries are [id, consumer, idle ms, deliveries]: the idle time is the clock's
        rep = [e[:2] + ['idle'] + e[3:] if isinstance(e, list) and len(e) == 4 else e for e in rep]
    if name in ('TTL', 'PTTL', 'EXPIRETIME', 'PEXPIRETIME') and isinstance(rep, int) and rep > 0:
        q = 1000 if name in ('PTTL', 'PEXPIRETIME') else 1
        rep = ('approx', rep // q)
    return rep

def known(cmd, a, b):
    """Documented deviations, tolerated so fuzzing can go deeper (disable with --strict)."""
    # A script's error is compared by its first word (same), and not tolerated further.
    if cmd[0].upper() in SCRIPTS:
        return False
    # An error where Redis gives another error: the order of argument checks differs (listed at the end).
    if isinstance(a, ErrReply) and isinstance(b, ErrReply):
        return True
    # Streams are neither dumped nor restored (docs/resp.md, DUMP RESTORE MIGRATE row).
    if cmd[0].upper() == 'DUMP' and isinstance(a, ErrReply) and 'does not DUMP streams' in a.s and b == ('dump',):
        return True
    # anykv's XREADGROUP made the consumer though it read nothing, as Redis 7.2 (docs/resp.md, streams row)
    if cmd[0].upper() == 'XGROUP' and len(cmd) > 1 and cmd[1].upper() == 'CREATECONSUMER' and (a, b) == (0, 1):
        return True
    # BITCOUNT and BITPOS check their arguments before the key, as Redis 7.2 does (7.0: 0, -1 or nil first).
    if cmd[0].upper() in ('BITCOUNT', 'BITPOS') and isinstance(a, ErrReply):
        return True
    return False

def same(cmd, a, b):
    if isinstance(a, tuple) and isinstance(b, tuple) and a and b and a[0] == 'approx' and b[0] == 'approx':
        return abs(a[1] - b[1]) <= 3
    if sorted((a, b), key=repr) == [0, 1] and cmd[0].upper() in ('EXPIRE', 'PEXPIRE') and \
            {'GT', 'LT'} & {x.upper() for x in cmd[3:]}:
        # A relative expiry equal to the key's (EXPIRE k 86400 GT after GETEX k PX 86400000) ties within the
        # millisecond or two between the commands: the servers may see different gaps (seed 1080 of CI's second
        # range failed once so). A GT or LT that moved the expiry by more shows in the key space's TTLs.
        return True
    if isinstance(a, ErrReply) or isinstance(b, ErrReply):
        if cmd[0].upper() in SCRIPTS and isinstance(a, ErrReply) and isinstance(b, ErrReply) and pure_lua(cmd):
            return lua_error_text(a.s) == lua_error_text(b.s)  # an error of Lua alone: compared whole
        return isinstance(a, ErrReply) and isinstance(b, ErrReply) and a == b
    if cmd[0].upper() == 'ZSCAN' and a != b and zscan_hash_order(a, b):
        return True
    return a == b

LUA_VARNAME = re.compile(r"attempt to ([a-z]+(?: [a-z]+)*) (?:local|global|field|upvalue|method) '[^']*' \(a ([a-z]+) value\)")

def lua_error_text(s):
    """A script's error text less what docs/resp.md's scripting row documents: a runtime error names no variable
    ("attempt to call a nil value" for Lua's "attempt to call local 'x' (a nil value)"), and a script that does
    not compile gives gopher-lua's parser's message after "Error compiling script" (Lua's: "unexpected symbol near
    '<eof>'"). Without --strict."""
    if not SKIP_FAIL: return s
    if s.startswith('ERR Error compiling script (new function): '): return 'ERR Error compiling script'
    return LUA_VARNAME.sub(r'attempt to \1 a \2 value', s)

def pure_lua(cmd):
    """Whether an EVAL's script calls no command (its errors are Lua's, cjson's or its own)."""
    return cmd[0].upper() in ('EVAL', 'EVAL_RO') and len(cmd) > 1 and 'redis.call' not in cmd[1] and 'redis.pcall' not in cmd[1]

def zscan_hash_order(a, b):
    """Whether ZSCAN replies a (anykv) and b (redis-server) hold the same pairs and redis-server's are not in score
    order: its SORT (and SORT_RO) of a sorted set converts it to a skiplist (sort.c), even when the SORT fails,
    and ZSCAN then gives that set in its hash table's order where a listpack's comes in score order, anykv's
    order (seeds 700390, 700626, 700637 with --groups misc,zset,keys --resp3 --pipeline 0.2 --members 16)."""
    if not (isinstance(a, list) and isinstance(b, list) and len(a) == len(b) == 2 and a[0] == b[0]
            and isinstance(a[1], list) and isinstance(b[1], list)):
        return False
    pa, pb = list(zip(a[1][0::2], a[1][1::2])), list(zip(b[1][0::2], b[1][1::2]))
    if sorted(pa, key=skey) != sorted(pb, key=skey):
        return False
    try:
        order = [(float(s[1] if isinstance(s, tuple) else s), m) for m, s in pb]
    except (TypeError, ValueError):
        return False
    return order != sorted(order)

# ---------------------------------------------------------------- dump
def dump(c, db1=False):
    out = {}
    for k in KEYS:
        t = c.cmd('TYPE', k)
        if t == 'none':
            continue
        if t == 'string': v = c.cmd('GET', k)
        elif t == 'hash':
            v = c.cmd('HGETALL', k)
            if isinstance(v, tuple): v = sorted(v[1])
            else: v = sorted(zip(v[0::2], v[1::2]))
        elif t == 'list': v = c.cmd('LRANGE', k, 0, -1)
        elif t == 'set':
            v = c.cmd('SMEMBERS', k)
            if isinstance(v, tuple): v = v[1]
            v = sorted(v)
        elif t == 'zset':
            v = c.cmd('ZRANGE', k, 0, -1, 'WITHSCORES')
            if v and isinstance(v[0], list):
                v = [(m, float(s[1] if isinstance(s, tuple) else s)) for m, s in v]
            else:
                v = [(m, float(s)) for m, s in zip(v[0::2], v[1::2])]
        elif t == 'stream': v = dump_stream(c, k)
        else: v = '?'
        ttl = c.cmd('PTTL', k)
        ttl = ttl // 1000 if ttl > 0 else ttl
        out[k] = (t, v, ttl)
    if db1:  # MOVE, COPY ... DB 1 and SWAPDB wrote there
        c.cmd('SELECT', '1')
        for k, v in dump(c).items():
            out['db1:' + k] = v
        c.cmd('SELECT', '0')
    return out

def kv(x):
    """A RESP2 flat list of pairs or a RESP3 map as a dict."""
    if isinstance(x, tuple) and x and x[0] == 'map': return dict(x[1])
    return dict(zip(x[0::2], x[1::2]))

def dump_stream(c, k):
    """A stream's entries, its counters (XINFO STREAM less the radix-tree figures, anykv having no such tree), and
    each group's counters, consumers (names and pending counts, not their times) and pending entries (not idle)."""
    info = kv(c.cmd('XINFO', 'STREAM', k))
    out = [c.cmd('XRANGE', k, '-', '+'),
           [(f, info.get(f)) for f in ('length', 'last-generated-id', 'max-deleted-entry-id', 'entries-added',
                                       'recorded-first-entry-id', 'groups')]]
    for g in c.cmd('XINFO', 'GROUPS', k):
        g = kv(g)
        name = g.pop('name')
        g.pop('consumers')  # those with no pending entries are compared apart (idle_consumers)
        cons = [(kv(x).get('name'), kv(x).get('pending')) for x in c.cmd('XINFO', 'CONSUMERS', k, name)]
        pel = [e[:2] + e[3:] for e in c.cmd('XPENDING', k, name, '-', '+', '1000000')]
        out.append(StreamGroup(name, sorted(g.items()), [x for x in cons if x[1]], c.cmd('XPENDING', k, name), pel,
                               {x[0] for x in cons if not x[1]}))
    return out

class StreamGroup(tuple):
    """A group of dump_stream: equal when all but the consumers without pending entries are, and anykv's (self) hold
    redis-server's (o): anykv's XREADGROUP makes its consumer even when it reads nothing, as Redis 7.2 (docs/resp.md,
    streams row), where redis-server 7.0 makes none."""
    def __new__(cls, *a): return tuple.__new__(cls, a)
    def __eq__(self, o):
        if not isinstance(o, StreamGroup): return False
        return self[:5] == o[:5] and (self[5] >= o[5] if SKIP_FAIL else self[5] == o[5])
    def __ne__(self, o): return not self == o
    __hash__ = tuple.__hash__

def dump_diff(da, dr):
    diffs = []
    for k in sorted(set(da) | set(dr)):
        a, b = da.get(k), dr.get(k)
        if a is None or b is None or a[0] != b[0] or a[1] != b[1]:
            diffs.append((k, a, b))
        elif (a[2] > 0) != (b[2] > 0) or (a[2] > 0 and abs(a[2] - b[2]) > 3):
            diffs.append((k, a, b))
    return diffs

# ---------------------------------------------------------------- main loop
class RestoreArgs(list):
    """A RESTORE whose payload (bytes) prints as its length."""

def fmt(cmd):
    if isinstance(cmd, RestoreArgs): return 'RESTORE %s 0 <redis DUMP, %d bytes> REPLACE' % (cmd[1], len(cmd[3]))
    return fmt1(cmd)

def fmt1(cmd): return ' '.join(repr(x) if (x == '' or ' ' in x or not x.isprintable()) else x for x in cmd)

class Runner:
    def __init__(self, args):
        self.args = args
        tag = 'p%d' % os.getpid()
        self.a = AnyKV(ANYKV, BASE, tag)
        self.r = Redis(BASE)
        self.connect()
        self.fails = 0
        self.errtext = {}
        self.errclass = {}

    def connect(self):
        self.ca = Conn(self.a.port)
        self.cr = Conn(self.r.port)
        if self.args.resp3:
            self.ca.cmd('HELLO', '3'); self.cr.cmd('HELLO', '3')
        if self.args.events:
            self.sa = self.subscriber(self.ca, self.a.port)
            self.sr = self.subscriber(self.cr, self.r.port)
            self.ev_marks = 0

    # ------------------------------------------------------------ --events
    def subscriber(self, c, port):
        """Turns the events on through c (again after each restart: CONFIG SET does not outlive one) and returns a
        connection subscribed to every keyspace and keyevent channel and to the marker channel."""
        c.cmd('CONFIG', 'SET', 'notify-keyspace-events', EV_CLASSES)
        s = Conn(port)
        if self.args.resp3: s.cmd('HELLO', '3')
        s.send(['PSUBSCRIBE', EV_PATTERN]); s.read()
        s.send(['SUBSCRIBE', EV_MARK]); s.read()
        return s

    def resubscribe_a(self, cut):
        """anykv was restarted (between steps, once their events were compared) or its connection lost (cut: the
        events of the step are not comparable); a new subscriber."""
        self.sa.close()
        self.sa = self.subscriber(self.ca, self.a.port)
        self.ev_cut = self.ev_cut or cut

    def drain(self, c, s):
        """The events s received since the last drain, in order, as (channel, message): a marker PUBLISHed through c
        (after every reply of the sequence, so after its events: both servers send a command's events before its
        reply) is read back on s, so no sleep decides what was collected."""
        self.ev_marks += 1
        mark = 'm%d' % self.ev_marks
        c.cmd('PUBLISH', EV_MARK, mark)
        out = []
        while True:
            m = s.read()
            if not isinstance(m, list) or not m:
                continue
            if m[0] == 'message' and m[1] == EV_MARK:
                if m[2] == mark: return out
                continue  # a marker of a drain that failed
            if m[0] == 'pmessage' and not ev_skipped(m[2], m[3]):
                out.append((m[2], m[3]))

    def events_begin(self):
        self.ev_cut = False
        self.drain(self.ca, self.sa); self.drain(self.cr, self.sr)

    def same_events(self, seed, step, hist):
        """Compares the events of the step just answered by both servers (every step is drained, so a difference
        names its step)."""
        if not self.args.events: return True
        ea, er = self.drain(self.ca, self.sa), self.drain(self.cr, self.sr)
        if self.ev_cut:  # anykv's connection was lost in the step: its events went with its subscriber
            return True
        for i in range(max(len(ea), len(er))):
            a = ea[i] if i < len(ea) else None
            b = er[i] if i < len(er) else None
            if a != b:
                before = ' '.join('%s=%s' % e for e in er[max(0, i - 6):i])
                self.report(seed, step, hist, 'keyspace event %d of %d/%d differs: anykv %r | redis %r (before it: %s)'
                            % (i, len(ea), len(er), a, b, before))
                return False
        return True

    def restart(self):
        self.restarts = getattr(self, 'restarts', 0) + 1
        self.ca.close()
        self.a.kill9()
        self.a.start()
        self.cr.cmd('SCRIPT', 'FLUSH')  # anykv's restart emptied its script cache, as a restart of Redis does
        self.ca = Conn(self.a.port)
        if self.args.resp3: self.ca.cmd('HELLO', '3')
        if self.args.events: self.resubscribe_a(False)

    def report(self, seed, step, hist, msg):
        self.fails += 1
        print('FAIL seed=%d step=%d %s' % (seed, step, msg))
        for h in hist[-self.args.hist:]:
            print('    ' + h)
        sys.stdout.flush()

    def run_seed(self, seed):
        r = random.Random(seed)
        groups = self.args.groups
        self.ca.cmd('FLUSHALL'); self.cr.cmd('FLUSHALL')
        if 'script' in groups:  # each seed's EVALSHA finds only the scripts it loaded (anykv's cache evicts past 500)
            self.ca.cmd('SCRIPT', 'FLUSH'); self.cr.cmd('SCRIPT', 'FLUSH')
        if self.args.events: self.events_begin()
        hist = []
        self.db1 = False
        pf_key = None
        n = self.args.len
        step = 0
        while step < n:
            step += 1
            if self.args.pipeline and r.random() < self.args.pipeline:
                cmds = [gen_cmd(r, groups) for _ in range(r.randint(2, 12))]
                cmds = [['DUMP', c[1]] if c[0] == 'XRESTORE' else c for c in cmds]
                if not self.args.strict:  # a PFCOUNT of one key: of it twice, which writes no cache (uncache_hll)
                    cmds = [c + [c[1]] if c[0] == 'PFCOUNT' and len(c) == 2 else c for c in cmds]
                cmds = [c for c in cmds if not (SHORT_EXPIRY and '15' in c and c[0] in ('PEXPIRE', 'SET', 'GETEX'))] or [['PING']]
                if not self.args.strict:
                    cmds = [c for c in cmds if not self.lex_unspecified(c)] or [['PING']]
                    # lex commands inside a pipeline cannot be pre-checked against later state
                    cmds = [c for c in cmds if c[0] not in ('ZRANGEBYLEX', 'ZREVRANGEBYLEX', 'ZREMRANGEBYLEX', 'ZLEXCOUNT') and 'BYLEX' not in c] or [['PING']]
                self.db1 = self.db1 or any(c[0] in ('MOVE', 'SWAPDB') or 'DB' in c for c in cmds)
                for c in cmds: self.ca.send(c)
                try:
                    ras = [self.ca.read() for _ in cmds]
                except (Err, OSError) as e:
                    self.report(seed, step, hist + ['PIPELINE ' + ' ; '.join(fmt(c) for c in cmds)], 'anykv connection error %r' % e)
                    if not self.a.alive(): self.a.start()
                    self.connect_a(); return False
                for c in cmds: self.cr.send(c)
                rrs = [self.cr.read() for _ in cmds]
                bad = False
                for c, ra, rr in zip(cmds, ras, rrs):
                    na, nr = normalize(c, ra), normalize(c, rr)
                    hist.append('[pipe] %s -> anykv %r | redis %r' % (fmt(c), ra, rr))
                    if self.args.verbose: print(hist[-1])
                    if not same(c, na, nr) and (self.args.strict or not known(c, na, nr)):
                        bad = True
                if bad:
                    self.report(seed, step, hist, 'pipelined reply differs')
                    return False
                if not self.same_events(seed, step, hist):
                    return False
                if (step % self.args.dump_every == 0 or step == n) and not self.same_state(seed, step, hist, ''):
                    return False
                continue
            if r.random() < self.args.multi:
                cmds = [gen_cmd(r, groups) for _ in range(r.randint(1, 5))]
                cmds = [['DUMP', c[1]] if c[0] == 'XRESTORE' else c for c in cmds]
                if not self.args.strict:  # a PFCOUNT of one key: of it twice, which writes no cache (uncache_hll)
                    cmds = [c + [c[1]] if c[0] == 'PFCOUNT' and len(c) == 2 else c for c in cmds]
                cmds = [c for c in cmds if not (SHORT_EXPIRY and '15' in c and c[0] in ('PEXPIRE', 'SET', 'GETEX'))] or [['PING']]
                if not self.args.strict:
                    # documented: lexicographic ranges over mixed scores
                    cmds = [c for c in cmds if c[0] not in ('ZRANGEBYLEX', 'ZREVRANGEBYLEX', 'ZREMRANGEBYLEX', 'ZLEXCOUNT') and 'BYLEX' not in c] or [['PING']]
                # occasionally a queue-time error
                if r.random() < 0.1: cmds.insert(r.randrange(len(cmds) + 1), ['NOSUCHCMD', 'x'])
                if r.random() < 0.1: cmds.insert(r.randrange(len(cmds) + 1), ['GET'])
                seq = [['MULTI']] + cmds + [['EXEC']]
            else:
                seq = [gen_cmd(r, groups)]
                if seq[0][0] == 'XRESTORE':
                    seq = [self.restore_from_redis(seq[0])]
                elif seq[0][0] == 'PFCOUNT' and len(seq[0]) == 2 and not self.args.strict:
                    pf_key = seq[0][1]  # its cache is made alike after it (uncache_hll)
            if not self.args.strict and len(seq) == 1 and self.lex_unspecified(seq[0]):
                continue
            self.db1 = self.db1 or any(c[0] in ('MOVE', 'SWAPDB') or 'DB' in c for c in seq)
            for cmd in seq:
                try:
                    ra = self.ca.cmd(*cmd)
                except (Err, OSError) as e:
                    hist.append('%s -> anykv EXC %r' % (fmt(cmd), e))
                    self.report(seed, step, hist, 'anykv connection error %r alive=%s' % (e, self.a.alive()))
                    if not self.a.alive():
                        self.a.start()
                    self.connect_a()
                    return False
                rr = self.cr.cmd(*cmd)
                if SHORT_EXPIRY and '15' in cmd and cmd[0] in ('PEXPIRE', 'SET', 'GETEX'):
                    time.sleep(0.06)
                    # redis-server reclaims an expired key lazily or in its 10 Hz sweep, and DBSIZE counts it till
                    # then (anykv's does not): a read of the key makes redis-server drop it now
                    self.cr.cmd('EXISTS', cmd[1])
                if cmd[0] == 'EXEC' and isinstance(ra, list) and isinstance(rr, list):
                    inner = seq[1:-1]
                    na = [normalize(c, x) for c, x in zip(inner, ra)]
                    nr = [normalize(c, x) for c, x in zip(inner, rr)]
                    ok = len(ra) == len(rr) and all(same(c, x, y) for c, x, y in zip(inner, na, nr))
                else:
                    na, nr = normalize(cmd, ra), normalize(cmd, rr)
                    ok = same(cmd, na, nr)
                hist.append('%s -> anykv %r | redis %r' % (fmt(cmd), ra, rr))
                if self.args.verbose: print(hist[-1])
                if not ok and not self.args.strict:
                    if cmd[0] == 'EXEC' and isinstance(ra, list) and isinstance(rr, list) and len(ra) == len(rr):
                        ok = all(same(c, x, y) or known(c, x, y) for c, x, y in zip(inner, na, nr))
                    else:
                        ok = known(cmd, na, nr)
                    if ok and isinstance(ra, ErrReply) and isinstance(rr, ErrReply):
                        self.errclass.setdefault((cmd[0].upper(), ra.s, rr.s), (seed, fmt(cmd)))
                if not ok:
                    self.report(seed, step, hist, 'reply differs')
                    return False
                # error text differences (same class)
                if isinstance(ra, ErrReply) and isinstance(rr, ErrReply) and ra.s != rr.s:
                    kk = (cmd[0].upper(), ra.s, rr.s)
                    if kk not in self.errtext:
                        self.errtext[kk] = (seed, fmt(cmd))
                if isinstance(ra, list) and isinstance(rr, list):
                    for x, y, c in zip(ra, rr, seq[1:-1] if cmd[0] == 'EXEC' else []):
                        if isinstance(x, ErrReply) and isinstance(y, ErrReply) and x.s != y.s:
                            kk = (c[0].upper(), x.s, y.s)
                            if kk not in self.errtext:
                                self.errtext[kk] = (seed, fmt(c))
            if pf_key is not None:
                self.uncache_hll(pf_key)
                pf_key = None
            if not self.same_events(seed, step, hist):
                return False
            if self.args.restart and r.random() < self.args.restart:
                hist.append('*** SIGKILL + restart anykv')
                self.restart()
                if not self.same_state(seed, step, hist, ' after restart'):
                    return False
            if (step % self.args.dump_every == 0 or step == n) and not self.same_state(seed, step, hist, ''):
                return False
        return True

    def same_state(self, seed, step, hist, when):
        """Compares the whole key space of both servers; a difference is reported as a failure."""
        d = dump_diff(dump(self.ca, self.db1), dump(self.cr, self.db1))
        if d:
            self.report(seed, step, hist, 'state differs%s: %r' % (when, d))
        return not d

    def restore_from_redis(self, cmd):
        """XRESTORE src dst: RESTORE dst 0 <redis-server's DUMP of src> REPLACE, sent to both (anykv reads Redis's
        listpack, intset and LZF encodings); a missing src restores an empty payload, an error on both."""
        if self.cr.cmd('TYPE', cmd[1]) == 'stream':  # anykv restores no streams (docs/resp.md): a DUMP instead
            return ['DUMP', cmd[1]]
        p = self.cr.cmd('DUMP', cmd[1])
        return RestoreArgs(['RESTORE', cmd[2], '0', (p or '').encode('latin1'), 'REPLACE'])

    def uncache_hll(self, k):
        """Documented: PFCOUNT of one key does not write the cardinality it computed into the value's cache (header
        bytes 8-15), where Redis does. When the two values differ only there, anykv's is written to redis-server."""
        a, b = self.ca.cmd('GET', k), self.cr.cmd('GET', k)
        if isinstance(a, str) and isinstance(b, str) and a != b and a.startswith('HYLL') and len(a) == len(b) >= 16 \
                and a[:8] == b[:8] and a[16:] == b[16:]:
            self.cr.cmd('SET', k, a.encode('latin1'), 'KEEPTTL')
            if self.args.events:  # the same set event from both
                self.ca.cmd('SET', k, a.encode('latin1'), 'KEEPTTL')

    def lex_unspecified(self, cmd):
        # Redis: lex ranges over members of different scores are unspecified
        n = cmd[0].upper()
        if not ('BYLEX' in cmd or n in ('ZRANGEBYLEX', 'ZREVRANGEBYLEX', 'ZREMRANGEBYLEX', 'ZLEXCOUNT')):
            return False
        k = cmd[2] if n == 'ZRANGESTORE' else cmd[1]
        v = self.cr.cmd('ZRANGE', k, 0, -1, 'WITHSCORES')
        if not isinstance(v, list): return False
        if v and isinstance(v[0], list): sc = [str(x[1]) for x in v]
        else: sc = v[1::2]
        return len(set(sc)) > 1

    def connect_a(self):
        self.ca.close()
        self.ca = Conn(self.a.port)
        if self.args.resp3: self.ca.cmd('HELLO', '3')
        if self.args.events: self.resubscribe_a(True)

    def stop(self):
        self.a.stop(); self.r.stop()

def main():
    global ANYKV, BASE
    p = argparse.ArgumentParser()
    p.add_argument('--seeds', default='0:200')
    p.add_argument('--len', type=int, default=60)
    p.add_argument('--multi', type=float, default=0.08)
    p.add_argument('--resp3', action='store_true')
    p.add_argument('--restart', type=float, default=0.0)
    p.add_argument('--dump-every', type=int, default=5)
    p.add_argument('--groups', default=','.join(GROUPS))
    p.add_argument('--verbose', action='store_true')
    p.add_argument('--hist', type=int, default=25)
    p.add_argument('--stop-first', action='store_true')
    p.add_argument('--pipeline', type=float, default=0.0, help='probability a step is a pipeline of 2-12 commands')
    p.add_argument('--short-expiry', action='store_true', help='also let keys expire for real (15 ms TTL, then sleep)')
    p.add_argument('--members', type=int, default=8, help='size of the member/field space (default 8)')
    p.add_argument('--strict', action='store_true', help='do not tolerate the documented deviations')
    p.add_argument('--anykv', default=ANYKV, help='the anykv binary (default bin/anykv)')
    p.add_argument('--events', action='store_true', help='also compare the keyspace notifications of each sequence')
    p.add_argument('--workdir', default='', help='directory for the servers (default: a new temporary one)')
    args = p.parse_args()
    ANYKV = os.path.abspath(args.anykv)
    BASE = args.workdir or tempfile.mkdtemp(prefix='difffuzz-')
    os.makedirs(BASE, exist_ok=True)
    args.groups = args.groups.split(',')
    global SKIP_FAIL, SHORT_EXPIRY
    if args.members > 8:
        MEMBERS[:] = ['m%d' % i for i in range(args.members)]
        FIELDS[:] = ['f%d' % i for i in range(args.members)]
        IDX[:] = IDX + [args.members // 2, -args.members // 2, args.members - 1, -args.members, args.members * 2, 7, -7, 20, -20]
    SKIP_FAIL = not args.strict
    SHORT_EXPIRY = gen.SHORT_EXPIRY = args.short_expiry
    if ':' in args.seeds:
        a, b = args.seeds.split(':'); seeds = range(int(a), int(b))
    else:
        seeds = [int(x) for x in args.seeds.split(',')]
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(3))  # so `timeout` still stops the servers
    run = Runner(args)
    t0 = time.time()
    ok = 0
    try:
        for s in seeds:
            if run.run_seed(s): ok += 1
            elif args.stop_first: break
            if (s - seeds[0] + 1) % 100 == 0:
                print('progress: seed %d, %d ok, %d failed, %d restarts, %.0fs' % (s, ok, run.fails, getattr(run, 'restarts', 0), time.time() - t0)); sys.stdout.flush()
    finally:
        run.stop()
    print('done: %d ok, %d failed, %d restarts, %.1fs (servers in %s)' % (ok, run.fails, getattr(run, 'restarts', 0), time.time() - t0, BASE))
    if run.errclass:
        print('error CLASS differences (tolerated):')
        for (c, a, b), (s, cmd) in sorted(run.errclass.items()):
            print('  seed=%d %s\n     anykv: %s\n     redis: %s' % (s, cmd, a, b))
    if run.errtext:
        print('error text differences (same class):')
        for (c, a, b), (s, cmd) in sorted(run.errtext.items()):
            print('  seed=%d %s\n     anykv: %s\n     redis: %s' % (s, cmd, a, b))
    if run.fails:
        return 1
    if not args.workdir:
        shutil.rmtree(BASE, ignore_errors=True)
    return 0

if __name__ == '__main__':
    sys.exit(main())
