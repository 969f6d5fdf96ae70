"""The HTTP/JSON API of a real anykv server, through `requests`, and its agreement with RESP and memcached.

Uses the `anykv` fixture of conftest.py (a fresh server per test, all three protocols on free loopback ports).
"""
import re
import socket
import time
import urllib.parse

import pytest
import redis
import requests

from conftest import Anykv, anykv_binary


def key_url(server, key, table="default"):
    """The item URL of a key given as str or bytes; every byte outside the unreserved set is percent-encoded."""
    if isinstance(key, str):
        key = key.encode()
    quoted = urllib.parse.quote(key, safe="")
    return f"http://{server.host}:{server.http_port}/v1/tables/{urllib.parse.quote(table, safe='')}/keys/{quoted}"


def base(server):
    return f"http://{server.host}:{server.http_port}"


def test_binary_values_and_keys_round_trip(anykv):
    value = bytes(range(256)) * 3
    # Keys "." and ".." are left out: requests (rightly, RFC 3986) turns %2E back into "." and removes dot segments.
    for key in ["plain", "a/b", "/", "a/../b", ".hidden", "with space", "ключ", b"\x00\xff\xfe", "100%", "q?x=1#f"]:
        r = requests.put(key_url(anykv, key), data=value)
        assert r.status_code == 201, r.text
        assert r.json()["version"] >= 1
        assert r.headers["ETag"] == f'"{r.json()["version"]}"'
        g = requests.get(key_url(anykv, key))
        assert g.status_code == 200
        assert g.content == value
        assert g.headers["Content-Type"] == "application/octet-stream"
        assert g.headers["X-Anykv-Version"] == str(r.json()["version"])
        assert "X-Anykv-Expires" not in g.headers


def test_put_replaces_with_200_and_conditional_requests(anykv):
    url = key_url(anykv, "k")
    assert requests.put(url, data=b"one", headers={"If-None-Match": "*"}).status_code == 201
    r = requests.put(url, data=b"two", headers={"If-None-Match": "*"})
    assert r.status_code == 412 and r.json()["error"]["code"] == "precondition_failed"
    tag = requests.head(url).headers["ETag"]
    assert requests.get(url, headers={"If-None-Match": tag}).status_code == 304
    assert requests.put(url, data=b"two", headers={"If-Match": tag}).status_code == 200
    assert requests.put(url, data=b"three", headers={"If-Match": tag}).status_code == 412
    assert requests.get(url).content == b"two"
    old = requests.put(url + "?return=old", data=b"four")
    assert old.status_code == 200 and old.content == b"two"
    assert requests.delete(url).status_code == 204
    assert requests.delete(url).status_code == 404


def test_ttl_expires(anykv):
    url = key_url(anykv, "short")
    assert requests.put(url + "?ttl_ms=400", data=b"v").status_code == 201
    r = requests.get(url)
    assert r.status_code == 200
    assert 0 < int(r.headers["X-Anykv-TTL-Ms"]) <= 400
    assert int(r.headers["X-Anykv-Expires"]) > time.time() * 1000
    time.sleep(0.6)
    assert requests.get(url).status_code == 404
    r = requests.put(url, data=b"v", headers={"X-Anykv-TTL": "0"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_request"


def test_query_pages_in_key_order_and_count(anykv):
    keys = [f"user:{i:03d}" for i in range(30)] + ["other"]
    for k in keys:
        requests.put(key_url(anykv, k), data=k.encode())
    got, cursor = [], None
    while True:
        params = {"prefix": "user:", "limit": 7, "values": "true"}
        if cursor:
            params["cursor"] = cursor
        page = requests.get(f"{base(anykv)}/v1/tables/default/keys", params=params).json()
        assert len(page["items"]) <= 7
        for it in page["items"]:
            assert it["value"] == it["key"]
            got.append(it["key"])
        cursor = page.get("cursor")
        if not cursor:
            break
    assert got == sorted(k for k in keys if k.startswith("user:"))
    count = requests.get(f"{base(anykv)}/v1/tables/default/count", params={"start": "user:010", "end": "user:020"})
    assert count.json() == {"count": 10}


def test_tables_are_resp_databases(anykv):
    r0 = redis.Redis(host=anykv.host, port=anykv.resp_port, db=0)
    r1 = redis.Redis(host=anykv.host, port=anykv.resp_port, db=1)
    r0.set("from-resp", b"zero")
    r1.set("from-resp", b"one")
    assert requests.get(key_url(anykv, "from-resp")).content == b"zero"
    assert requests.get(key_url(anykv, "from-resp", table="db1")).content == b"one"
    assert requests.get(f"{base(anykv)}/v1/tables").json() == {"tables": ["db1", "default"]}
    # And the other way round, with a TTL Redis sees.
    requests.put(key_url(anykv, "from-http", table="db1") + "?ttl=100", data=b"\x00bin")
    assert r1.get("from-http") == b"\x00bin"
    assert 0 < r1.ttl("from-http") <= 100
    # Counters are shared: HTTP incr and Redis INCRBY add to one value.
    assert requests.post(key_url(anykv, "n") + "/incr?by=5").json() == {"value": 5}
    assert r0.incrby("n", 10) == 15
    assert requests.post(key_url(anykv, "n") + "/incr").json() == {"value": 16}
    r0.set("s", "abc")
    bad = requests.post(key_url(anykv, "s") + "/incr")
    assert bad.status_code == 409 and bad.json()["error"]["code"] == "not_integer"


def memcache_command(server, line):
    with socket.create_connection((server.host, server.memcache_port), timeout=5) as s:
        s.sendall(line)
        data = b""
        while not (data.endswith(b"END\r\n") or data.endswith(b"STORED\r\n")):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        return data


def test_memcache_shares_table_default_and_flags(anykv):
    assert memcache_command(anykv, b"set mc 42 0 5\r\nhello\r\n") == b"STORED\r\n"
    r = requests.get(key_url(anykv, "mc"))
    assert r.content == b"hello" and r.headers["X-Anykv-Flags"] == "42"
    requests.put(key_url(anykv, "fromhttp") + "?flags=7", data=b"abc")
    assert memcache_command(anykv, b"get fromhttp\r\n") == b"VALUE fromhttp 7 3\r\nabc\r\nEND\r\n"


def test_active_cloud_db_api(anykv):
    b = base(anykv)
    assert requests.post(f"{b}/put", params={"key": "k", "val": "v1"}).json() == {"error": ""}
    assert requests.post(f"{b}/put", data={"key": "k2", "value": "v2"}).json() == {"error": ""}
    assert requests.get(f"{b}/get", params={"key": "k"}).json() == {"k": "v1", "error": ""}
    assert requests.post(f"{b}/get", data={"key": "nope"}).json() == {"nope": "", "error": "not found"}
    assert requests.get(f"{b}/query").json() == {"k": "v1", "k2": "v2"}
    assert requests.post(f"{b}/count").json() == {"count": 2, "error": ""}
    assert requests.post(f"{b}/delete", data={"key": "k"}).json() == {"error": ""}
    assert requests.get(key_url(anykv, "k2")).content == b"v2"  # the same table as /v1 and RESP db 0
    assert requests.get(f"{b}/put", params={"key": "x", "val": "y"}).status_code == 405


def test_errors_are_json_with_stable_codes(anykv):
    b = base(anykv)
    cases = [
        ("GET", key_url(anykv, "missing"), 404, "not_found"),
        ("GET", f"{b}/nowhere", 404, "not_found"),
        ("PATCH", key_url(anykv, "k"), 405, "method_not_allowed"),
        ("GET", f"{b}/v1/tables/default/keys?limit=0", 400, "bad_request"),
        ("GET", f"{b}/v1/tables/default/keys?cursor=garbage", 400, "bad_request"),
        ("PUT", key_url(anykv, "k") + "?flags=-1", 400, "bad_request"),
        ("PUT", key_url(anykv, "k" * 70000), 400, "key_too_large"),
    ]
    for method, url, status, code in cases:
        r = requests.request(method, url, data=b"v")
        assert r.status_code == status, (method, url, r.text)
        assert r.headers["Content-Type"] == "application/json"
        assert r.json()["error"]["code"] == code


def test_password_protects_everything_but_health():
    server = Anykv(anykv_binary(), extra=["--requirepass", "s3cret"]).start()
    try:
        b = base(server)
        r = requests.get(f"{b}/v1/tables")
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        assert r.headers["WWW-Authenticate"].startswith("Bearer")
        assert requests.get(f"{b}/v1/tables", headers={"Authorization": "Bearer nope"}).status_code == 401
        assert requests.get(f"{b}/metrics").status_code == 401
        auth = {"Authorization": "Bearer s3cret"}
        assert requests.put(key_url(server, "k"), data=b"v", headers=auth).status_code == 201
        assert requests.get(key_url(server, "k"), headers=auth).content == b"v"
        assert requests.get(f"{b}/healthz").json() == {"status": "ok"}  # no version for strangers
        assert "version" in requests.get(f"{b}/healthz", headers=auth).json()
        assert requests.get(f"{b}/v1/openapi.json").status_code == 401
        assert requests.get(f"{b}/v1/openapi.json", headers=auth).json()["openapi"].startswith("3.")
    finally:
        server.close()


def test_metrics_count_requests_in_prometheus_format(anykv):
    b = base(anykv)
    for _ in range(3):
        requests.get(key_url(anykv, "none"))
    requests.put(key_url(anykv, "k") + "?ttl=x", data=b"v")
    text = requests.get(f"{b}/metrics")
    assert text.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    body = text.text
    assert 'anykv_requests_total{command="get",protocol="http"} 3\n' in body
    assert 'anykv_request_errors_total{command="get",protocol="http"} 0\n' in body  # misses are not errors
    assert 'anykv_request_errors_total{command="put",protocol="http"} 1\n' in body
    assert re.search(r'^anykv_request_duration_seconds_bucket\{command="get",protocol="http",le="\+Inf"\} 3$', body, re.M)
    assert re.search(r"^anykv_store_gets_total \d+$", body, re.M)
    for line in body.splitlines():
        assert line.startswith("# HELP ") or line.startswith("# TYPE ") or re.match(
            r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? [-+0-9.eE]+|[-+]Inf|NaN$', line), line


def test_writes_survive_a_crash(anykv):
    url = key_url(anykv, "durable")
    put = requests.put(url, data=b"\x00kept\xff")
    assert put.status_code == 201
    anykv.kill()
    anykv.start()
    r = requests.get(url)
    assert r.status_code == 200 and r.content == b"\x00kept\xff"
    assert r.headers["ETag"] == put.headers["ETag"]
    # Versions keep growing across the restart: the CAS token is never reused.
    again = requests.put(url, data=b"new", headers={"If-Match": put.headers["ETag"]})
    assert again.status_code == 200 and again.json()["version"] > put.json()["version"]
