#!/usr/bin/env python3
"""End-to-end tests of fencing in S3 mode (and the embedded default).

Starts a real moto_server and bin/fencegate (from FENCE_BIN) on free
127.0.0.1 ports, with upstream credentials test/test. Clients are raw HTTP
(http.client), boto3, the AWS CLI and fencectl. The central assertion: a
stale write never reaches storage -- checked by reading moto directly with
boto3, never through the proxy. Every process is stopped by its PID. Prints
'N passed, N failed'. Health against the backend, the upstream traffic of a
write, refusals, the access log and clients that leave are in
test_fencing_ops.py, which imports its helpers from here."""
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402


class Gate:
    """A fencegate process on a free loopback port."""

    def __init__(self, *args, env=None):
        self.port = harness.free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log = tempfile.NamedTemporaryFile(prefix="fencegate-", suffix=".log", delete=False)
        e = dict(os.environ, **harness.CREDS)
        e.pop("AWS_ENDPOINT_URL", None)
        e.update(env or {})
        self.proc = subprocess.Popen(
            [os.path.join(harness.BIN, "fencegate"), "--listen", "127.0.0.1:%d" % self.port]
            + list(args), stderr=self.log, env=e)
        harness.wait_port(self.port, self.proc)

    def logtext(self):
        with open(self.log.name, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def close(self):
        rc = harness.stop(self.proc)
        self.log.close()
        if os.environ.get("FENCE_DEBUG"):
            print(self.logtext())
        os.unlink(self.log.name)
        return rc


# ---- helpers -----------------------------------------------------------------

def req(port, method, path, body=b"", headers=None, timeout=15):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"Content-Type": "application/octet-stream"}
    h.update(headers or {})
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    out = (r.status, {k.lower(): v for k, v in r.getheaders()}, data)
    c.close()
    return out


def api(port, method, path, obj=None):
    body = json.dumps(obj).encode() if obj is not None else b""
    st, h, data = req(port, method, path, body, {"Content-Type": "application/json"})
    try:
        return st, json.loads(data) if data else None
    except ValueError:
        return st, data


def s3code(data):
    m = re.search(rb"<Code>([^<]*)</Code>", data)
    return m.group(1).decode() if m else None


def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


def moto_body(moto, bucket, key):
    """The object as moto has it (read directly, not through the proxy)."""
    try:
        o = moto.client().get_object(Bucket=bucket, Key=key)
    except Exception as e:  # noqa: BLE001
        if "NoSuchKey" in str(e) or "404" in str(e):
            return None, None
        raise
    return o["Body"].read(), o["Metadata"]


def acquire(port, lock, holder="w", ttl=30000):
    st, j = api(port, "POST", "/_fence/locks/%s/acquire" % lock,
                {"ttlMs": ttl, "holder": holder})
    expect(st == 200, "acquire: %s %s" % (st, j))
    return j["epoch"]


def release(port, lock, epoch):
    st, j = api(port, "POST", "/_fence/locks/%s/release" % lock, {"epoch": epoch})
    expect(st == 200, "release: %s %s" % (st, j))


def boto_proxy(url):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                        aws_access_key_id="test", aws_secret_access_key="test",
                        config=Config(s3={"addressing_style": "path"},
                                      signature_version="s3v4",
                                      retries={"max_attempts": 1}))


def cli_env(extra=None):
    e = dict(os.environ, **harness.CREDS)
    e.pop("AWS_ENDPOINT_URL", None)
    e.update(extra or {})
    return e


# ---- tests -------------------------------------------------------------------

def test_health_and_metrics(moto, gate):
    st, j = api(gate.port, "GET", "/_fence/health")
    expect(st == 200 and j["status"] == "ok", "health: %s %s" % (st, j))
    st, h, data = req(gate.port, "GET", "/_fence/metrics")
    text = data.decode()
    expect(st == 200 and h["content-type"].startswith("text/plain"), "metrics status")
    for family in ("fencegate_requests_total", "fencegate_rejections_total",
                   "fencegate_upstream_latency_seconds", "fencegate_in_flight_requests",
                   "fencegate_lock_current_epoch",
                   "fencegate_etag_cache_hits_total"):
        expect(family in text, "metrics lack %s" % family)


def test_decision_table(moto, gate):
    b, k = "fence-table", "/fence-table/obj"
    moto.create_bucket(b)
    # no token
    st, h, d = req(gate.port, "PUT", k, b"zero")
    expect(st == 428 and s3code(d) == "FencingTokenMissing", "no token: %s %s" % (st, d))
    # malformed
    for bad in ("abc", "-1", "+7", "0", "7 8", "0x10", "12345678901234567890"):
        st, h, d = req(gate.port, "PUT", k, b"x", {"X-Fencing-Token": bad})
        expect(st == 400 and s3code(d) == "FencingTokenInvalid", "malformed %r: %s" % (bad, st))
    # header != metadata
    st, h, d = req(gate.port, "PUT", k, b"x", {"X-Fencing-Token": "1",
                                                "x-amz-meta-fencing-token": "2"})
    expect(st == 400 and s3code(d) == "FencingTokenInvalid", "conflict: %s" % st)
    expect(moto_body(moto, b, "obj")[0] is None, "nothing reached storage yet")
    # forwarded: token of a real epoch
    e1 = acquire(gate.port, b, "w1")
    st, h, d = req(gate.port, "PUT", k, b"one", {"X-Fencing-Token": str(e1)})
    expect(st == 200, "forward: %s %s" % (st, d))
    body, meta = moto_body(moto, b, "obj")
    expect(body == b"one" and meta.get("fencing-epoch") == str(e1)
           and meta.get("fencing-lock") == b, "stored: %r %r" % (body, meta))
    # the token as metadata only works too
    st, h, d = req(gate.port, "PUT", k, b"one-meta", {"x-amz-meta-fencing-token": str(e1)})
    expect(st == 200, "metadata token: %s %s" % (st, d))
    # stale: a newer epoch exists
    release(gate.port, b, e1)
    e2 = acquire(gate.port, b, "w2")
    st, h, d = req(gate.port, "PUT", k, b"stale", {"X-Fencing-Token": str(e1)})
    expect(st == 409 and s3code(d) == "FencingTokenStale", "stale: %s %s" % (st, d))
    expect(h.get("x-fencing-epoch") == str(e2), "X-Fencing-Epoch: %s" % h)
    expect(moto_body(moto, b, "obj")[0] == b"one-meta", "stale write never reached storage")
    # stale DELETE too
    st, h, d = req(gate.port, "DELETE", k, b"", {"X-Fencing-Token": str(e1)})
    expect(st == 409, "stale delete: %s" % st)
    expect(moto_body(moto, b, "obj")[0] == b"one-meta", "stale delete never reached storage")
    # unknown: T > C with no lock file
    st, h, d = req(gate.port, "PUT", k, b"unknown", {"X-Fencing-Token": str(e2 + 5)})
    expect(st == 409 and s3code(d) == "FencingTokenUnknown", "unknown: %s %s" % (st, d))
    expect(h.get("x-fencing-epoch") == str(e2), "unknown X-Fencing-Epoch")
    # released: the current epoch given up
    release(gate.port, b, e2)
    st, h, d = req(gate.port, "PUT", k, b"released", {"X-Fencing-Token": str(e2)})
    expect(st == 409 and s3code(d) == "FencingTokenStale", "released: %s %s" % (st, d))
    expect(moto_body(moto, b, "obj")[0] == b"one-meta", "released write never reached storage")
    # object written under a newer epoch via another path (directly on S3)
    e3 = acquire(gate.port, b, "w3")
    moto.client().put_object(Bucket=b, Key="newer", Body=b"from-elsewhere",
                             Metadata={"fencing-epoch": str(e3 + 10)})
    st, h, d = req(gate.port, "PUT", "/%s/newer" % b, b"mine", {"X-Fencing-Token": str(e3)})
    expect(st == 409 and s3code(d) == "FencingTokenStale", "object newer: %s %s" % (st, d))
    expect(moto_body(moto, b, "newer")[0] == b"from-elsewhere", "newer object untouched")
    # a real DELETE under the current epoch works, and a missing key is 204
    st, h, d = req(gate.port, "DELETE", k, b"", {"X-Fencing-Token": str(e3)})
    expect(st == 204, "delete: %s %s" % (st, d))
    expect(moto_body(moto, b, "obj")[0] is None, "deleted")
    st, h, d = req(gate.port, "DELETE", k, b"", {"X-Fencing-Token": str(e3)})
    expect(st == 204, "delete missing: %s" % st)
    # reads pass untouched
    st, h, d = req(gate.port, "GET", "/%s/newer" % b)
    expect(st == 200 and d == b"from-elsewhere", "read: %s" % st)
    # AWS SDK v3 adds ?x-id=PutObject: still a fenced, stamped, CAS'd PUT
    st, h, d = req(gate.port, "PUT", "/%s/xid?x-id=PutObject" % b, b"xid",
                   {"X-Fencing-Token": str(e3)})
    expect(st == 200, "x-id put: %s %s" % (st, d))
    expect(moto_body(moto, b, "xid")[1].get("fencing-epoch") == str(e3), "x-id stamped")
    st, h, d = req(gate.port, "PUT", "/%s/xid?x-id=PutObject" % b, b"old",
                   {"X-Fencing-Token": str(e1)})
    expect(st == 409, "x-id stale: %s" % st)
    # a presigned PUT (X-Amz-* query) is a fenced PUT too
    url = boto_proxy(gate.url).generate_presigned_url(
        "put_object", Params={"Bucket": b, "Key": "presigned"}, ExpiresIn=300)
    path = url[len(gate.url):]
    st, h, d = req(gate.port, "PUT", path, b"pre", {"X-Fencing-Token": str(e3)})
    expect(st == 200, "presigned put: %s %s" % (st, d))
    expect(moto_body(moto, b, "presigned")[1].get("fencing-epoch") == str(e3),
           "presigned stamped")
    st, h, d = req(gate.port, "PUT", path, b"pre")
    expect(st == 428, "presigned put without token: %s" % st)
    # the client's own conditions are honoured
    st, h, d = req(gate.port, "PUT", "/%s/newer2" % b, b"a",
                   {"X-Fencing-Token": str(e3), "If-None-Match": "*"})
    expect(st == 200, "create: %s %s" % (st, d))
    st, h, d = req(gate.port, "PUT", "/%s/newer2" % b, b"b",
                   {"X-Fencing-Token": str(e3), "If-None-Match": "*"})
    expect(st == 412, "create again: %s" % st)
    st, h, d = req(gate.port, "PUT", "/%s/newer2" % b, b"c",
                   {"X-Fencing-Token": str(e3), "If-Match": '"nope"'})
    expect(st == 412, "if-match other etag: %s" % st)
    expect(moto_body(moto, b, "newer2")[0] == b"a", "failed conditions wrote nothing")
    # the lock gauge shows the epoch
    st, h, d = req(gate.port, "GET", "/_fence/metrics")
    expect(('fencegate_lock_current_epoch{lock="%s"} %d' % (b, e3)) in d.decode(),
           "epoch gauge")
    expect('fencegate_rejections_total{code="FencingTokenStale"}' in d.decode(),
           "rejection counter")


def test_two_replicas_zombie(moto):
    b = "fence-replicas"
    moto.create_bucket(b)
    # B never refreshes on its own: its C stays at 1 (a lagging replica).
    # Each replica is one event loop: the test follows B's own ETag cache
    # from write to write (with several loops each has its own cache)
    ga = Gate("--upstream", moto.url, "--access-log", "off", "--workers", "1")
    gb = Gate("--upstream", moto.url, "--access-log", "off", "--lock-refresh", "3600s",
              "--log-level", "debug", "--workers", "1")
    try:
        e1 = acquire(ga.port, b, "zombie")
        st, h, d = req(gb.port, "PUT", "/%s/cached" % b, b"z1", {"X-Fencing-Token": str(e1)})
        expect(st == 200, "B writes under epoch 1: %s %s" % (st, d))
        # a new leader takes epoch 2 through A (the zombie never released)
        release(ga.port, b, e1)
        e2 = acquire(ga.port, b, "leader")
        expect(e2 == e1 + 1, "epoch 2")
        for key in ("cached", "uncached"):
            st, h, d = req(ga.port, "PUT", "/%s/%s" % (b, key), b"leader",
                           {"X-Fencing-Token": str(e2)})
            expect(st == 200, "A writes under epoch 2: %s" % st)
        # the zombie writes through lagging B with token 1: B's lock-level
        # check passes (its C is 1), the object CAS refuses it
        for key in ("cached", "uncached"):
            st, h, d = req(gb.port, "PUT", "/%s/%s" % (b, key), b"zombie",
                           {"X-Fencing-Token": str(e1)})
            expect(st == 409 and s3code(d) == "FencingTokenStale",
                   "zombie via B on %s: %s %s" % (key, st, d))
            body, meta = moto_body(moto, b, key)
            expect(body == b"leader" and meta["fencing-epoch"] == str(e2),
                   "zombie never reached storage (%s): %r" % (key, body))
        st, h, d = req(gb.port, "DELETE", "/%s/cached" % b, b"", {"X-Fencing-Token": str(e1)})
        expect(st == 409, "zombie delete via B: %s" % st)
        expect(moto_body(moto, b, "cached")[0] == b"leader", "zombie delete refused")
        # same epoch on both replicas: B's cached ETag goes stale when A
        # writes; B's conditional write loses (412), re-reads the epoch
        # (not newer) and re-sends with the new ETag
        st, h, d = req(gb.port, "PUT", "/%s/shared" % b, b"b1", {"X-Fencing-Token": str(e2)})
        expect(st == 200, "B learns epoch 2 and writes: %s %s" % (st, d))
        st, h, d = req(ga.port, "PUT", "/%s/shared" % b, b"a1", {"X-Fencing-Token": str(e2)})
        expect(st == 200, "A writes: %s" % st)
        st, h, d = req(gb.port, "PUT", "/%s/shared" % b, b"b2", {"X-Fencing-Token": str(e2)})
        expect(st == 200, "B re-sends after losing the race: %s %s" % (st, d))
        expect(moto_body(moto, b, "shared")[0] == b"b2", "B's write landed")
        expect("(attempt 2)" in gb.logtext(), "B re-sent the write")
        # the same race with a body too big to keep for a re-send (> 64 KiB):
        # nothing is written and the client is told to retry (503 SlowDown)
        st, h, d = req(ga.port, "PUT", "/%s/shared" % b, b"a2", {"X-Fencing-Token": str(e2)})
        expect(st == 200, "A writes again: %s" % st)
        big = b"B" * (200 * 1024)
        st, h, d = req(gb.port, "PUT", "/%s/shared" % b, big, {"X-Fencing-Token": str(e2)})
        expect(st == 503 and s3code(d) == "SlowDown", "streamed body lost the race: %s %s"
               % (st, d[:200]))
        expect(moto_body(moto, b, "shared")[0] == b"a2", "the lost write changed nothing")
        st, h, d = req(gb.port, "PUT", "/%s/shared" % b, big, {"X-Fencing-Token": str(e2)})
        expect(st == 200, "the retry succeeds: %s" % st)
        st, h, d = req(gb.port, "GET", "/_fence/metrics")
        expect('fencegate_upstream_requests_total{kind="head"}' in d.decode(), "HEAD counted")
    finally:
        ga.close()
        gb.close()


def test_replica_windows(moto):
    """Issue 7, item 3: an ETag is the content's MD5, so a newer epoch's
    delete (or identical rewrite) leaves a lagging replica's cached ETag
    saying nothing. B never refreshes on its own; C's refresh interval is
    300 ms. Storage is read from moto directly."""
    b = "fence-windows"
    moto.create_bucket(b)
    # each replica is one event loop, so that B's zombie meets the cache
    # entry its own epoch-1 write left (with several loops it could reach
    # one that never loaded the lock, and be refused for that reason)
    one = ("--workers", "1")
    ga = Gate("--upstream", moto.url, "--access-log", "off", *one)
    gb = Gate("--upstream", moto.url, "--access-log", "off", "--lock-refresh", "3600s", *one)
    gc = Gate("--upstream", moto.url, "--access-log", "off", "--lock-refresh", "300ms", *one)
    try:
        e1 = acquire(ga.port, b, "zombie")
        for g, key in ((gb, "gone"), (gc, "same")):
            st, h, d = req(g.port, "PUT", "/%s/%s" % (b, key), b"v", {"X-Fencing-Token": str(e1)})
            expect(st == 200, "epoch 1 writes %s: %s %s" % (key, st, d))
        release(ga.port, b, e1)
        e2 = acquire(ga.port, b, "leader")
        st, h, d = req(ga.port, "DELETE", "/%s/gone" % b, b"", {"X-Fencing-Token": str(e2)})
        expect(st == 204, "epoch 2 deletes: %s %s" % (st, d))
        st, h, d = req(ga.port, "PUT", "/%s/same" % b, b"v", {"X-Fencing-Token": str(e2)})
        expect(st == 200, "epoch 2 rewrites the same bytes: %s" % st)
        # B still believes epoch 1 is current and has the deleted object's
        # ETag cached: its If-Match loses, and it re-reads the lock before
        # creating the key again
        st, h, d = req(gb.port, "PUT", "/%s/gone" % b, b"zombie", {"X-Fencing-Token": str(e1)})
        expect(st == 409 and s3code(d) == "FencingTokenStale", "zombie create via B: %s %s" % (st, d))
        expect(moto_body(moto, b, "gone")[0] is None, "the deleted key stays deleted")
        # C's knowledge is older than its interval: the write waits for a
        # load, which finds epoch 2
        time.sleep(0.5)
        st, h, d = req(gc.port, "PUT", "/%s/same" % b, b"zombie", {"X-Fencing-Token": str(e1)})
        expect(st == 409, "zombie over identical bytes via C: %s %s" % (st, d))
        body, meta = moto_body(moto, b, "same")
        expect(body == b"v" and meta["fencing-epoch"] == str(e2), "epoch 2's write stands")
    finally:
        ga.close()
        gb.close()
        gc.close()


def test_fencectl_through_proxy(moto, gate):
    b = "fence-ctl"
    moto.create_bucket(b)
    ctl = os.path.join(harness.BIN, "fencectl")
    base = [ctl, "--store", "s3://" + b, "--endpoint", gate.url]
    r = harness.run(base + ["acquire", b, "--ttl", "30s", "--holder", "ctl1"], env=cli_env())
    expect(r.returncode == 0, "acquire via proxy: %s %s" % (r.returncode, r.stderr))
    epoch = int(r.stdout.strip().split()[-1])
    # the proxy learned the epoch at once: a write with it is forwarded,
    # one below is stale
    st, h, d = req(gate.port, "PUT", "/%s/data" % b, b"ok", {"X-Fencing-Token": str(epoch)})
    expect(st == 200, "write under the acquired epoch: %s %s" % (st, d))
    if epoch > 1:
        st, h, d = req(gate.port, "PUT", "/%s/data" % b, b"old",
                       {"X-Fencing-Token": str(epoch - 1)})
        expect(st == 409, "older epoch stale: %s" % st)
    # held: a second acquire is refused (exit 3)
    r = harness.run(base + ["acquire", b, "--holder", "ctl2"], env=cli_env())
    expect(r.returncode == 3, "second acquire: %s %s" % (r.returncode, r.stderr))
    # epoch forging through the S3 API is refused
    forged = ('{"leaderId":"evil","validityMs":30000,"expired":false}').encode()
    st, h, d = req(gate.port, "PUT", "/%s/locks/%s/lock-9999999999.json" % (b, b), forged,
                   {"If-None-Match": "*", "Content-Type": "application/json"})
    expect(st == 409 and s3code(d) == "LockEpochNotNext", "forged: %s %s" % (st, d))
    st, h, d = req(gate.port, "PUT", "/%s/locks/%s/lock-%010d.json" % (b, b, epoch + 1), forged,
                   {"If-None-Match": "*", "Content-Type": "application/json"})
    expect(st == 409 and s3code(d) == "LockHeld", "steal a live lock: %s %s" % (st, d))
    st, h, d = req(gate.port, "PUT", "/%s/locks/%s/lock-%010d.json" % (b, b, epoch + 1), forged)
    expect(st == 428, "unconditional lock write: %s %s" % (st, d))
    names = [o["Key"] for o in moto.client().list_objects_v2(
        Bucket=b, Prefix="locks/").get("Contents", [])]
    expect(names == ["locks/%s/lock-%010d.json" % (b, epoch)], "lock files: %s" % names)
    # renew, status, release through the proxy
    r = harness.run(base + ["renew", b, str(epoch)], env=cli_env())
    expect(r.returncode == 0, "renew: %s %s" % (r.returncode, r.stderr))
    r = harness.run(base + ["release", b, str(epoch)], env=cli_env())
    expect(r.returncode == 0, "release: %s %s" % (r.returncode, r.stderr))
    st, h, d = req(gate.port, "PUT", "/%s/data" % b, b"after", {"X-Fencing-Token": str(epoch)})
    expect(st == 409, "released epoch stale: %s" % st)
    r = harness.run(base + ["acquire", b, "--holder", "ctl3"], env=cli_env())
    expect(r.returncode == 0 and int(r.stdout.strip().split()[-1]) == epoch + 1,
           "acquire after release: %s %s" % (r.stdout, r.stderr))
    # the lock API sees the same lock
    st, j = api(gate.port, "GET", "/_fence/locks/%s" % b)
    expect(st == 200 and j["epoch"] == epoch + 1 and j["holder"] == "ctl3", "status %s" % j)


def test_lock_api(moto, gate):
    b = "fence-api"
    moto.create_bucket(b)
    st, j = api(gate.port, "POST", "/_fence/locks/%s/acquire" % b,
                {"ttlMs": 20000, "waitMs": 0, "holder": "w7"})
    expect(st == 200 and j["lock"] == b and j["holder"] == "w7" and j["ttlMs"] == 20000
           and "expiresAt" in j, "acquire: %s %s" % (st, j))
    e = j["epoch"]
    st, j = api(gate.port, "POST", "/_fence/locks/%s/acquire" % b, {"holder": "w8"})
    expect(st == 409 and j["error"] == "LockHeld" and j["holder"] == "w7"
           and j["epoch"] == e and j["retryAfterMs"] > 0, "held: %s %s" % (st, j))
    t0 = time.monotonic()
    st, j = api(gate.port, "POST", "/_fence/locks/%s/acquire" % b, {"holder": "w8",
                                                                     "waitMs": 600})
    expect(st == 409 and time.monotonic() - t0 >= 0.5, "waited then held: %s" % st)
    st, j = api(gate.port, "POST", "/_fence/locks/%s/renew" % b, {"epoch": e})
    expect(st == 200 and j["epoch"] == e, "renew: %s %s" % (st, j))
    st, j = api(gate.port, "GET", "/_fence/locks/%s" % b)
    expect(st == 200 and j["epoch"] == e and j["state"] == "held" and j["holder"] == "w7",
           "status: %s" % j)
    st, j = api(gate.port, "GET", "/_fence/locks")
    expect(st == 200 and any(x["lock"] == b and x["epoch"] == e for x in j["locks"]),
           "list: %s" % j)
    st, j = api(gate.port, "POST", "/_fence/locks/%s/release" % b, {"epoch": e})
    expect(st == 200, "release: %s %s" % (st, j))
    st, j = api(gate.port, "POST", "/_fence/locks/%s/renew" % b, {"epoch": e})
    expect(st == 409 and j["error"] == "LockLost", "renew released: %s %s" % (st, j))
    st, j = api(gate.port, "POST", "/_fence/locks/%s/acquire" % b, {"holder": "w8"})
    expect(st == 200 and j["epoch"] == e + 1, "acquire after release: %s" % j)
    st, j = api(gate.port, "POST", "/_fence/locks/%s/release" % b, {"epoch": e})
    expect(st == 409 and j["error"] == "LockLost", "release old epoch: %s %s" % (st, j))
    # bad input
    st, j = api(gate.port, "POST", "/_fence/locks/%s/renew" % b, {"epoch": "x"})
    expect(st == 400 and j["error"] == "InvalidArgument", "bad epoch: %s" % st)
    st, h, d = req(gate.port, "POST", "/_fence/locks/%s/acquire" % b, b"{not json")
    expect(st == 400, "bad json: %s" % st)
    st, h, d = req(gate.port, "POST", "/_fence/locks/%s/renew" % b,
                   b'{"epoch": %d} {"epoch": 1}' % (e + 1))
    expect(st == 400 and b"after its JSON object" in d, "trailing data: %s %s" % (st, d))
    st, h, d = req(gate.port, "POST", "/_fence/locks/%s/renew" % b, b'{"epoch": %d} \r\n' % (e + 1))
    expect(st == 200, "trailing whitespace is fine: %s %s" % (st, d))
    st, j = api(gate.port, "POST", "/_fence/locks/Bad_Name/acquire", {})
    expect(st == 400 and j["error"] == "InvalidLockName", "bad name: %s" % st)
    st, j = api(gate.port, "GET", "/_fence/locks/%s/acquire" % b)
    expect(st == 405, "GET acquire: %s" % st)


def test_multipart(moto, gate):
    b = "fence-mpu"
    moto.create_bucket(b)
    s3 = boto_proxy(gate.url)
    e = acquire(gate.port, b, "mp")
    part = b"p" * (5 * 1024 * 1024)
    up = s3.create_multipart_upload(Bucket=b, Key="big", Metadata={"fencing-token": str(e)})
    p1 = s3.upload_part(Bucket=b, Key="big", UploadId=up["UploadId"], PartNumber=1, Body=part)
    p2 = s3.upload_part(Bucket=b, Key="big", UploadId=up["UploadId"], PartNumber=2, Body=b"end")
    s3.complete_multipart_upload(
        Bucket=b, Key="big", UploadId=up["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p1["ETag"]},
                                   {"PartNumber": 2, "ETag": p2["ETag"]}]})
    h = moto.client().head_object(Bucket=b, Key="big")
    expect(h["ContentLength"] == len(part) + 3 and h["Metadata"]["fencing-epoch"] == str(e),
           "completed: %s" % h["Metadata"])
    # a create without a token is refused
    try:
        s3.create_multipart_upload(Bucket=b, Key="big2")
        raise AssertionError("create without token accepted")
    except s3.exceptions.ClientError as err:
        expect(err.response["Error"]["Code"] == "FencingTokenMissing", str(err))
    # a zombie's upload: created under e, a new epoch taken, completion refused
    up = s3.create_multipart_upload(Bucket=b, Key="big", Metadata={"fencing-token": str(e)})
    p1 = s3.upload_part(Bucket=b, Key="big", UploadId=up["UploadId"], PartNumber=1, Body=b"z")
    release(gate.port, b, e)
    acquire(gate.port, b, "new-leader")
    try:
        s3.upload_part(Bucket=b, Key="big", UploadId=up["UploadId"], PartNumber=2, Body=b"z")
        raise AssertionError("stale part accepted")
    except s3.exceptions.ClientError as err:
        expect(err.response["Error"]["Code"] == "FencingTokenStale", str(err))
    try:
        s3.complete_multipart_upload(
            Bucket=b, Key="big", UploadId=up["UploadId"],
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p1["ETag"]}]})
        raise AssertionError("stale completion accepted")
    except s3.exceptions.ClientError as err:
        expect(err.response["Error"]["Code"] == "FencingTokenStale", str(err))
        expect(err.response["ResponseMetadata"]["HTTPHeaders"].get("x-fencing-epoch")
               == str(e + 1), "X-Fencing-Epoch on the refusal")
    h = moto.client().head_object(Bucket=b, Key="big")
    expect(h["ContentLength"] == len(part) + 3, "the zombie's upload never landed")
    # CopyObject: the copy carries its own epoch, so it must REPLACE metadata
    e2 = e + 1
    s3.copy_object(Bucket=b, Key="copy", CopySource={"Bucket": b, "Key": "big"},
                   MetadataDirective="REPLACE", Metadata={"fencing-token": str(e2)})
    h = moto.client().head_object(Bucket=b, Key="copy")
    expect(h["Metadata"].get("fencing-epoch") == str(e2), "copy stamped: %s" % h["Metadata"])
    # the default directive (COPY): the proxy reads the source's metadata and
    # sends REPLACE with it and its own stamp
    s3.put_object(Bucket=b, Key="src", Body=b"csv,data", ContentType="text/csv",
                  CacheControl="max-age=60", ContentDisposition="attachment",
                  Metadata={"color": "blue", "fencing-token": str(e2)})
    s3.copy_object(Bucket=b, Key="copy2", CopySource={"Bucket": b, "Key": "src"},
                   Metadata={"fencing-token": str(e2)})
    h = moto.client().head_object(Bucket=b, Key="copy2")
    expect(h["Metadata"] == {"color": "blue", "fencing-epoch": str(e2), "fencing-lock": b}
           and h["ContentType"] == "text/csv" and h.get("CacheControl") == "max-age=60"
           and h.get("ContentDisposition") == "attachment",
           "COPY directive: the source's metadata and our stamp: %s" % h)
    h = s3.head_object(Bucket=b, Key="copy2")
    expect(h["Metadata"] == {"color": "blue"}, "through the proxy: %s" % h["Metadata"])
    # a copy under an older epoch is refused and nothing is written
    try:
        s3.copy_object(Bucket=b, Key="copy3", CopySource={"Bucket": b, "Key": "src"},
                       Metadata={"fencing-token": str(e)})
        raise AssertionError("a stale copy was accepted")
    except s3.exceptions.ClientError as err:
        expect(err.response["Error"]["Code"] == "FencingTokenStale", str(err))
    expect(moto_body(moto, b, "copy3")[0] is None, "the stale copy never landed")
    # a copy of one version is refused, not approximated
    try:
        s3.copy_object(Bucket=b, Key="copy4",
                       CopySource={"Bucket": b, "Key": "src", "VersionId": "v1"},
                       Metadata={"fencing-token": str(e2)})
        raise AssertionError("a COPY-directive copy of a version was accepted")
    except s3.exceptions.ClientError as err:
        expect(err.response["Error"]["Code"] == "NotImplemented", str(err))
    # multi-object delete is fenced too: without a token, nothing is deleted
    try:
        s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "copy"}]})
        raise AssertionError("multi-object delete without a token accepted")
    except s3.exceptions.ClientError as err:
        expect(err.response["Error"]["Code"] == "FencingTokenMissing", str(err))
    expect(moto_body(moto, b, "copy")[0] is not None, "nothing deleted")
    # an upload this replica does not know needs the token header
    st, hh, d = req(gate.port, "PUT", "/%s/big?partNumber=1&uploadId=unknown-id" % b, b"x")
    expect(st == 428, "unknown upload without token: %s" % st)


def test_aws_cli(moto, gate):
    b = "fence-cli"
    moto.create_bucket(b)
    e = acquire(gate.port, b, "cli")
    tmp = harness.TempDir()
    try:
        small = os.path.join(tmp.path, "small.txt")
        with open(small, "wb") as f:
            f.write(b"hello cli")
        env = cli_env()
        r = harness.run(["aws", "--endpoint-url", gate.url, "s3api", "put-object",
                         "--bucket", b, "--key", "small.txt", "--body", small,
                         "--metadata", "fencing-token=%d" % e], env=env)
        expect(r.returncode == 0, "put-object: %s" % r.stderr)
        r = harness.run(["aws", "--endpoint-url", gate.url, "s3api", "put-object",
                         "--bucket", b, "--key", "small.txt", "--body", small], env=env)
        expect(r.returncode != 0 and "FencingTokenMissing" in r.stderr,
               "put-object without token: %s" % r.stderr)
        big = os.path.join(tmp.path, "big.bin")
        with open(big, "wb") as f:
            f.write(os.urandom(9 * 1024 * 1024))
        r = harness.run(["aws", "--endpoint-url", gate.url, "s3", "cp", big,
                         "s3://%s/big.bin" % b, "--metadata", "fencing-token=%d" % e],
                        env=env, timeout=120)
        expect(r.returncode == 0, "s3 cp: %s %s" % (r.stdout, r.stderr))
        h = moto.client().head_object(Bucket=b, Key="big.bin")
        expect(h["ContentLength"] == 9 * 1024 * 1024 and
               h["Metadata"].get("fencing-epoch") == str(e), "s3 cp stored: %s" % h)
        expect("-" in h["ETag"], "it was a multipart upload: %s" % h["ETag"])
        r = harness.run(["aws", "--endpoint-url", gate.url, "s3", "cp", big,
                         "s3://%s/big2.bin" % b, "--metadata", "fencing-token=%d" % (e + 7)],
                        env=env, timeout=120)
        expect(r.returncode != 0, "s3 cp with an unknown epoch refused")
        expect(moto_body(moto, b, "big2.bin")[0] is None, "nothing stored")
    finally:
        tmp.close()


def test_embedded_default():
    tmp = harness.TempDir()
    g = Gate("--data", os.path.join(tmp.path, "data"))
    try:
        deadline = time.monotonic() + 10
        while api(g.port, "GET", "/_fence/health")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        expect(api(g.port, "GET", "/_fence/health")[0] == 200, "embedded health")
        b = "demo"
        st, h, d = req(g.port, "PUT", "/%s" % b, b"")
        expect(st in (200, 409), "create bucket: %s %s" % (st, d))
        st, h, d = req(g.port, "PUT", "/%s/a.txt" % b, b"no token")
        expect(st == 428 and s3code(d) == "FencingTokenMissing", "token-less: %s %s" % (st, d))
        e1 = acquire(g.port, b, "local1")
        st, h, d = req(g.port, "PUT", "/%s/a.txt" % b, b"one", {"X-Fencing-Token": str(e1)})
        expect(st == 200, "write with token: %s %s" % (st, d))
        release(g.port, b, e1)
        e2 = acquire(g.port, b, "local2")
        st, h, d = req(g.port, "PUT", "/%s/a.txt" % b, b"two", {"X-Fencing-Token": str(e2)})
        expect(st == 200, "write under epoch 2: %s %s" % (st, d))
        st, h, d = req(g.port, "PUT", "/%s/a.txt" % b, b"stale", {"X-Fencing-Token": str(e1)})
        expect(st == 409 and s3code(d) == "FencingTokenStale", "stale: %s %s" % (st, d))
        st, h, d = req(g.port, "GET", "/%s/a.txt" % b)
        expect(st == 200 and d == b"two", "stored: %s %r" % (st, d))
        st, h, d = req(g.port, "DELETE", "/%s/a.txt" % b, b"", {"X-Fencing-Token": str(e1)})
        expect(st == 409, "stale delete: %s" % st)
    finally:
        g.close()
        tmp.close()


def main():
    r = harness.Runner("e2e fencing")
    moto = harness.Moto()
    try:
        moto.create_bucket("fence-health")
        gate = Gate("--upstream", moto.url, "--check-bucket", "fence-health",
                    "--access-log", "off")
        try:
            deadline = time.monotonic() + 10
            while api(gate.port, "GET", "/_fence/health")[0] != 200 and \
                    time.monotonic() < deadline:
                time.sleep(0.05)
            r.check("health and metrics", test_health_and_metrics, moto, gate)
            r.check("decision table, stale writes never reach storage",
                    test_decision_table, moto, gate)
            r.check("two replicas: a zombie through the lagging one is refused",
                    test_two_replicas_zombie, moto)
            r.check("replicas: a lagging cache after a delete or an identical rewrite",
                    test_replica_windows, moto)
            r.check("fencectl acquires through the proxy's S3 API",
                    test_fencectl_through_proxy, moto, gate)
            r.check("lock HTTP API", test_lock_api, moto, gate)
            r.check("fenced multipart upload", test_multipart, moto, gate)
            r.check("aws cli put-object and s3 cp (multipart) with token metadata",
                    test_aws_cli, moto, gate)
        finally:
            gate.close()
    finally:
        moto.close()
    r.check("embedded default: 428, acquire, write, stale 409", test_embedded_default)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
