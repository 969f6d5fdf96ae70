"""The differential fuzzer's command generator: random commands over 6 keys for each group (strings, expiry, keys,
hashes, lists, sets, sorted sets, bitmaps, misc, streams, Lua scripts). difffuzz.py sets SHORT_EXPIRY and widens
MEMBERS, FIELDS and IDX (in place) from its options."""
import time
KEYS = ['k%d' % i for i in range(6)]
MEMBERS = ['m%d' % i for i in range(8)]
FIELDS = ['f%d' % i for i in range(6)]
VALUES = ['', 'a', 'b', 'abc', 'hello', '0', '1', '-1', '5', '10', '-7', '3.5', '1e3', '007', ' 1', '9223372036854775807',
          '-9223372036854775808', '0.1', 'x y', '\x00z', '\xff']
INTS = ['0', '1', '-1', '2', '5', '-3', '10', '100', '9223372036854775807', '-9223372036854775808', '1.5', 'a', '']
FLOATS = ['0', '1', '-1', '0.5', '1.5', '-2.25', '0.1', '1e2', '3', 'inf', '-inf', '+inf', 'abc', '1e400', '0x10', '  2']
SCORES = ['0', '1', '2', '-1', '1.5', '3', '-2.5', '0.1', 'inf', '-inf', '10', '2']
SHORT_EXPIRY = False
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
    if c == 15:
        side = R(r, ['LEFT', 'RIGHT'])
        if r.random() < .5: return ['LMPOP', str(2), k, key(r), side] + (['COUNT', str(r.randint(1, 3))] if r.random() < .5 else [])
        # the blocking forms, with a timeout short enough not to slow the run (in MULTI they do not wait)
        return R(r, [['BLPOP', k, key(r), '0.01'], ['BRPOP', k, key(r), '0.01'], ['BRPOPLPUSH', k, key(r), '0.01'],
                     ['BLMOVE', k, key(r), side, R(r, ['LEFT', 'RIGHT']), '0.01'], ['BLMPOP', '0.01', '2', k, key(r), side]])
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
        end = R(r, ['MIN', 'MAX'])
        if r.random() < .5: return ['ZMPOP', '2', k, key(r), end] + (['COUNT', str(r.randint(1, 3))] if r.random() < .5 else [])
        return R(r, [['BZPOPMIN', k, key(r), '0.01'], ['BZPOPMAX', k, key(r), '0.01'], ['BZMPOP', '0.01', '2', k, key(r), end]])
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
    c = r.randrange(31)
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
    if c in (5, 6):  # HRANDFIELD, ZRANDMEMBER: a count, then the values or scores with it
        a = [('HRANDFIELD', 'ZRANDMEMBER')[c - 5], k]
        if r.random() < 0.7:
            a.append(str(r.choice([0, 1, 2, 5, 100, -1, -3, -20])))
            if r.random() < 0.5: a.append(('WITHVALUES', 'WITHSCORES')[c - 5])
        return a
    if c == 7: return ['SPOP', k, R(r, ['0', '1000'])]
    if c == 8: return ['KEYS', R(r, ['*', 'k[0-2]', 'k?', '*1', 'x*'])]
    if c == 9:
        a = ['SCAN', '0', 'COUNT', '1000']
        if r.random() < 0.4: a += ['MATCH', R(r, ['k[1-3]', '*', 'k?'])]
        if r.random() < 0.4: a += ['TYPE', R(r, ['string', 'list', 'set', 'zset', 'hash', 'none'])]
        return a
    if c == 10:
        # Past 10 members (the scans' default COUNT) redis-server's hash tables answer in pieces: ask for all.
        a = [R(r, ['HSCAN', 'SSCAN', 'ZSCAN']), k, '0'] + (['COUNT', '1000'] if len(MEMBERS) > 10 else [])
        return a + (['MATCH', R(r, ['*', 'm[1-4]', 'f?', '*2'])] if r.random() < 0.3 else [])
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
    if c == 30: return ['SWAPDB', '0', '1']
    return ['SETRANGE', k, str(r.choice([0, 3, 30, 100])), R(r, VALUES)]

# Streams: explicit IDs only (a bare * is the wall clock), a small ID space so adds, ranges, trims and groups meet.
CONSUMERS = ['c1', 'c2', 'c3']

def xms(r): return str(r.choice([0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 7, 8, 10, 12, 15, 20]))

def xkey(r):
    """Streams mostly in 3 keys, so that groups, their reads and claims meet."""
    return R(r, KEYS[:3]) if r.random() < 0.7 else key(r)

def xid(r):
    """An explicit entry ID, sometimes only its milliseconds (a range's start or end fills in the sequence)."""
    o = r.random()
    if o < 0.12: return xms(r)
    if o < 0.15: return R(r, ['0-0', '0-1', '18446744073709551615-18446744073709551615', '1-x', 'x'])
    return '%s-%d' % (xms(r), r.choice([0, 0, 0, 1, 1, 2]))

def xbound(r, end):
    o = r.random()
    if o < 0.3: return '+' if end else '-'
    if o < 0.45: return '(' + xid(r)
    return xid(r)

def xfields(r):
    a = []
    for _ in range(r.choices([1, 2, 3], weights=[6, 3, 1])[0]): a += [R(r, FIELDS), R(r, VALUES)]
    return a

def xtrim_args(r):
    if r.random() < 0.5: a = ['MAXLEN', str(r.choice([0, 1, 2, 3, 5, 10, -1]))]
    else: a = ['MINID', xid(r)]
    if r.random() < 0.5: a.insert(1, '=')
    return a

def gen_stream(r):
    k = xkey(r)
    g, c = R(r, ['g1', 'g1', 'g1', 'g2']), R(r, CONSUMERS)
    n = r.randrange(44)
    if n <= 7 or n >= 42:
        a = ['XADD', k]
        if r.random() < 0.1: a.append('NOMKSTREAM')
        if r.random() < 0.15: a += xtrim_args(r)
        o = r.random()
        a.append('%s-*' % xms(r) if o < 0.4 else xid(r) if o < 0.55 else '%d-%s' % (r.randint(1, 40), R(r, ['0', '1', '*'])))
        return a + xfields(r)
    if n == 8: return ['XLEN', k]
    if n in (9, 10):
        rev = r.random() < 0.4
        a = ['XREVRANGE', k, xbound(r, True), xbound(r, False)] if rev else ['XRANGE', k, xbound(r, False), xbound(r, True)]
        if r.random() < 0.4: a += ['COUNT', str(r.choice([0, 1, 2, 3, 10, -1]))]
        return a
    if n == 11: return ['XDEL', k] + [xid(r) for _ in range(r.randint(1, 3))]
    if n == 12: return ['XTRIM', k] + xtrim_args(r)
    if n in (13, 14):
        ks = [k] + ([xkey(r)] if r.random() < 0.4 else [])
        a = ['XREAD']
        if r.random() < 0.4: a += ['COUNT', str(r.choice([0, 1, 2, 5]))]
        return a + ['STREAMS'] + ks + [R(r, ['0', '0-0', '$', xid(r), xid(r)]) for _ in ks]
    if n == 15:
        a = ['XSETID', k, xid(r)]
        if r.random() < 0.3: a += ['ENTRIESADDED', str(r.choice([0, 1, 3, 5, 10, 100])), 'MAXDELETEDID', xid(r)]
        return a
    if n in (16, 17, 38, 39, 40, 41):
        a = ['XGROUP', 'CREATE', k, g, R(r, ['0', '0', '$', xid(r), xid(r)])]
        if r.random() < 0.7: a.append('MKSTREAM')
        if r.random() < 0.25: a += ['ENTRIESREAD', str(r.choice([0, 1, 2, 5, 10, -1]))]
        return a
    if n == 18: return ['XGROUP', 'DESTROY', k, g] if r.random() < 0.5 else ['XGROUP', 'CREATE', k, g, '0', 'MKSTREAM']
    if n == 19:
        a = ['XGROUP', 'SETID', k, g, R(r, ['0', '$', xid(r)])]
        if r.random() < 0.25: a += ['ENTRIESREAD', str(r.choice([0, 1, 2, 5, 10, -1]))]
        return a
    if n == 20: return ['XGROUP', 'CREATECONSUMER', k, g, c]
    if n == 21: return ['XGROUP', 'DELCONSUMER', k, g, c]
    if n in (22, 23, 24, 25):
        ks = [k] + ([xkey(r)] if r.random() < 0.2 else [])
        a = ['XREADGROUP', 'GROUP', g, c]
        if r.random() < 0.5: a += ['COUNT', str(r.choice([0, 1, 2, 3]))]
        if r.random() < 0.15: a.append('NOACK')
        return a + ['STREAMS'] + ks + [R(r, ['>', '>', '>', '0', xid(r)]) for _ in ks]
    if n in (26, 27): return ['XACK', k, g] + [xid(r) for _ in range(r.randint(1, 3))]
    if n == 28: return ['XPENDING', k, g]
    if n == 29:
        a = ['XPENDING', k, g, xbound(r, False), xbound(r, True), str(r.choice([0, 1, 2, 5, 10, -1]))]
        if r.random() < 0.4: a.append(c)
        return a
    if n in (30, 31):
        a = ['XCLAIM', k, g, c, '0'] + [xid(r) for _ in range(r.randint(1, 3))]
        if r.random() < 0.5: a.append('JUSTID')
        return a
    if n == 32:
        a = ['XAUTOCLAIM', k, g, c, '0', R(r, ['0', '-', xid(r)])]
        if r.random() < 0.4: a += ['COUNT', str(r.choice([1, 2, 3, 10]))]
        if r.random() < 0.5: a.append('JUSTID')
        return a
    if n == 33: return ['TYPE', k]
    if n == 34: return ['DEL', k] if r.random() < 0.5 else ['XLEN', k]
    if n == 35: return ['EXISTS', k, key(r)]
    if n == 36: return ['RENAME', k, key(r)]
    if n == 37: return ['COPY', k, key(r)] + (['REPLACE'] if r.random() < 0.5 else [])
    return ['XADD', k, '%d-*' % r.randint(1, 40)] + xfields(r)

GROUPS = {'str': gen_string, 'exp': gen_expire, 'keys': gen_keys, 'hash': gen_hash, 'list': gen_list,
          'set': gen_set, 'zset': gen_zset, 'bit': gen_bit, 'misc': gen_misc,
          'stream': gen_stream}
WEIGHTS = {'str': 3, 'exp': 1, 'keys': 2, 'hash': 2, 'list': 3, 'set': 2, 'zset': 4, 'bit': 2, 'misc': 2, 'stream': 3}

def gen_cmd(r, groups):
    g = r.choices(groups, weights=[WEIGHTS[x] for x in groups])[0]
    return GROUPS[g](r)

# ---------------------------------------------------------------- Lua scripts
# The script group: EVAL of scripts that call the other groups' commands (redis.call, redis.pcall, Lua's pcall)
# over KEYS and ARGV and return, convert or describe their results; scripts of Lua alone (Redis's Lua -> RESP
# conversions, cjson, sha1hex, tonumber/tostring, string.format); scripts that fail after writing; EVALSHA,
# EVAL_RO, SCRIPT LOAD/EXISTS/FLUSH, bad numkeys, and blocking or forbidden commands in a script. Deterministic:
# no TIME or random commands; unordered replies (SMEMBERS, HKEYS, ...) are sorted in the script, TTLs are
# reduced to their sign, and floats given to redis.call as Lua numbers are exact ones.
import hashlib, re

# commands whose replies a script sorts (a table of strings; HGETALL's pairs sorted too)
LUA_UNORDERED = {'SMEMBERS', 'SINTER', 'SUNION', 'SDIFF', 'HKEYS', 'HVALS', 'HGETALL'}
# reduced to whether they are positive (the clock)
LUA_CLOCK = {'TTL', 'PTTL', 'EXPIRETIME', 'PEXPIRETIME'}
# refused in a script, by both (blocking commands that would block, or not allowed from scripts)
LUA_FORBIDDEN = [['BLPOP', 'k0', '0'], ['BRPOP', 'k1', 'k2', '1'], ['BLMOVE', 'k0', 'k1', 'LEFT', 'RIGHT', '0'],
                 ['BRPOPLPUSH', 'k0', 'k1', '0'], ['BZPOPMIN', 'k0', '0'], ['BZPOPMAX', 'k2', '1'],
                 ['MULTI'], ['EXEC'], ['WATCH', 'k0'], ['SUBSCRIBE', 'c'], ['CONFIG', 'GET', 'maxmemory'],
                 ['EVAL', 'return 1', '0'], ['SCRIPT', 'FLUSH'], ['NOSUCHCMD', 'k0'], ['GET'], ['SET', 'k0'],
                 ['XREAD', 'BLOCK', '0', 'STREAMS', 'k0', '$'], ['CLIENT', 'ID'], ['SHUTDOWN'], ['DEBUG', 'SLEEP', '0']]
# scripts EVALSHA runs after SCRIPT LOAD (their SHA1s) or EVAL (cached too)
LUA_LIB = ["return redis.call('GET', KEYS[1])",
           "return {KEYS[1], ARGV[1], #KEYS, #ARGV}",
           "return redis.call('INCR', KEYS[1])",
           "return redis.pcall('LPUSH', KEYS[1], ARGV[1])",
           "#!lua flags=no-writes\nreturn redis.call('TYPE', KEYS[1])",
           "#!lua\nreturn redis.call('SET', KEYS[1], ARGV[1])",
           "redis.call('HSET', KEYS[1], 'f1', ARGV[1]); return redis.call('HGET', KEYS[1], 'f1')",
           "return redis.call('EXISTS', KEYS[1], KEYS[2])"]

def sha1(s): return hashlib.sha1(s.encode('latin1')).hexdigest()

def lua_lit(s):
    """A Lua string literal of s (bytes as latin1 characters)."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch in "'\\": out.append('\\' + ch)
        elif 32 <= o < 127: out.append(ch)
        else: out.append('\\%d' % o)
    return "'" + ''.join(out) + "'"

INT_RE = re.compile(r'^-?(0|[1-9][0-9]{0,14})$')

# The Lua helper that describes a value by its Lua type (d(v)): a string 's:x', a number 'n:5', a boolean
# 'b:false', a status {ok=} 'ok:x', an error {err=} 'err:' and its first word, a table [..] up to its largest
# integer key (RESP3's nulls are holes, and # of a table with holes is any of its borders: Lua 5.1's and
# gopher-lua's differ), RESP3's map, set and double tables too, a map's pairs sorted.
LUA_DESC = ("local function d(v) local t = type(v) "
            "if t == 'table' then "
            "if v.ok then return 'ok:' .. tostring(v.ok) end "
            "if v.err then return 'err:' .. (string.match(tostring(v.err), '^%S+') or '') end "
            "if v.double then return 'dbl:' .. tostring(v.double) end "
            "if v.map or v.set then local o = {} for k, x in pairs(v.map or v.set) do o[#o + 1] = d(k) .. '=' .. d(x) end "
            "table.sort(o) return (v.map and 'map{' or 'set{') .. table.concat(o, ',') .. '}' end "
            "local n = 0 for k in pairs(v) do if type(k) == 'number' and k > n then n = k end end "
            "local o = {} for i = 1, n do o[i] = d(v[i]) end return '[' .. table.concat(o, ',') .. ']' end "
            "if t == 'string' then return 's:' .. v end "
            "return t .. ':' .. tostring(v) end ")
# sorts a table of strings (unordered replies), HGETALL's as pairs
LUA_SORT = ("local function srt(v, pairs2) if type(v) ~= 'table' or v.err then return v end "
            "if pairs2 then local p = {} for i = 1, #v, 2 do p[#p + 1] = v[i] .. '=' .. tostring(v[i + 1]) end table.sort(p) return p end "
            "local o = {} for i = 1, #v do o[i] = v[i] end table.sort(o) return o end ")
LUA_SIGN = "local function sg(v) if type(v) == 'number' and v > 0 then return 1 end return v end "

LEX = ('ZRANGEBYLEX', 'ZREVRANGEBYLEX', 'ZREMRANGEBYLEX', 'ZLEXCOUNT')

def script_inner(r):
    """A command of another group, for a script to call; no lexicographic range (unspecified over mixed scores,
    which difffuzz checks outside scripts only)."""
    while True:
        g = r.choice([gen_string, gen_string, gen_hash, gen_list, gen_list, gen_set, gen_zset, gen_zset, gen_bit,
                      gen_keys, gen_expire])
        c = g(r)
        if c[0] not in LEX and 'BYLEX' not in c:
            return c

class LuaCall:
    """Turns commands into redis.call/pcall expressions over KEYS and ARGV (its keys and argv lists)."""
    def __init__(self, r):
        self.r, self.keys, self.argv = r, [], []

    def key(self, k):
        if k not in self.keys: self.keys.append(k)
        return 'KEYS[%d]' % (self.keys.index(k) + 1)

    def arg(self, a):
        r = self.r
        if a in KEYS:
            if r.random() < 0.1:  # a key the script does not declare (anykv runs such a script again, wide)
                self.argv.append(a)
                return R(r, [lua_lit(a), 'ARGV[%d]' % len(self.argv)])
            return self.key(a)
        o = r.random()
        if o < 0.6:
            self.argv.append(a)
            return 'ARGV[%d]' % len(self.argv)
        if INT_RE.match(a) and o < 0.85: return a  # a Lua number: Redis converts it back to the same string
        return lua_lit(a)

    def expr(self, cmd, fn='call'):
        name = cmd[0] if self.r.random() < 0.7 else cmd[0].lower()
        return 'redis.%s(%s)' % (fn, ', '.join([lua_lit(name)] + [self.arg(a) for a in cmd[1:]]))

    def wrapped(self, cmd, fn='call'):
        """The call as an expression whose value compares alike: unordered replies sorted, clock ones signed."""
        n = cmd[0].upper()
        e = self.expr(cmd, fn)
        if n in LUA_UNORDERED: return 'srt(%s, %s)' % (e, 'true' if n == 'HGETALL' else 'false')
        if n in LUA_CLOCK: return 'sg(%s)' % e
        if n in ('EXPIRE', 'PEXPIRE') and {'GT', 'LT'} & set(cmd):
            return '(%s and 0)' % e  # its 0 or 1 may tie differently (difffuzz.same); the TTLs are compared
        return e

    def eval(self, body, ro=False):
        pre = ''.join(h for h, use in ((LUA_DESC, 'd('), (LUA_SORT, 'srt('), (LUA_SIGN, 'sg(')) if use in body)
        return ['EVAL_RO' if ro else 'EVAL', pre + body, str(len(self.keys))] + self.keys + self.argv

def lua_value(r, depth=0):
    """A Lua expression to return: numbers (floats truncated), booleans, strings, tables with holes, nested
    tables, status and error tables, redis.error_reply/status_reply."""
    c = r.randrange(16 if depth < 2 else 8)
    if c == 0: return R(r, ['0', '1', '-1', '3.99', '-3.99', '0.5', '-0.5', '1e15', '2^53', '-2^40', '1/3', '7/2', '100.0'])
    if c == 1: return R(r, ['true', 'false', 'nil', "{pcall(error)}", "{pcall(error, 42)}", "{pcall(string.rep)}"])
    if c == 2: return lua_lit(R(r, VALUES))
    if c == 3: return R(r, ['ARGV[1]', 'KEYS[1]', '#ARGV', 'tostring(#KEYS)'])
    if c == 4: return R(r, ["tostring(1e15)", "tostring(0.1)", "tostring(1/3)", "tostring(-0)", "tostring(2^63)",
                            "tostring(100)", "tostring(1e100)", "tostring(-1.5)", "tostring(math.huge)",
                            "tostring(-math.huge)", "tostring(3 % -2)", "tostring(2^-1074)", "tostring(123456789012345678)"])
    if c == 5: return R(r, ["tonumber('0x10')", "tonumber('1e3')", "tonumber(' 5 ')", "tonumber('5x')", "tonumber('')",
                            "tonumber('10', 2)", "tonumber('z', 36)", "tostring(tonumber('inf'))", "tostring(tonumber('1e400'))",
                            "tonumber('-0')", "tonumber('  0x1p4  ')", "tonumber('.5')", "tonumber('5.')", "tonumber('1e')",
                            "tonumber(ARGV[1])", "tostring(tonumber(ARGV[1]))", "tonumber('9223372036854775807')",
                            "tonumber('ff', 16)", "tonumber('7', 8)", "tonumber('8', 8)"])
    if c == 6: return R(r, ["string.format('%d', 3.7)", "string.format('%.2f', 1/3)", "string.format('%5.1f|%-5d|', 2.25, 7)",
                            "string.format('%g', 1e20)", "string.format('%g', 0.1)", "string.format('%s', 1.5)",
                            "string.format('%x %X %o', 255, 255, 8)", "string.format('%e', 12345.678)",
                            "string.format('%q', 'a\\0b\\n\"')", "string.format('%5s|%-5s|', 'ab', 'cd')",
                            "string.format('%.3s', 'abcdef')", "string.format('%c%c', 72, 105)", "string.format('%i', -42)",
                            "string.format('%+d % d', 5, 5)", "string.format('%05.1f', -2.5)", "string.format('%.14g', 2^53)",
                            "string.format('%d', -0)", "string.format('%s', ARGV[1])", "string.format('%10.4f', math.pi)",
                            "string.format('%G', 1e-10)", "string.format('%u', 42)", "string.format('%%')"])
    if c == 7: return R(r, ["redis.sha1hex('')", "redis.sha1hex(ARGV[1])", "redis.sha1hex('abc')", "redis.sha1hex(123)",
                            "string.upper(ARGV[1])", "string.len(ARGV[1])", "string.rep('ab', 3, ',')", "#ARGV[1]",
                            "string.byte(ARGV[1], 1, -1)", "string.sub(ARGV[1], 2)", "ARGV[1] .. 1.5", "1 .. ''",
                            "{string.byte('abc', %s, %s)}" % (R(r, ['0', '1', '-1', '-10', '4']), R(r, ['10', '-2', '0', '2'])),
                            "string.char(%s)" % R(r, ['72, 105', '256', '-1', '65.9', "'67'"]), "string.lower('\\192B\\233')",
                            "tostring(%s %% %s)" % (R(r, ['5', '-5', '7.5', '1e17', '0.3']), R(r, ['0', '3', '-2', 'math.huge', '0.1'])),
                            "tostring(%s)" % R(r, ['(-8)^(1/3)', 'math.fmod(7, 0)', 'math.log(-1)', 'math.log10(-1)', 'math.acos(2)',
                                                   'math.abs(0/0)', 'math.sin(1/0)', 'select(2, math.modf(1/0))', '-(0/0)'])])
    if c == 8:
        n = r.randint(0, 4)
        items = [lua_value(r, depth + 1) for _ in range(n)]
        return '{' + ', '.join(items) + '}'
    if c == 9: return '{%s, nil, %s}' % (lua_value(r, depth + 1), lua_value(r, depth + 1))
    if c == 10: return R(r, ["{ok='x'}", "{ok='OK'}", "{err='x'}", "{err='WRONGTYPE custom'}", "{err='My Error'}",
                             "{ok=''}", "{err=''}", "{ok=1}", "{err=1}", "{ok='a', err='b'}", "{1, 2, ok='s'}",
                             "{a=1, b=2}", "{[1]='x', [3]='z'}", "{[2]='y'}", "{x=1, 'arr'}"])
    if c == 11: return R(r, ["redis.error_reply('bad')", "redis.error_reply('My Error')", "redis.error_reply('-ERR minus')",
                             "redis.status_reply('FINE')", "redis.status_reply('')", "redis.error_reply('')",
                             "redis.error_reply('WRONGTYPE x y')", "redis.status_reply('a b')"])
    if c == 12: return R(r, ["{double=1.5}", "{double=3}", "{double=0.1}", "{big_number='123456789012345678901'}",
                             "{map={a=1}}", "{set={x=true}}", "{verbatim_string={format='txt', string='hi'}}",
                             "{double='x'}", "{map={}}", "{set={}}"])
    if c == 13: return 'cjson.encode(%s)' % lua_json(r)
    if c == 14: return R(r, ['cjson.decode(%s)', 'cjson.encode(cjson.decode(%s))', 'd(cjson.decode(%s))']) % lua_lit(json_text(r))
    return '{%s}' % ', '.join(lua_value(r, depth + 1) for _ in range(r.randint(1, 3)))

def lua_json(r, depth=0):
    """A Lua value cjson encodes deterministically: arrays, objects of one key (table order), numbers, strings."""
    c = r.randrange(8 if depth < 2 else 5)
    if c == 0: return R(r, ['0', '1', '-1', '1.5', '0.1', '1/3', '1e20', '-0', '2^53', '1e-7', '123456789012345', 'math.huge', '0/0'])
    if c == 1: return lua_lit(R(r, VALUES + ['"q"', 'a/b', '\\', '\n\t', '<>&', '\x01', 'é']))
    if c == 2: return R(r, ['true', 'false', 'cjson.null', 'nil'])
    if c == 3: return 'ARGV[1]'
    if c == 4: return '{}'
    if c == 5: return '{%s}' % ', '.join(lua_json(r, depth + 1) for _ in range(r.randint(1, 3)))
    if c == 6: return '{%s=%s}' % (R(r, ['a', 'b', 'x_1']), lua_json(r, depth + 1))
    return '{[%s]=%s}' % (R(r, ['1', '2', '3', '5', "'1'", '1.5', '-1', '0']), lua_json(r, depth + 1))

def json_text(r):
    return R(r, ['[1,2,3]', '{"a":1}', '"x"', '[1,null,3]', '[]', '{}', 'null', 'true', '1.5', '-0', '1e3',
                 '[[1,[2]],{"b":[false]}]', '"\\u00e9\\n\\/"', '[1,2,', '{"a"}', '', '01', '1e400', '"\\ud83d\\ude00"',
                 '[1.0e2, -2.5E-1]', '{"k": {"k": {"k": "v"}}}', '  [ 1 , 2 ]  ', 'nan', '[1]x', '"\x01"',
                 '123456789012345678', '{"1":"a","2":"b"}', '[0.1]'])

def gen_script(r):
    lc = LuaCall(r)
    c = r.randrange(30)
    if c <= 6:
        # one command, its reply returned as is, through pcall, or described
        cmd = script_inner(r)
        m = r.randrange(6)
        if r.random() < 0.15 and m < 3:  # the command's reply in RESP3, converted to Lua as Redis 7 converts it
            return lc.eval(('redis.setresp(3) return %s', 'redis.setresp(3) return d(%s)')[m == 2] % lc.wrapped(cmd, ('call', 'pcall')[m > 0]))
        if m == 0: return lc.eval('return ' + lc.wrapped(cmd))
        if m == 1: return lc.eval('return ' + lc.wrapped(cmd, 'pcall'))
        if m == 2: return lc.eval('return d(%s)' % lc.wrapped(cmd, 'pcall'))
        if m == 3: return lc.eval('return {%s}' % lc.wrapped(cmd, 'pcall'))
        if m == 4:  # Lua's pcall of redis.call: Redis 7 raises its error as a table
            return lc.eval('local ok, e = pcall(function() return %s end) if ok then return d(e) end '
                           "return {'caught', type(e), type(e) == 'table' and string.match(tostring(e.err), '^%%S+') or 'str'}" % lc.wrapped(cmd))
        return lc.eval("local r = %s if type(r) == 'table' and r.err then return string.match(r.err, '^%%S+') end "
                       "return cjson.encode({r})" % lc.wrapped(cmd, 'pcall'))
    if c <= 10:
        # several commands, their replies gathered (nil -> false keeps the array whole), a write after a caught error
        n = r.randint(2, 5)
        body = 'local t = {} '
        for i in range(n):
            body += 't[%d] = %s ' % (i + 1, lc.wrapped(script_inner(r), R(r, ['call', 'pcall', 'pcall'])))
        if r.random() < 0.5: body += 'return t'
        else: body += "local o = {} for i = 1, %d do o[i] = d(t[i]) end return o" % n
        return lc.eval(body)
    if c <= 13:
        # pcall catches a WRONGTYPE or bad argument error, then the script goes on and writes
        k = key(r)
        bad = R(r, [['INCR', k], ['LPUSH', k, 'x'], ['HSET', k, 'f', 'v'], ['SADD', k, 'm'], ['ZADD', k, '1', 'm'],
                    ['INCRBY', k, 'x'], ['ZADD', k, 'nan', 'm'], ['LSET', k, '100', 'v'], ['SETRANGE', k, '-1', 'x'],
                    ['GET', k], ['HINCRBYFLOAT', k, 'f', 'inf'], ['EXPIRE', k, 'x'], ['SET', k, 'v', 'EX', '0'],
                    ['RENAME', 'nosuchkey', k], ['BITFIELD', k, 'GET', 'u64', '0']])
        after = script_inner(r)
        return lc.eval("local r = redis.pcall(%s) local w = %s return {d(r), d(w), type(r) == 'table' and r.err ~= nil}"
                       % (lc.expr(bad, 'pcall')[len('redis.pcall('):-1], lc.wrapped(after)))
    if c <= 15:
        # a script that fails midway after writes: Redis keeps them
        writes = ' '.join(lc.expr(script_inner(r), R(r, ['call', 'pcall'])) for _ in range(r.randint(1, 3)))
        fail = R(r, ["error('boom')", "error({err='MYERR failed'})", "return redis.call('INCR', KEYS[1]) + nil",
                     "local x = nil; return x.y", "return redis.error_reply('late')", "redis.call('NOSUCH')",
                     "error('boom', 0)", "return {err='after writes'}", "redis.call('LPUSH', KEYS[1], 'x') error('after')"])
        if 'KEYS[1]' in fail and not lc.keys: lc.key(key(r))
        return lc.eval(writes + ' ' + fail)
    if c <= 19:
        return lc.eval('return ' + lua_value(r))
    if c == 20:
        # a blocking or forbidden command
        cmd = R(r, LUA_FORBIDDEN)
        return lc.eval('return %s' % lc.expr(cmd, R(r, ['call', 'pcall'])) if r.random() < 0.5 else
                       'return d(%s)' % lc.expr(cmd, 'pcall'))
    if c == 21:
        # EVAL_RO: a read, a write (refused), a write caught by pcall
        cmd = script_inner(r)
        return lc.eval(R(r, ['return %s', 'return d(%s)']) % lc.wrapped(cmd, R(r, ['call', 'pcall'])), ro=True)
    if c in (22, 23):
        s = R(r, LUA_LIB)
        ks = [key(r) for _ in range(r.randint(0, 2))]
        args = [R(r, VALUES) for _ in range(r.randint(0, 2))]
        o = r.randrange(5)
        if o == 0: return ['SCRIPT', 'LOAD', s]
        if o == 1: return ['EVAL', s, str(len(ks))] + ks + args
        return [R(r, ['EVALSHA', 'EVALSHA', 'EVALSHA_RO']), R(r, [sha1(s), sha1(s).upper()]), str(len(ks))] + ks + args
    if c == 24:
        return ['SCRIPT', 'EXISTS'] + [R(r, [sha1(s) for s in LUA_LIB] + ['0' * 40, 'x']) for _ in range(r.randint(1, 4))]
    if c == 25:
        o = r.randrange(6)
        if o == 0: return ['EVALSHA', R(r, ['0' * 40, 'ffffffffffffffffffffffffffffffffffffffff', 'abc', '']), '0']
        if o == 1: return ['SCRIPT', 'FLUSH'] + R(r, [[], ['SYNC'], ['ASYNC']])
        if o == 2: return ['EVAL', 'return 1', R(r, ['-1', '3', 'x', '1.5', ''])] + [key(r) for _ in range(r.randint(0, 2))]
        if o == 3: return ['EVAL', R(r, ['return', 'return (', 'x =', '#!lua flags=bogus\nreturn 1', '#!notlua\nreturn 1', ''])] + ['0']
        if o == 4: return ['SCRIPT', 'LOAD', R(r, ['return (', 'return 2'])]
        return ['EVAL_RO', R(r, ["#!lua\nreturn 1", "#!lua flags=no-writes\nreturn redis.call('DEL', KEYS[1])"]), '1', key(r)]
    if c == 26:
        # SELECT in a script: reads the other database, the caller's stays
        k = lc.key(key(r))
        return lc.eval("redis.call('SELECT', 1) local a = redis.call('EXISTS', %s) redis.call('SELECT', 0) "
                       "return {a, redis.call('EXISTS', %s)}" % (k, k))
    # numbers and strings given to commands, converted both ways
    k = lc.key(key(r))
    return lc.eval(R(r, ["redis.call('SET', %s, 3.0) return redis.call('GET', %s)",
                         "redis.call('SET', %s, 1e15) return redis.call('GET', %s)",
                         "redis.call('SET', %s, -7) return redis.call('INCRBY', %s, 2.0)",
                         "redis.call('SET', %s, 2.5) return redis.call('GET', %s)",
                         "redis.call('SET', %s, true) return redis.call('GET', %s)",
                         "redis.call('RPUSH', %s, 1, 2.5, '3') return redis.call('LRANGE', %s, 0, -1)",
                         "return redis.call('EXISTS', %s, %s) + 0.5",
                         "redis.call('HSET', %s, 'n', 10) return redis.call('HINCRBY', %s, 'n', -3)",
                         "redis.call('DEL', %s) return redis.call('INCRBYFLOAT', %s, 1.5)",
                         "return tonumber(redis.call('SET', %s, '12') and redis.call('GET', %s)) * 3",
                         "return redis.call('SET', %s, {}) or redis.call('GET', %s)"]) % (k, k))

GROUPS['script'] = gen_script
WEIGHTS['script'] = 2
