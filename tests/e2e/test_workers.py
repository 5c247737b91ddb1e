#!/usr/bin/env python3
"""End-to-end: several event-loop workers (--workers 2) behave as one proxy.

Every request here goes on a fresh connection, so the kernel spreads them
over the workers' SO_REUSEPORT listeners (N connections all landing on one
of two workers has probability 2^-(N-1)); the assertions are on storage
(the embedded store's data directory, or moto_server read directly).

- Take-over: writers hold epoch 1 and write through every worker (each
  worker's registry has epoch 1 loaded; --lock-refresh is 60 s, so no
  worker would re-list the lock on its own in this test). The lock is
  released and taken again (epoch 2) through the lock API, the new writer
  writes once, and then stale writes with token 1 on many connections are
  all refused (409) and storage keeps the new writer's data: a newer epoch
  learned by one worker rejects stale writes on all of them at once (the
  shared high-water marks). Against the embedded store and against moto
  (S3 mode, with the object cache warm in each worker).
- Reload: SIGHUP changes what a write that no route matches gets (403
  reject, then allowed unfenced); once the reload is logged, every fresh
  connection sees the new policy (it applies on all workers).
- Drain: uploads in flight on many connections when SIGTERM arrives (their
  bodies half sent) all complete with 200 and land in storage; the process
  exits 0.
- Metrics report process totals: the accepted-connections counter counts
  every connection, whichever worker serves the scrape.
- A second fencegate on the same address exits 1 (SO_REUSEPORT would have
  let it share the port silently)."""
import http.client
import json
import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

CONNS = 24  # fresh connections per step


def request(port, method, path, body=b"", headers=None):
    """(status, body) over a new connection."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        h = {"Content-Type": "application/octet-stream"}
        h.update(headers or {})
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def put(port, path, body, token=None):
    return request(port, "PUT", path, body,
                   {"X-Fencing-Token": str(token)} if token else None)


def lock_call(port, lock, op, doc):
    st, body = request(port, "POST", "/_fence/locks/%s/%s" % (lock, op),
                       json.dumps(doc).encode(), {"Content-Type": "application/json"})
    assert st == 200, (op, st, body)
    return json.loads(body)


def check_take_over(port, bucket, read_back):
    """The take-over scenario; read_back(key) reads storage directly."""
    old = lock_call(port, bucket, "acquire", {"ttlMs": 60000, "holder": "writer-1"})["epoch"]
    for i in range(CONNS):  # epoch `old` loaded by every worker
        st, body = put(port, "/%s/k%d" % (bucket, i), b"old-%d" % i, old)
        assert st == 200, (i, st, body)
    lock_call(port, bucket, "release", {"epoch": old})
    new = lock_call(port, bucket, "acquire", {"ttlMs": 60000, "holder": "writer-2"})["epoch"]
    assert new > old, (old, new)
    # only the worker that served the acquire has seen the new epoch itself:
    # the stale writer is refused everywhere, before the new writer wrote
    # anything (so no object says "newer" either)
    for i in range(CONNS):
        st, body = put(port, "/%s/k%d" % (bucket, i), b"stale-%d" % i, old)
        assert st == 409 and b"FencingTokenStale" in body, (i, st, body)
        st, body = request(port, "DELETE", "/%s/k%d" % (bucket, i),
                           headers={"X-Fencing-Token": str(old)})
        assert st == 409, ("delete", i, st, body)
    for i in range(CONNS):
        assert read_back("k%d" % i) == b"old-%d" % i, i
    # the new writer is accepted everywhere, and the stale one still refused
    for i in range(CONNS):
        st, body = put(port, "/%s/k%d" % (bucket, i), b"new-%d" % i, new)
        assert st == 200, (i, st, body)
        st, body = put(port, "/%s/k%d" % (bucket, i), b"stale-%d" % i, old)
        assert st == 409, (i, st, body)
    for i in range(CONNS):
        assert read_back("k%d" % i) == b"new-%d" % i, i


def test_take_over_embedded():
    g = harness.Fencegate("--workers", "2", "--lock-refresh", "60s", "--access-log", "off")
    try:
        st, _ = request(g.port, "PUT", "/wbucket")
        assert st == 200, st

        def read_back(key):
            with open(os.path.join(g.data, "wbucket", key), "rb") as f:
                return f.read()

        check_take_over(g.port, "wbucket", read_back)
        assert '2 event-loop workers' in g.stderr(), g.stderr()
    finally:
        assert g.close() == 0


def test_take_over_s3():
    moto = harness.Moto()
    g = None
    try:
        moto.create_bucket("wbucket-s3")
        s3 = moto.client()
        g = harness.Fencegate("--workers", "2", "--lock-refresh", "60s", "--access-log", "off",
                              "--upstream", moto.url, data=False)

        def read_back(key):
            return s3.get_object(Bucket="wbucket-s3", Key=key)["Body"].read()

        check_take_over(g.port, "wbucket-s3", read_back)
        # every worker's forwarded writes are in the one counter (each
        # worker once registered its own family: only the first counted)
        _, body = request(g.port, "GET", "/_fence/metrics")
        writes = [float(ln.split()[1]) for ln in body.decode().splitlines()
                  if ln.startswith('fencegate_upstream_requests_total{kind="write"}')]
        assert writes and writes[0] >= 2 * CONNS, (writes, body)
    finally:
        if g:
            assert g.close() == 0
        moto.close()


def test_reload_on_every_worker():
    g = harness.Fencegate("--access-log", "off",
                          config={"workers": 2, "unrouted_writes": "reject"})
    try:
        os.mkdir(os.path.join(g.data, "rbucket"))
        for i in range(CONNS):
            st, body = put(g.port, "/rbucket/before-%d" % i, b"x")
            assert st == 403, (i, st, body)
        with open(g.config) as f:
            cfg = json.load(f)
        cfg["unrouted_writes"] = "allow"
        with open(g.config, "w") as f:
            json.dump(cfg, f)
        os.kill(g.proc.pid, signal.SIGHUP)
        harness.wait_for("reload logged", lambda: "reloaded" in g.stderr())
        for i in range(CONNS):
            st, body = put(g.port, "/rbucket/after-%d" % i, b"after-%d" % i)
            assert st == 200, (i, st, body, g.stderr())
            with open(os.path.join(g.data, "rbucket", "after-%d" % i), "rb") as f:
                assert f.read() == b"after-%d" % i
        assert not any(n.startswith("before-") for n in
                       os.listdir(os.path.join(g.data, "rbucket")))
    finally:
        assert g.close() == 0


def test_drain_every_worker():
    g = harness.Fencegate("--workers", "2", "--access-log", "off")
    socks = []
    try:
        st, _ = request(g.port, "PUT", "/dbucket")
        assert st == 200, st
        epoch = lock_call(g.port, "dbucket", "acquire", {"ttlMs": 60000})["epoch"]
        half = b"a" * 1000
        for i in range(CONNS):
            s = socket.create_connection(("127.0.0.1", g.port), timeout=20)
            s.sendall(b"PUT /dbucket/d%d HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n"
                      b"Content-Type: application/octet-stream\r\n"
                      b"X-Fencing-Token: %d\r\n\r\n" % (i, epoch) + half)
            socks.append(s)
        # every upload is in flight (head decided, body half read), and the scrape
        harness.wait_for("uploads in flight", lambda: b"fencegate_in_flight_requests %d" % (CONNS + 1)
                         in request(g.port, "GET", "/_fence/metrics")[1])
        os.kill(g.proc.pid, signal.SIGTERM)
        harness.wait_for("drain logged", lambda: "draining" in g.stderr())
        time.sleep(0.3)
        for s in socks:
            s.sendall(b"b" * 1000)
        for i, s in enumerate(socks):
            resp = b""
            while b"\r\n\r\n" not in resp:
                chunk = s.recv(4096)
                if not chunk:
                    break
                resp += chunk
            assert resp.startswith(b"HTTP/1.1 200"), (i, resp)
        assert g.proc.wait(timeout=20) == 0
        for i in range(CONNS):
            with open(os.path.join(g.data, "dbucket", "d%d" % i), "rb") as f:
                assert f.read() == half + b"b" * 1000, i
        assert "drained: exiting" in g.stderr()
    finally:
        for s in socks:
            s.close()
        g.close()


def test_metrics_are_process_totals():
    g = harness.Fencegate("--workers", "2", "--access-log", "off")
    try:
        def accepted():
            _, body = request(g.port, "GET", "/_fence/metrics")
            for line in body.decode().splitlines():
                if line.startswith("fencegate_connections_accepted_total "):
                    return float(line.split()[1])
            raise AssertionError(body)
        base = accepted()
        for _ in range(CONNS):
            request(g.port, "GET", "/_fence/health")
        # each scrape is one more connection; whichever worker answers, the
        # total counts all of them
        seen = [accepted() for _ in range(8)]
        for n, v in enumerate(seen):
            assert v == base + CONNS + 1 + n, (base, seen)
    finally:
        assert g.close() == 0


def test_address_in_use():
    """SO_REUSEPORT must not let a second fencegate join the first one's
    address (the kernel would spread connections over both processes)."""
    g = harness.Fencegate("--workers", "2", "--access-log", "off")
    tmp = harness.TempDir()
    try:
        for workers in ("2", "1"):
            r = harness.run([os.path.join(harness.BIN, "fencegate"), "--listen",
                             "127.0.0.1:%d" % g.port, "--data", tmp.path, "--workers", workers,
                             "--access-log", "off"], timeout=20)
            assert r.returncode == 1 and "Address already in use" in r.stderr, (workers, r)
        assert g.get("/_fence/health")[0] == 200
    finally:
        tmp.close()
        assert g.close() == 0


def main():
    r = harness.Runner("workers")
    r.check("take-over: stale tokens refused on every worker, storage keeps the new "
            "writer's data (embedded store)", test_take_over_embedded)
    r.check("take-over: the same in S3 mode against moto", test_take_over_s3)
    r.check("reload: SIGHUP applies on every worker", test_reload_on_every_worker)
    r.check("drain: SIGTERM finishes uploads in flight on every worker",
            test_drain_every_worker)
    r.check("metrics: process totals whichever worker scrapes", test_metrics_are_process_totals)
    r.check("a second process cannot join the listening address", test_address_in_use)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
