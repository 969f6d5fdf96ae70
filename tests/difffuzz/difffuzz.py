#!/usr/bin/env python3
"""Differential fuzzer: anykv against redis-server 7, command by command and key space by key space.

Each seed is a FLUSHALL'd sequence of random commands over 6 keys (strings, expiry, keys, hashes, lists, sets,
sorted sets, bitmaps; MULTI blocks, pipelines, RESP3), sent to both servers; replies are compared (unordered
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

Options: --len N (commands per sequence), --stop-first, --groups str,hash,... (restrict), --strict (do not
tolerate the documented deviations: error texts and the order of argument checks, lexicographic ranges over
mixed scores, LMPOP/ZMPOP and KEYS/SCAN/DBSIZE inside MULTI, -0 scores, the cardinality PFCOUNT caches). Failures print as "FAIL seed=S step=I ..." with the command
history; the exit status is 1 if any seed failed.
"""
import argparse, os, random, signal, sys, tempfile, time, math, shutil

from respserver import AnyKV, Conn, Err, ErrReply, Redis

ANYKV = 'bin/anykv'  # --anykv
BASE = ''  # --workdir: the servers' directories and anykv's logs (default: a fresh temporary directory)

# ---------------------------------------------------------------- generator
KEYS = ['k%d' % i for i in range(6)]
MEMBERS = ['m%d' % i for i in range(8)]
FIELDS = ['f%d' % i for i in range(6)]
VALUES = ['', 'a', 'b', 'abc', 'hello', '0', '1', '-1', '5', '10', '-7', '3.5', '1e3', '007', ' 1', '9223372036854775807',
          '-9223372036854775808', '0.1', 'x y', '\x00z', '\xff']
INTS = ['0', '1', '-1', '2', '5', '-3', '10', '100', '9223372036854775807', '-9223372036854775808', '1.5', 'a', '']
FLOATS = ['0', '1', '-1', '0.5', '1.5', '-2.25', '0.1', '1e2', '3', 'inf', '-inf', '+inf', 'abc', '1e400', '0x10', '  2']
SCORES = ['0', '1', '2', '-1', '1.5', '3', '-2.5', '0.1', 'inf', '-inf', '10', '2']
SHORT_EXPIRY = False
SKIP_FAIL = True  # tolerate the documented deviations (see --strict)
BIGTTL = ['1000', '5000', '100000', '86400']

def R(r, l): return r.choice(l)

def key(r): return R(r, KEYS)

def score_bound(r):
    v = R(r, ['0', '1', '2', '-1', '1.5', '3', 'inf', '-inf', '+inf', '(1', '(2', '(0', '(-1', '(inf', '5'])
    return v

def lex_bound(r):
    return R(r, ['-', '+', '[m1', '[m3', '(m2', '(m5', '[m7', '(m0', '[a', '[z', '[', '('])

IDX = [0, 1, 2, -1, -2, 3, 5, -5, 10, -10, 100]
def idx(r): return str(r.choice(IDX))

def gen_string(r):
    k = key(r)
    c = r.randrange(22)
    if c == 0:
        a = ['SET', k, R(r, VALUES)]
        o = r.random()
        if o < 0.15: a += ['NX']
        elif o < 0.3: a += ['XX']
        if r.random() < 0.15: a += ['GET']
        if r.random() < 0.15: a += ['EX', R(r, BIGTTL)]
        elif r.random() < 0.1: a += ['KEEPTTL']
        return a
    if c == 1: return ['GET', k]
    if c == 2: return ['APPEND', k, R(r, VALUES)]
    if c == 3: return ['INCR', k]
    if c == 4: return ['INCRBY', k, R(r, INTS)]
    if c == 5: return ['DECRBY', k, R(r, INTS)]
    if c == 6: return ['INCRBYFLOAT', k, R(r, FLOATS)]
    if c == 7: return ['SETRANGE', k, str(r.choice([0, 1, 2, 5, 10, 20])), R(r, VALUES)]
    if c == 8: return ['GETRANGE', k, idx(r), idx(r)]
    if c == 9: return ['GETDEL', k]
    if c == 10:
        a = ['GETEX', k]
        o = r.randrange(4)
        if o == 0: a += ['EX', R(r, BIGTTL)]
        elif o == 1: a += ['PX', R(r, BIGTTL) + '000']
        elif o == 2: a += ['PERSIST']
        return a
    if c == 11: return ['SETNX', k, R(r, VALUES)]
    if c == 12:
        a = ['MSETNX']
        for _ in range(r.randint(1, 3)): a += [key(r), R(r, VALUES)]
        return a
    if c == 13:
        a = ['MSET']
        for _ in range(r.randint(1, 3)): a += [key(r), R(r, VALUES)]
        return a
    if c == 14: return ['MGET'] + [key(r) for _ in range(r.randint(1, 3))]
    if c == 15: return ['STRLEN', k]
    if c == 16: return ['DECR', k]
    if c == 17: return ['GETSET', k, R(r, VALUES)]
    if c == 18: return ['SETEX', k, R(r, BIGTTL), R(r, VALUES)]
    if c == 19: return ['SUBSTR', k, idx(r), idx(r)]
    if c == 20: return ['SET', k, str(r.randint(-5, 20))]
    return ['GET', k]

def gen_expire(r):
    k = key(r)
    c = r.randrange(10)
    if c <= 2:
        a = [R(r, ['EXPIRE', 'PEXPIRE']), k]
        t = R(r, BIGTTL)
        if a[0] == 'PEXPIRE': t += '000'
        if r.random() < 0.05: t = R(r, ['0', '-1'])
        a.append(t)
        if r.random() < 0.5: a.append(R(r, ['NX', 'XX', 'GT', 'LT', 'nx', 'NX XX']))
        if a[-1] == 'NX XX': a = a[:-1] + ['NX', 'XX']
        return a
    if c == 3: return ['PERSIST', k]
    if c == 4:
        if SHORT_EXPIRY and r.random() < 0.5:  # key expires for real (runner sleeps after it)
            return R(r, [['PEXPIRE', k, '15'], ['SET', k, R(r, VALUES), 'PX', '15'], ['PEXPIRE', k, '15', 'XX'], ['GETEX', k, 'PX', '15']])
        return ['TTL', k]
    if c == 5: return ['PTTL', k]
    if c == 6: return ['EXPIRETIME', k]
    if c == 7: return ['EXPIREAT', k, str(int(time.time()) + int(R(r, BIGTTL))) if r.random() < 0.9 else '100']
    if c == 8: return ['PEXPIRETIME', k]
    return ['TTL', k]

def gen_keys(r):
    k = key(r)
    c = r.randrange(8)
    if c == 0: return ['DEL'] + [key(r) for _ in range(r.randint(1, 3))]
    if c == 1: return ['EXISTS'] + [key(r) for _ in range(r.randint(1, 3))]
    if c == 2: return ['TYPE', k]
    if c == 3: return ['RENAME', k, key(r)]
    if c == 4: return ['RENAMENX', k, key(r)]
    if c == 5:
        a = ['COPY', k, key(r)]
        if r.random() < 0.5: a.append('REPLACE')
        return a
    if c == 6: return ['UNLINK', k]
    return ['STRLEN', k]

def gen_hash(r):
    k = key(r)
    c = r.randrange(16)
    if c <= 1:
        a = ['HSET', k]
        for _ in range(r.randint(1, 3)): a += [R(r, FIELDS), R(r, VALUES)]
        return a
    if c == 2: return ['HSETNX', k, R(r, FIELDS), R(r, VALUES)]
    if c == 3: return ['HDEL', k] + [R(r, FIELDS) for _ in range(r.randint(1, 3))]
    if c == 4: return ['HINCRBY', k, R(r, FIELDS), R(r, INTS)]
    if c == 5: return ['HINCRBYFLOAT', k, R(r, FIELDS), R(r, FLOATS)]
    if c == 6: return ['HGETALL', k]
    if c == 7: return ['HMGET', k] + [R(r, FIELDS) for _ in range(r.randint(1, 3))]
    if c == 8: return ['HLEN', k]
    if c == 9: return ['HSTRLEN', k, R(r, FIELDS)]
    if c == 10: return ['HGET', k, R(r, FIELDS)]
    if c == 11: return ['HEXISTS', k, R(r, FIELDS)]
    if c == 12: return ['HKEYS', k]
    if c == 13: return ['HVALS', k]
    if c == 14:
        a = ['HMSET', k]
        for _ in range(r.randint(1, 2)): a += [R(r, FIELDS), R(r, VALUES)]
        return a
    return ['HSET', k, R(r, FIELDS), str(r.randint(-3, 10))]

def gen_list(r):
    k = key(r)
    c = r.randrange(22)
    if c <= 1: return [R(r, ['LPUSH', 'RPUSH']), k] + [R(r, MEMBERS) for _ in range(r.randint(1, max(4, len(MEMBERS) // 3)))]
    if c == 2: return [R(r, ['LPUSHX', 'RPUSHX']), k] + [R(r, MEMBERS) for _ in range(r.randint(1, 2))]
    if c == 3:
        a = [R(r, ['LPOP', 'RPOP']), k]
        if r.random() < 0.5: a.append(str(r.choice([0, 1, 2, 3, 10, -1])))
        return a
    if c == 4: return ['LRANGE', k, idx(r), idx(r)]
    if c == 5: return ['LINDEX', k, idx(r)]
    if c == 6: return ['LSET', k, idx(r), R(r, MEMBERS)]
    if c == 7: return ['LINSERT', k, R(r, ['BEFORE', 'AFTER']), R(r, MEMBERS), R(r, MEMBERS)]
    if c == 8: return ['LREM', k, str(r.choice([0, 1, 2, -1, -2, 5])), R(r, MEMBERS)]
    if c == 9: return ['LTRIM', k, idx(r), idx(r)]
    if c == 10:
        a = ['LPOS', k, R(r, MEMBERS)]
        if r.random() < 0.5: a += ['RANK', str(r.choice([1, 2, -1, -2, 3, 0]))]
        if r.random() < 0.5: a += ['COUNT', str(r.choice([0, 1, 2, 5, -1]))]
        if r.random() < 0.3: a += ['MAXLEN', str(r.choice([0, 1, 2, 3, 10]))]
        r.shuffle(a[3:]) if False else None
        return a
    if c == 11: return ['LMOVE', k, key(r), R(r, ['LEFT', 'RIGHT']), R(r, ['LEFT', 'RIGHT'])]
    if c == 12: return ['RPOPLPUSH', k, key(r)]
    if c == 13: return ['LLEN', k]
    if c == 14: return ['LRANGE', k, '0', '-1']
    if c == 15: return ['LMPOP', str(2), k, key(r), R(r, ['LEFT', 'RIGHT'])] + (['COUNT', str(r.randint(1, 3))] if r.random() < .5 else [])
    return [R(r, ['LPUSH', 'RPUSH']), k] + [R(r, MEMBERS) for _ in range(r.randint(1, 3))]

def gen_set(r):
    k = key(r)
    c = r.randrange(20)
    if c <= 2: return ['SADD', k] + [R(r, MEMBERS) for _ in range(r.randint(1, max(4, len(MEMBERS) // 3)))]
    if c == 3: return ['SREM', k] + [R(r, MEMBERS) for _ in range(r.randint(1, 3))]
    if c == 4: return ['SMEMBERS', k]
    if c == 5: return ['SISMEMBER', k, R(r, MEMBERS)]
    if c == 6: return ['SMISMEMBER', k] + [R(r, MEMBERS) for _ in range(r.randint(1, 3))]
    if c == 7: return ['SCARD', k]
    if c == 8: return ['SMOVE', k, key(r), R(r, MEMBERS)]
    if c in (9, 10, 11): return [R(r, ['SINTER', 'SUNION', 'SDIFF']), k] + [key(r) for _ in range(r.randint(0, 2))]
    if c in (12, 13, 14): return [R(r, ['SINTERSTORE', 'SUNIONSTORE', 'SDIFFSTORE']), key(r), k] + [key(r) for _ in range(r.randint(0, 2))]
    if c == 15:
        ks = [k] + [key(r) for _ in range(r.randint(0, 2))]
        a = ['SINTERCARD', str(len(ks))] + ks
        if r.random() < 0.5: a += ['LIMIT', str(r.choice([0, 1, 2, 5]))]
        return a
    return ['SADD', k] + [R(r, MEMBERS) for _ in range(r.randint(1, 3))]

def gen_zset(r):
    k = key(r)
    c = r.randrange(34)
    if c <= 3:
        a = ['ZADD', k]
        o = r.random()
        if o < 0.12: a.append('NX')
        elif o < 0.24: a.append('XX')
        o = r.random()
        if o < 0.12: a.append('GT')
        elif o < 0.24: a.append('LT')
        if r.random() < 0.2: a.append('CH')
        if r.random() < 0.12:
            a += ['INCR', R(r, SCORES), R(r, MEMBERS)]
        else:
            for _ in range(r.randint(1, max(3, len(MEMBERS) // 4))): a += [R(r, SCORES), R(r, MEMBERS)]
        return a
    if c == 4: return ['ZREM', k] + [R(r, MEMBERS) for _ in range(r.randint(1, 3))]
    if c == 5: return ['ZSCORE', k, R(r, MEMBERS)]
    if c == 6: return ['ZMSCORE', k] + [R(r, MEMBERS) for _ in range(r.randint(1, 3))]
    if c == 7: return ['ZINCRBY', k, R(r, SCORES), R(r, MEMBERS)]
    if c == 8: return ['ZCARD', k]
    if c == 9: return ['ZCOUNT', k, score_bound(r), score_bound(r)]
    if c == 10: return [R(r, ['ZRANK', 'ZREVRANK']), k, R(r, MEMBERS)]
    if c in (11, 12, 13):
        m = r.randrange(3)
        if m == 0: a = ['ZRANGE', k, idx(r), idx(r)]
        elif m == 1: a = ['ZRANGE', k, score_bound(r), score_bound(r), 'BYSCORE']
        else: a = ['ZRANGE', k, lex_bound(r), lex_bound(r), 'BYLEX']
        if r.random() < 0.3: a.append('REV')
        if m > 0 and r.random() < 0.3: a += ['LIMIT', str(r.choice([0, 1, 2, -1])), str(r.choice([0, 1, 2, 3, -1, -5]))]
        if m < 2 and r.random() < 0.4: a.append('WITHSCORES')
        return a
    if c == 14:
        m = r.randrange(3)
        if m == 0: a = ['ZRANGESTORE', key(r), k, idx(r), idx(r)]
        elif m == 1: a = ['ZRANGESTORE', key(r), k, score_bound(r), score_bound(r), 'BYSCORE']
        else: a = ['ZRANGESTORE', key(r), k, lex_bound(r), lex_bound(r), 'BYLEX']
        if r.random() < 0.3: a.append('REV')
        if m > 0 and r.random() < 0.3: a += ['LIMIT', str(r.choice([0, 1, 2])), str(r.choice([1, 2, 3, -1]))]
        return a
    if c == 15:
        a = [R(r, ['ZRANGEBYSCORE', 'ZREVRANGEBYSCORE']), k, score_bound(r), score_bound(r)]
        if r.random() < 0.4: a.append('WITHSCORES')
        if r.random() < 0.3: a += ['LIMIT', str(r.choice([0, 1, 2])), str(r.choice([1, 2, -1]))]
        return a
    if c == 16: return ['ZREMRANGEBYSCORE', k, score_bound(r), score_bound(r)]
    if c == 17: return ['ZREMRANGEBYRANK', k, idx(r), idx(r)]
    if c == 18: return ['ZREMRANGEBYLEX', k, lex_bound(r), lex_bound(r)]
    if c in (19, 20):
        a = [R(r, ['ZPOPMIN', 'ZPOPMAX']), k]
        if r.random() < 0.5: a.append(str(r.choice([0, 1, 2, 3, 10, -1])))
        return a
    if c in (21, 22):
        ks = [k] + [key(r) for _ in range(r.randint(0, 2))]
        a = [R(r, ['ZUNIONSTORE', 'ZINTERSTORE', 'ZDIFFSTORE']), key(r), str(len(ks))] + ks
        if a[0] != 'ZDIFFSTORE':
            if r.random() < 0.4:
                ws = ['1', '2', '0', '-1', '0.5', 'inf']
                a += ['WEIGHTS'] + [R(r, ws) for _ in ks]
            if r.random() < 0.4: a += ['AGGREGATE', R(r, ['SUM', 'MIN', 'MAX'])]
        return a
    if c == 23:
        ks = [k] + [key(r) for _ in range(r.randint(0, 2))]
        a = [R(r, ['ZUNION', 'ZINTER', 'ZDIFF']), str(len(ks))] + ks
        if a[0] != 'ZDIFF':
            if r.random() < 0.3: a += ['WEIGHTS'] + [R(r, ['1', '2', '0', '-1']) for _ in ks]
            if r.random() < 0.3: a += ['AGGREGATE', R(r, ['SUM', 'MIN', 'MAX'])]
        if r.random() < 0.5: a.append('WITHSCORES')
        return a
    if c == 24: return ['ZLEXCOUNT', k, lex_bound(r), lex_bound(r)]
    if c == 25:
        a = [R(r, ['ZRANGEBYLEX', 'ZREVRANGEBYLEX']), k, lex_bound(r), lex_bound(r)]
        if r.random() < 0.3: a += ['LIMIT', str(r.choice([0, 1, 2])), str(r.choice([1, 2, -1]))]
        return a
    if c == 26:
        ks = [k] + [key(r) for _ in range(r.randint(0, 1))]
        a = ['ZINTERCARD', str(len(ks))] + ks
        if r.random() < .4: a += ['LIMIT', str(r.choice([0, 1, 2]))]
        return a
    if c == 27:
        return ['ZMPOP', '2', k, key(r), R(r, ['MIN', 'MAX'])] + (['COUNT', str(r.randint(1, 3))] if r.random() < .5 else [])
    if c == 28:
        a = ['ZREVRANGE', k, idx(r), idx(r)]
        if r.random() < 0.4: a.append('WITHSCORES')
        return a
    return ['ZADD', k, R(r, SCORES), R(r, MEMBERS)]

def gen_bit(r):
    k = key(r)
    c = r.randrange(10)
    if c <= 2: return ['SETBIT', k, str(r.choice([0, 1, 2, 3, 7, 8, 9, 15, 16, 23, 31, 40, 63])), R(r, ['0', '1', '1', '2'])]
    if c == 3: return ['GETBIT', k, str(r.choice([0, 1, 7, 8, 9, 16, 40, 100]))]
    if c == 4:
        a = ['BITCOUNT', k]
        if r.random() < 0.6:
            a += [idx(r), idx(r)]
            if r.random() < 0.5: a.append(R(r, ['BIT', 'BYTE']))
        return a
    if c == 5:
        a = ['BITPOS', k, R(r, ['0', '1'])]
        if r.random() < 0.6:
            a.append(idx(r))
            if r.random() < 0.6:
                a.append(idx(r))
                if r.random() < 0.5: a.append(R(r, ['BIT', 'BYTE']))
        return a
    if c == 6:
        op = R(r, ['AND', 'OR', 'XOR', 'NOT'])
        srcs = [k] if op == 'NOT' else [key(r) for _ in range(r.randint(1, 3))]
        return ['BITOP', op, key(r)] + srcs
    if c in (7, 8):
        a = ['BITFIELD', k]
        for _ in range(r.randint(1, 3)):
            o = r.randrange(4)
            t = R(r, ['u1', 'u4', 'u8', 'i4', 'i8', 'u16', 'i16', 'i64', 'u63', 'u3'])
            off = R(r, ['0', '1', '4', '7', '8', '#1', '#0', '13'])
            if o == 0: a += ['GET', t, off]
            elif o == 1:
                v = R(r, ['0', '1', '-1', '100', '255', '300', '-129', '15', '7'])
                a += ['SET', t, off, v]
            elif o == 2: a += ['INCRBY', t, off, R(r, ['1', '-1', '100', '200', '-300', '7'])]
            else: a += ['OVERFLOW', R(r, ['WRAP', 'SAT', 'FAIL'])]
        return a
    if c == 9:
        a = ['BITFIELD_RO', k, 'GET', R(r, ['u8', 'i8', 'u4', 'i16']), R(r, ['0', '3', '#1'])]
        return a
    return ['GETBIT', k, '0']

NUMS = ['0', '1', '2', '3', '4', '5', '-1', '1.5', '10', '007', 'x']

def gen_misc(r):
    """Commands whose replies are deterministic or are compared by shape (random picks)."""
    k = key(r)
    c = r.randrange(30)
    if c == 0: return ['RPUSH', k] + [R(r, NUMS) for _ in range(r.randint(1, 4))]
    if c in (1, 2):
        a = [R(r, ['SORT', 'SORT', 'SORT_RO']), k]
        if r.random() < 0.3: a += ['BY', R(r, ['k*', 'k*->f1', 'nosort', 'zz*'])]
        elif r.random() < 0.5: a.append('ALPHA')
        if r.random() < 0.3: a += ['LIMIT', str(r.choice([0, 1, 2, -1])), str(r.choice([0, 1, 3, -1]))]
        if r.random() < 0.3:
            for _ in range(r.randint(1, 2)): a += ['GET', R(r, ['#', 'k*', 'k*->f1', 'k*->f0'])]
        if r.random() < 0.3: a.append('DESC')
        if a[0] == 'SORT' and 'nosort' not in a and r.random() < 0.3: a += ['STORE', key(r)]
        if 'BY' in a and a[a.index('BY') + 1] == 'nosort' and r.random() < 0.5: a.append('ALPHA')
        return a
    if c == 3:
        a = ['LCS', k, key(r)]
        o = r.randrange(4)
        if o == 1: a.append('LEN')
        elif o >= 2:
            a.append('IDX')
            if r.random() < 0.5: a += ['MINMATCHLEN', str(r.choice([0, 1, 2, 3]))]
            if r.random() < 0.5: a.append('WITHMATCHLEN')
        return a
    if c == 4:
        a = ['SRANDMEMBER', k]
        if r.random() < 0.7: a.append(str(r.choice([0, 1, 2, 5, 100, -1, -3, -20])))
        return a
    if c == 5:
        a = ['HRANDFIELD', k]
        if r.random() < 0.7:
            a.append(str(r.choice([0, 1, 2, 5, 100, -1, -3, -20])))
            if r.random() < 0.5: a.append('WITHVALUES')
        return a
    if c == 6:
        a = ['ZRANDMEMBER', k]
        if r.random() < 0.7:
            a.append(str(r.choice([0, 1, 2, 5, 100, -1, -3, -20])))
            if r.random() < 0.5: a.append('WITHSCORES')
        return a
    if c == 7: return ['SPOP', k, R(r, ['0', '1000'])]
    if c == 8: return ['KEYS', R(r, ['*', 'k[0-2]', 'k?', '*1', 'x*'])]
    if c == 9:
        a = ['SCAN', '0', 'COUNT', '1000']
        if r.random() < 0.4: a += ['MATCH', R(r, ['k[1-3]', '*', 'k?'])]
        if r.random() < 0.4: a += ['TYPE', R(r, ['string', 'list', 'set', 'zset', 'hash', 'none'])]
        return a
    if c == 10: return [R(r, ['HSCAN', 'SSCAN', 'ZSCAN']), k, '0'] + (['MATCH', R(r, ['*', 'm[1-4]', 'f?', '*2'])] if r.random() < 0.3 else [])
    if c == 11: return ['DBSIZE']
    if c == 12: return ['TOUCH'] + [key(r) for _ in range(r.randint(1, 3))]
    if c == 13: return ['MOVE', k, '1']
    if c == 14:
        a = ['COPY', k, key(r), 'DB', '1']
        if r.random() < 0.5: a.append('REPLACE')
        return a
    if c == 15: return ['PSETEX', k, R(r, BIGTTL) + '000', R(r, VALUES)]
    if c == 16:
        t = int(time.time()) + int(R(r, BIGTTL))
        return R(r, [['SET', k, R(r, VALUES), 'EXAT', str(t)], ['SET', k, R(r, VALUES), 'PXAT', str(t * 1000)],
                     ['GETEX', k, 'EXAT', str(t)], ['PEXPIREAT', k, str(t * 1000)], ['SET', k, R(r, VALUES), 'PX', R(r, BIGTTL) + '000', 'GET']])
    if c in (17, 18): return ['PFADD', k] + [R(r, MEMBERS + ['a', 'b']) for _ in range(r.randint(0, 3))]
    if c == 19: return ['PFCOUNT'] + [key(r) for _ in range(r.randint(1, 2))]
    if c == 20: return ['PFMERGE', k] + [key(r) for _ in range(r.randint(0, 2))]
    if c == 21: return ['GEOADD', k] + R(r, [[], ['NX'], ['XX'], ['CH']]) + [R(r, ['13.361389', '15.087269', '-122.27652', '0', '179.9', '-180']),
                                                                         R(r, ['38.115556', '37.502669', '37.805186', '0', '85.05', '-85.06']), R(r, MEMBERS)]
    if c == 22: return ['GEOPOS', k] + [R(r, MEMBERS) for _ in range(r.randint(1, 2))]
    if c == 23: return ['GEODIST', k, R(r, MEMBERS), R(r, MEMBERS)] + R(r, [[], ['km'], ['mi']])
    if c == 24:
        a = ['GEOSEARCH', k, 'FROMMEMBER', R(r, MEMBERS)] if r.random() < 0.5 else ['GEOSEARCH', k, 'FROMLONLAT', '15', '37']
        a += R(r, [['BYRADIUS', R(r, ['100', '500', '20000']), 'km'], ['BYBOX', '400', '400', 'km']])
        a.append(R(r, ['ASC', 'DESC']))
        if r.random() < 0.4: a += ['COUNT', str(r.choice([1, 2, 3]))]
        if r.random() < 0.4: a.append(R(r, ['WITHDIST', 'WITHCOORD', 'WITHHASH']))
        return a
    if c == 25: return ['GEOHASH', k] + [R(r, MEMBERS) for _ in range(r.randint(1, 2))]
    if c == 26: return ['OBJECT', 'ENCODING', k]
    if c == 27: return ['DUMP', k] if r.random() < 0.5 else ['XRESTORE', k, key(r)]  # XRESTORE: Runner.restore_from_redis
    if c == 28: return ['ZRANK', k, R(r, MEMBERS)]
    return ['SETRANGE', k, str(r.choice([0, 3, 30, 100])), R(r, VALUES)]

GROUPS = {'str': gen_string, 'exp': gen_expire, 'keys': gen_keys, 'hash': gen_hash, 'list': gen_list,
          'set': gen_set, 'zset': gen_zset, 'bit': gen_bit, 'misc': gen_misc}
WEIGHTS = {'str': 3, 'exp': 1, 'keys': 2, 'hash': 2, 'list': 3, 'set': 2, 'zset': 4, 'bit': 2, 'misc': 2}

def gen_cmd(r, groups):
    g = r.choices(groups, weights=[WEIGHTS[x] for x in groups])[0]
    return GROUPS[g](r)

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

def normalize(cmd, rep, ttl_now=None):
    name = cmd[0].upper()
    if isinstance(rep, ErrReply):
        return rep
    if name.startswith('Z') or name == 'ZADD':
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
    if name in ('KEYS', 'SPOP', 'SSCAN', 'HSCAN', 'SCAN') or (name == 'SORT' and 'nosort' in cmd):
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
    if name in ('TTL', 'PTTL', 'EXPIRETIME', 'PEXPIRETIME') and isinstance(rep, int) and rep > 0:
        q = 1000 if name in ('PTTL', 'PEXPIRETIME') else 1
        rep = ('approx', rep // q)
    return rep

def known(cmd, a, b):
    """Documented deviations, tolerated so fuzzing can go deeper (disable with --strict)."""
    # An error where Redis gives another error: the order of argument checks differs (listed at the end).
    if isinstance(a, ErrReply) and isinstance(b, ErrReply):
        return True
    # BITCOUNT and BITPOS check their arguments before the key, as Redis 7.2 does (7.0: 0, -1 or nil first).
    if cmd[0].upper() in ('BITCOUNT', 'BITPOS') and isinstance(a, ErrReply):
        return True
    return False

def same(cmd, a, b):
    if isinstance(a, tuple) and isinstance(b, tuple) and a and b and a[0] == 'approx' and b[0] == 'approx':
        return abs(a[1] - b[1]) <= 3
    if isinstance(a, ErrReply) or isinstance(b, ErrReply):
        return isinstance(a, ErrReply) and isinstance(b, ErrReply) and a == b
    return a == b

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
        else: v = '?'
        ttl = c.cmd('PTTL', k)
        ttl = ttl // 1000 if ttl > 0 else ttl
        out[k] = (t, v, ttl)
    if db1:  # MOVE and COPY ... DB 1 wrote there
        c.cmd('SELECT', '1')
        for k, v in dump(c).items():
            out['db1:' + k] = v
        c.cmd('SELECT', '0')
    return out

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

    def restart(self):
        self.restarts = getattr(self, 'restarts', 0) + 1
        self.ca.close()
        self.a.kill9()
        self.a.start()
        self.ca = Conn(self.a.port)
        if self.args.resp3: self.ca.cmd('HELLO', '3')

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
                self.db1 = self.db1 or any(c[0] == 'MOVE' or 'DB' in c for c in cmds)
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
                    # documented: LMPOP, ZMPOP and the key space reads (KEYS, SCAN, DBSIZE) run after the transaction's batch
                    cmds = [c for c in cmds if c[0] not in ('KEYS', 'SCAN', 'DBSIZE', 'LMPOP', 'ZMPOP', 'ZRANGEBYLEX', 'ZREVRANGEBYLEX', 'ZREMRANGEBYLEX', 'ZLEXCOUNT') and 'BYLEX' not in c] or [['PING']]
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
            self.db1 = self.db1 or any(c[0] == 'MOVE' or 'DB' in c for c in seq)
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
        p = self.cr.cmd('DUMP', cmd[1])
        return RestoreArgs(['RESTORE', cmd[2], '0', (p or '').encode('latin1'), 'REPLACE'])

    def uncache_hll(self, k):
        """Documented: PFCOUNT of one key does not write the cardinality it computed into the value's cache (header
        bytes 8-15), where Redis does. When the two values differ only there, anykv's is written to redis-server."""
        a, b = self.ca.cmd('GET', k), self.cr.cmd('GET', k)
        if isinstance(a, str) and isinstance(b, str) and a != b and a.startswith('HYLL') and len(a) == len(b) >= 16 \
                and a[:8] == b[:8] and a[16:] == b[16:]:
            self.cr.cmd('SET', k, a.encode('latin1'), 'KEEPTTL')

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
    p.add_argument('--workdir', default='', help='directory for the servers (default: a new temporary one)')
    args = p.parse_args()
    ANYKV = os.path.abspath(args.anykv)
    BASE = args.workdir or tempfile.mkdtemp(prefix='difffuzz-')
    os.makedirs(BASE, exist_ok=True)
    args.groups = args.groups.split(',')
    global SKIP_FAIL, SHORT_EXPIRY, MEMBERS, FIELDS, IDX
    if args.members > 8:
        MEMBERS[:] = ['m%d' % i for i in range(args.members)]
        FIELDS[:] = ['f%d' % i for i in range(args.members)]
        IDX[:] = IDX + [args.members // 2, -args.members // 2, args.members - 1, -args.members, args.members * 2, 7, -7, 20, -20]
    SKIP_FAIL = not args.strict
    SHORT_EXPIRY = args.short_expiry
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
