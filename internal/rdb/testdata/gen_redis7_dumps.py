#!/usr/bin/env python3
"""Writes redis7_dumps.txt: DUMP payloads of redis-server 7.0 (one per line: name, a space, the payload in hex),
covering each encoding it writes. Run against a fresh redis-server on the port given (default 6399)."""
import sys

import redis

r = redis.Redis(port=int(sys.argv[1]) if len(sys.argv) > 1 else 6399)
r.flushall()
big = b"x" * 70000
r.config_set("hash-max-listpack-value", 64)
keys = {
    "str_raw": lambda k: r.set(k, b"hello world"),
    "str_empty": lambda k: r.set(k, b""),
    "str_int8": lambda k: r.set(k, b"-12"),
    "str_int16": lambda k: r.set(k, b"3000"),
    "str_int32": lambda k: r.set(k, b"-2000000000"),
    "str_int64": lambda k: r.set(k, b"9223372036854775807"),
    "str_lzf": lambda k: r.set(k, b"abcabcabcabcabcabcabcabcabcabcabcabc" * 20),
    "str_binary": lambda k: r.set(k, bytes(range(256))),
    "str_big": lambda k: r.set(k, big),
    "hash_listpack": lambda k: r.hset(k, mapping={"a": "1", "b": "-5000", "c": "", "d": "x" * 40, "e": "70000", "f": "-9000000000"}),
    "hash_ht": lambda k: r.hset(k, mapping={"f%d" % i: "v" * (i % 100) for i in range(300)}),
    "list_listpack": lambda k: r.rpush(k, "a", "1", "-1", "127", "-4096", "4095", "32767", "8388607", "2147483647", "9223372036854775807", "", "x" * 70, "y" * 5000),
    "list_big": lambda k: r.rpush(k, *[("e%d" % i) * 20 for i in range(2000)]),
    "list_plain": lambda k: r.rpush(k, "a", big, "b"),
    "set_intset16": lambda k: r.sadd(k, 1, 2, 3, -7),
    "set_intset32": lambda k: r.sadd(k, 1, 100000, -100000),
    "set_intset64": lambda k: r.sadd(k, 1, 10000000000, -9223372036854775808),
    "set_ht": lambda k: r.sadd(k, "a", "b", "c", ""),
    "set_big": lambda k: r.sadd(k, *["m%d" % i for i in range(1000)]),
    "zset_listpack": lambda k: r.zadd(k, {"a": 1, "b": -2.5, "c": float("inf"), "d": float("-inf"), "e": 0.1, "": 3e200}),
    "zset_skiplist": lambda k: r.zadd(k, {"m%d" % i: i / 7 for i in range(300)}),
}
for k, fn in keys.items():
    fn(k)
with open("redis7_dumps.txt", "w") as out:
    out.write("# DUMP payloads of redis-server 7.0.15, written by gen_redis7_dumps.py: name hex\n")
    for k in keys:
        out.write("%s %s\n" % (k, r.dump(k).hex()))
