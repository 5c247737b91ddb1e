#!/usr/bin/env python3
"""End-to-end tests of HTTP mode: bin/fencegate --mode http in front of a
recording downstream API.

The downstream is a small http.server in a thread on a free 127.0.0.1 port.
It records every request it receives (method, path, headers, body, arrival
and completion times) and holds its answer for X-Test-Delay seconds when a
request asks for it. Locks live in a local directory (file://TMPDIR), and in
one case in a moto_server bucket (s3://BUCKET/ROOT). The central
assertions: a refused write is never seen downstream, an allowed one arrives
with X-Fencing-Token, and a write of a newer epoch reaches the downstream
only after the older epoch's in-flight writes finished. Every process is
stopped by its PID. Prints 'N passed, N failed'."""
import http.client
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402


class Recorder:
    """The downstream HTTP API: records what reaches it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.requests = []
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _any(self):
                t0 = time.monotonic()
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                entry = {"method": self.command, "path": self.path,
                         "headers": {k.lower(): v for k, v in self.headers.items()},
                         "body": body, "t_arrived": t0, "t_done": None}
                with rec.lock:
                    rec.requests.append(entry)
                delay = float(self.headers.get("X-Test-Delay") or 0)
                if delay:
                    time.sleep(min(delay, 20.0))
                with rec.lock:
                    entry["t_applied"] = time.monotonic()  # even if nobody waits
                out = json.dumps({"ok": True, "path": self.path}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(out)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    # the proxy gave up on this request (a delayed one):
                    # t_done stays None, the answer never left
                    self.close_connection = True
                    return
                with rec.lock:
                    entry["t_done"] = time.monotonic()

            do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = do_HEAD = _any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def seen(self, path):
        with self.lock:
            return [dict(r) for r in self.requests if r["path"] == path]

    def wait_seen(self, path, timeout=5.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.seen(path)
            if got:
                return got
            time.sleep(0.01)
        raise AssertionError("downstream never saw %s" % path)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Gate:
    """fencegate --mode http on a free loopback port."""

    def __init__(self, *args, env=None):
        self.port = harness.free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="fencegate-http-", suffix=".log",
                                               delete=False)
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen(
            [os.path.join(harness.BIN, "fencegate"), "--listen", "127.0.0.1:%d" % self.port,
             "--access-log", "off"] + list(args), stderr=self.log, env=e)
        harness.wait_port(self.port, self.proc)
        deadline = time.monotonic() + 10
        while self.request("GET", "/_fence/health")[0] != 200:
            # the lock store's self-test passes before health is 200
            assert time.monotonic() < deadline, "not healthy: " + self.logtext()
            time.sleep(0.05)

    def request(self, method, path, body=None, headers=None, timeout=30):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            data = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data
        finally:
            c.close()

    def lockapi(self, name, op, **body):
        st, _, data = self.request("POST", "/_fence/locks/%s/%s" % (name, op),
                                   json.dumps(body).encode(),
                                   {"Content-Type": "application/json"})
        return st, json.loads(data)

    def acquire(self, name, ttl=30000):
        st, doc = self.lockapi(name, "acquire", ttlMs=ttl, holder="t")
        assert st == 200, (st, doc)
        return doc["epoch"]

    def write(self, path, lock, token, body=b"x", extra=None, method="PUT"):
        h = {"Content-Type": "application/octet-stream"}
        if lock is not None:
            h["X-Fencing-Lock"] = lock
        if token is not None:
            h["X-Fencing-Token"] = str(token)
        h.update(extra or {})
        return self.request(method, path, body, h)

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


def json_error(data, code):
    doc = json.loads(data)
    assert doc["error"] == code, doc
    assert isinstance(doc["message"], str) and doc["message"], doc
    return doc


class Env:
    def __init__(self):
        self.rec = Recorder()
        self.tmp = harness.TempDir()
        self.store = "file://" + self.tmp.path
        self.gate = Gate("--mode", "http", "--upstream", self.rec.url,
                         "--lock-store", self.store)

    def close(self):
        self.gate.close()
        self.rec.close()
        self.tmp.close()


def test_fenced_write_forwarded(env):
    g, rec = env.gate, env.rec
    e = g.acquire("fwd")
    st, h, data = g.write("/items/1", "fwd", e, b"hello")
    assert st == 200, (st, data)
    got = rec.seen("/items/1")
    assert len(got) == 1, got
    assert got[0]["headers"]["x-fencing-token"] == str(e)
    assert got[0]["headers"]["x-fencing-lock"] == "fwd"
    assert got[0]["body"] == b"hello"
    # the token as metadata header is normalized to X-Fencing-Token
    st, _, _ = g.request("POST", "/items/2", b"m",
                         {"X-Fencing-Lock": "fwd", "x-amz-meta-fencing-token": "%03d" % e})
    assert st == 200
    got = rec.seen("/items/2")
    assert len(got) == 1 and got[0]["headers"]["x-fencing-token"] == str(e), got
    # PATCH and DELETE are writes too
    for m in ("PATCH", "DELETE"):
        st, _, _ = g.write("/items/3", "fwd", e, b"", method=m)
        assert st == 200, (m, st)
    assert [r["method"] for r in rec.seen("/items/3")] == ["PATCH", "DELETE"]
    # the lock file is where fencectl would look
    assert os.path.exists(os.path.join(env.tmp.path, "locks", "fwd",
                                       "lock-%010d.json" % e))


def test_missing_and_invalid(env):
    g, rec = env.gate, env.rec
    g.acquire("miss")
    st, h, data = g.write("/miss/1", "miss", None)
    assert st == 428 and h["content-type"] == "application/json", (st, h)
    json_error(data, "FencingTokenMissing")
    st, _, data = g.write("/miss/2", None, 1)
    assert st == 428, st
    json_error(data, "FencingLockMissing")
    st, _, data = g.write("/miss/3", "miss", "+1")
    assert st == 400
    json_error(data, "FencingTokenInvalid")
    st, _, data = g.write("/miss/4", "miss", 1, extra={"x-amz-meta-fencing-token": "2"})
    assert st == 400
    json_error(data, "FencingTokenInvalid")
    st, _, data = g.write("/miss/5", "bad/name", 1)
    assert st == 400
    json_error(data, "InvalidFencingLock")
    for i in range(1, 6):
        assert rec.seen("/miss/%d" % i) == [], i


def test_stale_unknown_released(env):
    g, rec = env.gate, env.rec
    e1 = g.acquire("st")
    assert g.lockapi("st", "release", epoch=e1)[0] == 200
    # the released epoch is refused even though it is still the latest
    st, h, data = g.write("/st/released", "st", e1)
    assert st == 409, (st, data)
    doc = json_error(data, "FencingTokenStale")
    assert doc["currentEpoch"] == e1 and h["x-fencing-epoch"] == str(e1)
    e2 = g.acquire("st")
    assert e2 == e1 + 1
    st, h, data = g.write("/st/stale", "st", e1)
    assert st == 409
    doc = json_error(data, "FencingTokenStale")
    assert doc["currentEpoch"] == e2 and h["x-fencing-epoch"] == str(e2), (doc, h)
    st, h, data = g.write("/st/unknown", "st", e2 + 5)
    assert st == 409
    doc = json_error(data, "FencingTokenUnknown")
    assert doc["currentEpoch"] == e2
    for p in ("/st/released", "/st/stale", "/st/unknown"):
        assert rec.seen(p) == [], p
    st, _, _ = g.write("/st/current", "st", e2)
    assert st == 200
    assert len(rec.seen("/st/current")) == 1


def test_newer_epoch_from_the_store(env):
    """An epoch taken directly in the store (fencectl --store) is verified by
    reading its lock file: T > C with a real file is accepted and raises C."""
    g, rec = env.gate, env.rec
    e1 = g.acquire("ext")
    g.lockapi("ext", "release", epoch=e1)
    r = harness.run([os.path.join(harness.BIN, "fencectl"), "--store", env.store,
                     "acquire", "ext", "--ttl", "30s"])
    assert r.returncode == 0, r.stderr
    e2 = int(r.stdout.strip())
    assert e2 == e1 + 1
    st, _, _ = g.write("/ext/new", "ext", e2)
    assert st == 200
    st, _, data = g.write("/ext/old", "ext", e1)
    assert st == 409
    assert json.loads(data)["currentEpoch"] == e2
    assert rec.seen("/ext/old") == []


def test_reads_pass_untouched(env):
    g, rec = env.gate, env.rec
    st, _, data = g.request("GET", "/r/1?q=1")
    assert st == 200 and json.loads(data)["ok"]
    got = rec.seen("/r/1?q=1")
    assert len(got) == 1 and "x-fencing-token" not in got[0]["headers"]
    # a read with a (stale, even bogus) token is not judged, nor rewritten
    st, _, _ = g.request("GET", "/r/2", headers={"X-Fencing-Token": "abc",
                                                 "X-Fencing-Lock": "nolock"})
    assert st == 200
    got = rec.seen("/r/2")
    assert got[0]["headers"]["x-fencing-token"] == "abc"
    st, _, _ = g.request("HEAD", "/r/3")
    assert st == 200


def test_barrier_orders_epochs(env):
    g, rec = env.gate, env.rec
    e1 = g.acquire("bar")
    results = {}

    def old_write():
        results["old"] = g.write("/bar/old", "bar", e1, extra={"X-Test-Delay": "1.5"})

    t = threading.Thread(target=old_write)
    t.start()
    rec.wait_seen("/bar/old")  # the old-epoch write is in the downstream's hands
    assert g.lockapi("bar", "release", epoch=e1)[0] == 200
    e2 = g.acquire("bar")
    t0 = time.monotonic()
    st, _, data = g.write("/bar/new", "bar", e2)
    waited = time.monotonic() - t0
    assert st == 200, (st, data)
    t.join(10)
    assert results["old"][0] == 200, results
    old = rec.seen("/bar/old")[0]
    new = rec.seen("/bar/new")[0]
    # the new epoch reached the downstream only after the old write finished
    assert new["t_arrived"] >= old["t_done"], (new["t_arrived"], old["t_done"])
    assert waited > 0.5, waited
    # an old-epoch write now is refused and never forwarded
    st, _, data = g.write("/bar/late", "bar", e1)
    assert st == 409
    json_error(data, "FencingTokenStale")
    assert rec.seen("/bar/late") == []


def test_barrier_refuses_old_while_draining(env):
    """While the new epoch waits, writes of the old epoch are refused, and
    the waiting new-epoch write still goes after the slow old one."""
    g, rec = env.gate, env.rec
    e1 = g.acquire("drn")
    results = {}

    def write(key, epoch, delay=None):
        extra = {"X-Test-Delay": str(delay)} if delay else None
        results[key] = g.write("/drn/" + key, "drn", epoch, extra=extra)

    t_old = threading.Thread(target=write, args=("old", e1, 1.5))
    t_old.start()
    rec.wait_seen("/drn/old")
    g.lockapi("drn", "release", epoch=e1)
    e2 = g.acquire("drn")
    t_new = threading.Thread(target=write, args=("new", e2))
    t_new.start()
    time.sleep(0.3)
    assert rec.seen("/drn/new") == []  # held by the barrier
    st, _, data = g.write("/drn/zombie", "drn", e1)
    assert st == 409
    json_error(data, "FencingTokenStale")
    t_old.join(10)
    t_new.join(10)
    assert results["old"][0] == 200 and results["new"][0] == 200, results
    assert rec.seen("/drn/zombie") == []
    assert rec.seen("/drn/new")[0]["t_arrived"] >= rec.seen("/drn/old")[0]["t_done"]


def test_barrier_client_leaves(env):
    """A new-epoch write whose client leaves while it waits is never
    forwarded, and does not stay counted: the next epoch flows at once."""
    g, rec = env.gate, env.rec
    e1 = g.acquire("lve")
    t = threading.Thread(target=g.write, args=("/lve/old", "lve", e1),
                         kwargs={"extra": {"X-Test-Delay": "1.2"}})
    t.start()
    rec.wait_seen("/lve/old")
    g.lockapi("lve", "release", epoch=e1)
    e2 = g.acquire("lve")
    try:
        c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=0.3)
        c.request("PUT", "/lve/gone", b"g", {"X-Fencing-Lock": "lve",
                                             "X-Fencing-Token": str(e2)})
        c.getresponse()
        raise AssertionError("the waiting write was answered early")
    except OSError:
        pass
    finally:
        c.close()
    t.join(10)
    time.sleep(0.2)
    assert rec.seen("/lve/gone") == []
    g.lockapi("lve", "release", epoch=e2)
    e3 = g.acquire("lve")
    t0 = time.monotonic()
    st, _, _ = g.write("/lve/next", "lve", e3)
    assert st == 200 and time.monotonic() - t0 < 1.0, (st, time.monotonic() - t0)


def test_barrier_timeout(env):
    """The wait is bounded (--barrier-timeout 1s here, 5 s by default): the
    new-epoch write is answered 503 and never forwarded."""
    rec = env.rec
    g = Gate("--mode", "http", "--upstream", rec.url, "--lock-store", env.store,
             "--barrier-timeout", "1s")
    try:
        e1 = g.acquire("tmo")
        results = {}

        def old_write():
            results["old"] = g.write("/tmo/old", "tmo", e1, extra={"X-Test-Delay": "2.5"})

        t = threading.Thread(target=old_write)
        t.start()
        rec.wait_seen("/tmo/old")
        g.lockapi("tmo", "release", epoch=e1)
        e2 = g.acquire("tmo")
        t0 = time.monotonic()
        st, h, data = g.write("/tmo/new", "tmo", e2)
        waited = time.monotonic() - t0
        assert st == 503, (st, data)
        json_error(data, "FencingBarrierTimeout")
        assert h.get("retry-after") == "1", h
        assert 0.8 < waited < 2.3, waited
        assert rec.seen("/tmo/new") == []
        t.join(15)
        assert results["old"][0] == 200
        # once the old write is over, the new epoch flows
        st, _, _ = g.write("/tmo/after", "tmo", e2)
        assert st == 200
    finally:
        g.close()


def test_barrier_unknown_outcome(env):
    """Issue 7, item 4: an old-epoch write that times out (504) may still
    be applied by the downstream; the barrier must not lift at the 504.
    Here the downstream applies it at 3 s, the proxy gives up at 1 s; the
    new epoch's write must reach the downstream after the old one is
    applied (the grace, 3 s here, runs from the closed connection)."""
    rec = env.rec
    g = Gate("--mode", "http", "--upstream", rec.url, "--lock-store", env.store,
             "--upstream-timeout", "1s", "--barrier-grace", "3s")
    try:
        e1 = g.acquire("unk")
        results = {}

        def old_write():
            results["old"] = g.write("/unk/old", "unk", e1, extra={"X-Test-Delay": "3"})

        t = threading.Thread(target=old_write)
        t.start()
        rec.wait_seen("/unk/old")
        g.lockapi("unk", "release", epoch=e1)
        e2 = g.acquire("unk")
        t.join(10)
        assert results["old"][0] == 504, results  # the outcome is unknown
        st, _, data = g.write("/unk/new", "unk", e2)
        assert st == 200, (st, data)
        old = rec.seen("/unk/old")[0]
        new = rec.wait_seen("/unk/new")[0]
        assert "t_applied" in old, old
        assert new["t_arrived"] >= old["t_applied"], (new["t_arrived"], old["t_applied"])
    finally:
        g.close()


def test_lock_api(env):
    g = env.gate
    e = g.acquire("api")
    st, doc = g.lockapi("api", "acquire", ttlMs=30000, holder="other")
    assert st == 409 and doc["error"] == "LockHeld", doc
    assert g.lockapi("api", "renew", epoch=e)[0] == 200
    st, _, data = g.request("GET", "/_fence/locks/api")
    doc = json.loads(data)
    assert st == 200 and doc["epoch"] == e, doc
    st, _, data = g.request("GET", "/_fence/locks")
    assert st == 200 and "api" in data.decode()
    assert g.lockapi("api", "release", epoch=e)[0] == 200
    st, doc = g.lockapi("api", "renew", epoch=e)
    assert st == 409 and doc["error"] == "LockLost", doc


def test_flags():
    """Without --lock-store, locks live in the --data directory (made if
    missing) and the proxy warns that replicas must share one."""
    rec = Recorder()
    tmp = harness.TempDir()
    data = os.path.join(tmp.path, "fg-data")
    g = None
    try:
        g = Gate("--mode", "http", "--upstream", rec.url, "--data", data)
        e = g.acquire("dflt")
        assert os.path.exists(os.path.join(data, "locks", "dflt", "lock-%010d.json" % e))
        assert g.write("/d/1", "dflt", e)[0] == 200
        assert "no --lock-store" in g.logtext()
    finally:
        if g:
            g.close()
        rec.close()
        tmp.close()


def test_config_routes():
    """With -c: the route names the lock, a strict route refuses a lapsed
    lease, X-Fencing-Lock only where the route allows it."""
    rec = Recorder()
    tmp = harness.TempDir()
    gate = None
    try:
        cfg = {
            "listen": ["127.0.0.1:%d" % harness.free_port()],
            "mode": "http",
            "upstream": {"endpoint": rec.url},
            "lock_store": "file://" + tmp.path,
            "locks": [{"name": "ledger"}, {"name": "reports"}],
            "routes": [{"prefix": "/ledger/", "lock": "ledger", "strict": True},
                       {"prefix": "/reports/", "lock": "reports", "methods": ["PUT"],
                        "allow_lock_header": True}],
        }
        path = os.path.join(tmp.path, "fencegate.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        port = int(cfg["listen"][0].rsplit(":", 1)[1])
        log = tempfile.TemporaryFile()
        proc = subprocess.Popen([os.path.join(harness.BIN, "fencegate"), "-c", path],
                                stderr=log)
        gate = (proc, log)
        harness.wait_port(port, proc)
        g = Gate.__new__(Gate)
        g.port = port
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and g.request("GET", "/_fence/health")[0] != 200:
            time.sleep(0.05)
        # with a config, the lock API serves only the locks it names
        st, doc = g.lockapi("ledgre", "acquire", ttlMs=30000, holder="t")
        assert st == 404 and doc["error"] == "NoSuchLock", (st, doc)
        assert not os.path.exists(os.path.join(tmp.path, "locks", "ledgre"))
        e0 = g.acquire("ledger")
        assert g.write("/ledger/0", None, e0)[0] == 200
        # strict lists before every write: a lock broken behind the proxy's
        # back (fencectl on the store: epoch e0+1, already expired) fences
        # the old token at once, not at the next refresh
        r = harness.run([os.path.join(harness.BIN, "fencectl"), "--store",
                         "file://" + tmp.path, "break", "ledger"])
        assert r.returncode == 0, r.stderr
        st, _, data = g.write("/ledger/zombie", None, e0)
        assert st == 409, (st, data)
        assert rec.seen("/ledger/zombie") == []
        e = g.acquire("ledger", ttl=1500)
        assert e == e0 + 2, e
        st, _, data = g.write("/ledger/a", None, e)
        assert st == 200, (st, data)
        assert rec.seen("/ledger/a")[0]["headers"]["x-fencing-lock"] == "ledger"
        # naming another lock on a route that does not allow it
        st, _, data = g.write("/ledger/b", "reports", 1)
        assert st == 400
        json_error(data, "InvalidFencingLock")
        # POST is not fenced on /reports/ (methods: PUT)
        st, _, _ = g.request("POST", "/reports/x", b"p")
        assert st == 200
        st, _, data = g.request("PUT", "/reports/y", b"p")
        assert st == 428
        # unrouted writes are refused by default
        st, _, data = g.write("/elsewhere", None, 1)
        assert st == 403, (st, data)
        assert rec.seen("/elsewhere") == []
        # strict: the lease lapses (1.5 s, plus the 1 s rounding) -> refused
        time.sleep(3.2)
        st, _, data = g.write("/ledger/late", None, e)
        assert st == 409, (st, data)
        json_error(data, "FencingTokenStale")
        assert rec.seen("/ledger/late") == []
    finally:
        if gate:
            harness.stop(gate[0])
            if os.environ.get("FENCE_DEBUG"):
                gate[1].seek(0)
                print(gate[1].read().decode("utf-8", "replace"))
            gate[1].close()
        rec.close()
        tmp.close()


def test_s3_config_routes():
    """S3 mode with -c (embedded store): the route's lock fences writes
    under its prefix, unrouted writes are refused, lock files of a
    configured lock are guarded, the route's strict flag is kept."""
    tmp = harness.TempDir()
    proc = None
    log = tempfile.TemporaryFile()
    try:
        data = os.path.join(tmp.path, "data")
        os.mkdir(data)
        port = harness.free_port()
        cfg = {"listen": ["127.0.0.1:%d" % port], "mode": "s3", "data_dir": data,
               "locks": [{"name": "inv", "store": "s3://bkt", "prefix": "locks/inv/lock-"}],
               "routes": [{"prefix": "/bkt/inv/", "lock": "inv", "strict": True}]}
        path = os.path.join(tmp.path, "s3.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        proc = subprocess.Popen([os.path.join(harness.BIN, "fencegate"), "-c", path,
                                 "--access-log", "off"], stderr=log)
        harness.wait_port(port, proc)
        g = Gate.__new__(Gate)
        g.port = port
        g.log = log
        # bucket administration passes unfenced (the lock's first load may
        # have made the bucket's directory already)
        st, _, data_ = g.request("PUT", "/bkt")
        assert st == 200 or b"BucketAlreadyOwnedByYou" in data_, (st, data_)
        e = g.acquire("inv")
        hdr = {"X-Fencing-Token": str(e), "Content-Type": "application/octet-stream"}
        st, _, data_ = g.request("PUT", "/bkt/inv/a", b"A", hdr)
        assert st == 200, (st, data_)
        st, _, data_ = g.request("PUT", "/bkt/other", b"O", hdr)
        assert st == 403, (st, data_)
        assert b"<Code>AccessDenied</Code>" in data_, data_
        # without a config this would have been lock "bkt": now it is "inv"
        st, _, data_ = g.request("PUT", "/bkt/inv/b", b"B",
                                 dict(hdr, **{"X-Fencing-Lock": "bkt"}))
        assert st == 400 and b"InvalidFencingLock" in data_, (st, data_)
        # the configured lock's files in its bucket are guarded (a forged
        # epoch far ahead is refused)
        st, _, data_ = g.request("PUT", "/bkt/locks/inv/lock-0000000099.json",
                                 b'{"leaderId":"x","validityMs":1000}',
                                 {"If-None-Match": "*", "Content-Type": "application/json"})
        assert st in (409, 400, 412), (st, data_)
        assert not os.path.exists(os.path.join(data, "bkt", "locks", "inv",
                                               "lock-0000000099.json"))
        g.lockapi("inv", "release", epoch=e)
        e2 = g.acquire("inv")
        st, _, data_ = g.request("PUT", "/bkt/inv/a", b"old", hdr)
        assert st == 409 and b"FencingTokenStale" in data_, (st, data_)
        st, _, data_ = g.request("GET", "/bkt/inv/a")
        assert st == 200 and data_ == b"A", (st, data_)
        assert e2 == e + 1
        # strict lists before every write: an epoch taken behind the proxy's
        # back (fencectl on the store) fences the old token at once
        hdr2 = dict(hdr, **{"X-Fencing-Token": str(e2)})
        assert g.request("PUT", "/bkt/inv/c", b"C", hdr2)[0] == 200
        r = harness.run([os.path.join(harness.BIN, "fencectl"), "--store",
                         "file://" + os.path.join(data, "bkt"), "break", "inv"])
        assert r.returncode == 0, (r.stdout, r.stderr)
        st, _, data_ = g.request("PUT", "/bkt/inv/c", b"zombie", hdr2)
        assert st == 409 and b"FencingTokenStale" in data_, (st, data_)
    finally:
        if proc:
            harness.stop(proc)
        if os.environ.get("FENCE_DEBUG"):
            log.seek(0)
            print(log.read().decode("utf-8", "replace"))
        log.close()
        tmp.close()


def test_s3_lock_store():
    """Locks in a moto bucket under a root: s3://BUCKET/ROOT."""
    t0 = time.monotonic()
    moto = harness.Moto()
    rec = Recorder()
    gate = None
    try:
        moto.create_bucket("http-locks")
        env = dict(harness.CREDS, AWS_ENDPOINT_URL=moto.url)
        gate = Gate("--mode", "http", "--upstream", rec.url,
                    "--lock-store", "s3://http-locks/fg", env=env)
        print("  moto + gate ready after %.1fs" % (time.monotonic() - t0))
        e = gate.acquire("s3lock")
        keys = [o["Key"] for o in moto.client().list_objects_v2(
            Bucket="http-locks").get("Contents", [])]
        assert "fg/locks/s3lock/lock-%010d.json" % e in keys, keys
        st, _, _ = gate.write("/s3/1", "s3lock", e)
        assert st == 200
        st, _, data = gate.write("/s3/2", "s3lock", e + 1)
        assert st == 409
        json_error(data, "FencingTokenUnknown")
        assert rec.seen("/s3/2") == []
    finally:
        if gate:
            gate.close()
        rec.close()
        moto.close()


def main():
    r = harness.Runner("e2e httpmode")
    env = Env()
    try:
        r.check("fenced write forwarded with X-Fencing-Token", test_fenced_write_forwarded, env)
        r.check("428 / 400 with JSON bodies, never forwarded", test_missing_and_invalid, env)
        r.check("stale, unknown and released epochs refused", test_stale_unknown_released, env)
        r.check("a newer epoch taken in the store is verified", test_newer_epoch_from_the_store,
                env)
        r.check("reads pass untouched", test_reads_pass_untouched, env)
        r.check("barrier: new epoch after the old in-flight write", test_barrier_orders_epochs,
                env)
        r.check("barrier: old epoch refused while the new one waits",
                test_barrier_refuses_old_while_draining, env)
        r.check("barrier: a waiting client leaves", test_barrier_client_leaves, env)
        r.check("barrier: bounded wait, 503", test_barrier_timeout, env)
        r.check("barrier: a write of unknown outcome holds it for the grace",
                test_barrier_unknown_outcome, env)
        r.check("lock API in HTTP mode", test_lock_api, env)
    finally:
        env.close()
    r.check("no --lock-store: the data directory", test_flags)
    r.check("config: routes, strict, lock header policy", test_config_routes)
    r.check("S3 lock store (moto)", test_s3_lock_store)
    r.check("S3 mode with -c: routes name the lock", test_s3_config_routes)
    r.finish()
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
