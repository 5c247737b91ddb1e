#!/usr/bin/env python3
"""End-to-end tests of how fencegate in S3 mode meets its upstream and its
clients: health against a backend that fails the self-test, is not there
yet or stops answering; one upstream request per steady-state write; a
refused write answered without reading its body; the access log; clients
that leave while their request is suspended.

Starts a real moto_server and bin/fencegate (from FENCE_BIN) on free
127.0.0.1 ports, as test_fencing.py does (its Gate and request helpers).
Every process is stopped by its PID. Prints 'N passed, N failed'."""
import http.client
import json
import os
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from relay import Relay  # noqa: E402
from test_fencing import Gate, acquire, api, expect, moto_body, release, req  # noqa: E402


# a relay that counts and remembers the requests it carries (tests/relay.py)
CountingProxy = Relay


def wait_health(g, until, seconds, pause):
    """Asks g's /_fence/health every pause seconds until until(code, body)
    holds or seconds have passed; the last answer."""
    deadline = time.monotonic() + seconds
    while True:
        st, j = api(g.port, "GET", "/_fence/health")
        if until(st, j) or time.monotonic() > deadline:
            return st, j
        time.sleep(pause)


def test_health_refuses_unsafe_backend(moto):
    # a bucket that does not exist: the self-test cannot pass, health says so
    g = Gate("--upstream", moto.url, "--check-bucket", "no-such-bucket-here")
    try:
        st, j = wait_health(g, lambda st, j: j.get("status") == "failed", 10, 0.1)
        expect(st == 503 and j["status"] == "failed", "health: %s %s" % (st, j))
        expect("self-test failed" in g.logtext(), "the log names the problem")
    finally:
        g.close()


def test_health_self_test_retries(moto):
    """A self-test that fails for want of the store (here its bucket does
    not exist yet) is tried again with a backoff: once the bucket is
    created, health turns 200 without a restart. A store that ignores
    conditions stays refused (the self-test's verdict, in lock_admin.c)."""
    b = "fence-late-bucket"
    g = Gate("--upstream", moto.url, "--check-bucket", b, "--access-log", "off")
    try:
        st, j = wait_health(g, lambda st, j: j.get("status") == "failed", 10, 0.1)
        expect(st == 503 and j["status"] == "failed", "health before: %s %s" % (st, j))
        expect("trying again in" in g.logtext(), "the log says it retries:\n" + g.logtext())
        moto.create_bucket(b)
        st, j = wait_health(g, lambda st, j: st == 200, 15, 0.2)
        expect(st == 200 and j["status"] == "ok", "health after the bucket: %s %s" % (st, j))
        expect("self-test passed" in g.logtext(), "passed after a retry")
    finally:
        g.close()


def test_health_reports_upstream(moto):
    """With --check-bucket, health follows the upstream: 503
    upstream_unreachable while S3 does not answer (moto frozen, our own
    process), 200 again once it does. Waits are bounded."""
    b = "fence-health-up"
    moto.create_bucket(b)
    g = Gate("--upstream", moto.url, "--check-bucket", b, "--access-log", "off")

    def wait_for(status, seconds):
        return wait_health(g, lambda st, j: j.get("status") == status, seconds, 0.2)

    frozen = False
    try:
        st, j = wait_for("ok", 10)
        expect(st == 200, "healthy first: %s %s" % (st, j))
        os.kill(moto.proc.pid, signal.SIGSTOP)
        frozen = True
        st, j = wait_for("upstream_unreachable", 15)
        expect(st == 503 and j["status"] == "upstream_unreachable" and j["message"],
               "health while S3 is down: %s %s" % (st, j))
        os.kill(moto.proc.pid, signal.SIGCONT)
        frozen = False
        st, j = wait_for("ok", 15)
        expect(st == 200, "healthy again: %s %s" % (st, j))
        expect("upstream unreachable" in g.logtext(), "the log says so")
    finally:
        if frozen:
            os.kill(moto.proc.pid, signal.SIGCONT)
        g.close()


def test_one_upstream_request_per_write(moto):
    b = "fence-count"
    moto.create_bucket(b)
    counter = CountingProxy(moto.port)
    # counts what one instance with a warm ETag cache sends: one event loop
    # (each worker has its own cache, so a write that reaches a cold one
    # costs a HEAD more, as with a second replica)
    g = Gate("--upstream", counter.url, "--access-log", "off", "--lock-refresh", "3600s",
             "--workers", "1")
    try:
        e = acquire(g.port, b, "count")
        st, h, d = req(g.port, "PUT", "/%s/k" % b, b"first", {"X-Fencing-Token": str(e)})
        expect(st == 200, "first write: %s" % st)
        for i in range(5):
            counter.reset()
            st, h, d = req(g.port, "PUT", "/%s/k" % b, b"v%d" % i,
                           {"X-Fencing-Token": str(e)})
            expect(st == 200, "steady write: %s %s" % (st, d))
            time.sleep(0.05)
            expect(counter.count() == 1 and counter.lines[0].startswith("PUT /%s/k" % b),
                   "upstream requests for one write: %s" % counter.lines)
        body, meta = moto_body(moto, b, "k")
        expect(body == b"v4", "last write stored")
        # a stale write costs nothing upstream
        counter.reset()
        st, h, d = req(g.port, "PUT", "/%s/k" % b, b"x", {"X-Fencing-Token": str(e + 100)})
        # an unknown epoch costs one load of the lock (a listing after the
        # known epoch, a GET of the latest) and nothing is forwarded
        expect(st == 409 and counter.count() == 2 and "list-type=2" in counter.lines[0]
               and counter.lines[1].startswith("GET ") and
               not any(x.startswith("PUT ") for x in counter.lines),
               "unknown epoch: one load only: %s" % counter.lines)
        counter.reset()
        st, h, d = req(g.port, "PUT", "/%s/k" % b, b"x")
        expect(st == 428 and counter.count() == 0, "no token: nothing upstream")
    finally:
        g.close()
        counter.close()


def raw_put_answer(port, path, headers, body_len, send_body=True):
    """Sends a PUT head with Content-Length body_len (and, from a thread,
    the body, as a client that does not wait would), reads until the proxy
    closes; returns (status line, head, whole answer)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = "PUT %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n" \
           "Content-Length: %d\r\n%s\r\n" % (path, body_len, "".join(
               "%s: %s\r\n" % kv for kv in headers.items()))

    def send():
        try:
            s.sendall(head.encode() + (b"z" * body_len if send_body else b""))
        except OSError:
            pass
    t = threading.Thread(target=send, daemon=True)
    t.start()
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError as e:
        data += ("<%s>" % e.__class__.__name__).encode()
    finally:
        t.join(10)
        s.close()
    hd = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    return hd.split("\r\n", 1)[0], hd.lower(), data


def test_rejection_reads_no_body(moto):
    """A 1 MiB write refused from its head (stale token, no token) is
    answered at once and closes (lingering: the client reads the answer,
    no reset), nothing goes upstream and storage keeps its object; with
    Expect: 100-continue the refusal comes without 100 Continue."""
    b = "fence-bigreject"
    moto.create_bucket(b)
    counter = CountingProxy(moto.port)
    g = Gate("--upstream", counter.url, "--access-log", "off", "--lock-refresh", "3600s")
    try:
        e1 = acquire(g.port, b, "big1")
        release(g.port, b, e1)
        e2 = acquire(g.port, b, "big2")
        st, h, d = req(g.port, "PUT", "/%s/k" % b, b"kept", {"X-Fencing-Token": str(e2)})
        expect(st == 200, "current write: %s %s" % (st, d))
        mib = 1024 * 1024
        cases = [("stale", {"X-Fencing-Token": str(e1)}, True, "409", b"FencingTokenStale"),
                 ("no token", {}, True, "428", b"FencingTokenMissing"),
                 ("stale, 100-continue", {"X-Fencing-Token": str(e1),
                                          "Expect": "100-continue"}, False, "409",
                  b"FencingTokenStale")]
        for name, hdrs, send_body, status, code in cases:
            counter.reset()
            line, hd, data = raw_put_answer(g.port, "/%s/k" % b, hdrs, mib, send_body)
            expect(line.split(" ")[1:2] == [status] and code in data,
                   "%s: answer %r" % (name, data[:300]))
            expect("connection: close" in hd, "%s: the answer closes: %r" % (name, hd))
            expect(b"100 Continue" not in data, "%s: no 100 Continue" % name)
            expect(b"<ConnectionResetError>" not in data, "%s: reset" % name)
            # the write never goes upstream; reading the lock may (a worker
            # that had not loaded it yet lists its epochs)
            to_key = counter.to_path("/%s/k" % b)
            expect(not to_key, "%s: upstream requests for the key: %s" % (name, to_key))
        body, meta = moto_body(moto, b, "k")
        expect(body == b"kept", "storage unchanged: %r" % body)
        # a small refused body that came with its head is skipped, and the
        # connection stays open
        c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=10)
        try:
            for _ in range(2):
                c.request("PUT", "/%s/k" % b, body=b"small",
                          headers={"X-Fencing-Token": str(e1)})
                r = c.getresponse()
                r.read()
                expect(r.status == 409 and r.getheader("Connection") != "close",
                       "small stale body: %s %s" % (r.status, r.getheaders()))
        finally:
            c.close()
        # as above: the refused writes never reach upstream
        to_key = counter.to_path("/%s/k" % b)
        expect(not to_key, "small stale bodies: upstream requests for the key: %s" % to_key)
    finally:
        g.close()
        counter.close()


def read_answer(f):
    """One HTTP/1.1 answer with a Content-Length from the file f: (status,
    lower-cased head, body); status None when the connection closed."""
    line = f.readline()
    if not line:
        return None, "", b""
    hd = [line.decode("latin-1").strip()]
    while True:
        ln = f.readline().decode("latin-1").strip()
        if not ln:
            break
        hd.append(ln)
    n = [int(x.split(":", 1)[1]) for x in hd if x.lower().startswith("content-length:")]
    body = f.read(n[0]) if n else b""
    return int(hd[0].split(" ")[1]), "\r\n".join(hd).lower(), body


def test_rejection_discards_bounded_body(moto):
    """A refused write whose body is small and of known length (up to
    64 KiB) is answered from its head, its body read and dropped, and the
    connection kept for the next request, even when the body is only sent
    after the answer; a large one still closes. Nothing reaches upstream
    and storage keeps its object."""
    b = "fence-discard"
    moto.create_bucket(b)
    counter = CountingProxy(moto.port)
    g = Gate("--upstream", counter.url, "--access-log", "off", "--lock-refresh", "3600s")
    try:
        e1 = acquire(g.port, b, "d1")
        release(g.port, b, e1)
        e2 = acquire(g.port, b, "d2")
        st, h, d = req(g.port, "PUT", "/%s/k" % b, b"kept", {"X-Fencing-Token": str(e2)})
        expect(st == 200, "current write: %s %s" % (st, d))
        counter.reset()
        for size in (1024, 64 * 1024):
            s = socket.create_connection(("127.0.0.1", g.port), timeout=10)
            f = s.makefile("rb")
            try:
                for i in range(3):
                    head = ("PUT /%s/k HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                            "X-Fencing-Token: %d\r\n\r\n" % (b, size, e1)).encode()
                    if i == 1:
                        # the answer comes from the head alone; then the body
                        s.sendall(head)
                        st, hd, body = read_answer(f)
                        s.sendall(b"y" * size)
                    else:
                        s.sendall(head + b"y" * size)
                        st, hd, body = read_answer(f)
                    expect(st == 409 and b"FencingTokenStale" in body,
                           "%d bytes, #%d: %s %r" % (size, i, st, body[:200]))
                    expect("connection: close" not in hd, "%d bytes, #%d: kept: %r"
                           % (size, i, hd))
                # the same connection serves a next request
                s.sendall(("GET /%s/k HTTP/1.1\r\nHost: x\r\n\r\n" % b).encode())
                st, hd, body = read_answer(f)
                expect(st == 200 and body == b"kept", "%d bytes: reused: %s %r"
                       % (size, st, body[:200]))
            finally:
                f.close()
                s.close()
        # large and not sent yet: answered, then closed (2 MiB: over
        # limits.discard_max too, for a worker that had begun reading it)
        s = socket.create_connection(("127.0.0.1", g.port), timeout=10)
        f = s.makefile("rb")
        try:
            s.sendall(("PUT /%s/k HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                       "X-Fencing-Token: %d\r\n\r\n" % (b, 2 * 1024 * 1024, e1)).encode())
            st, hd, body = read_answer(f)
            expect(st == 409 and "connection: close" in hd, "large: %s %r" % (st, hd))
            expect(f.read() == b"", "large: closed after the answer")
        finally:
            f.close()
            s.close()
        to_key = [ln for ln in counter.lines if ln.split(" ")[0] != "GET"]
        expect(not to_key, "writes upstream: %s" % to_key)
        body, meta = moto_body(moto, b, "k")
        expect(body == b"kept", "storage unchanged: %r" % body)
    finally:
        g.close()
        counter.close()


def test_access_log(moto):
    b = "fence-log"
    moto.create_bucket(b)
    g = Gate("--upstream", moto.url)
    try:
        e = acquire(g.port, b, "log")
        req(g.port, "PUT", "/%s/k" % b, b"x", {"X-Fencing-Token": str(e)})
        req(g.port, "PUT", "/%s/k" % b, b"x", {"X-Fencing-Token": "99"})
        time.sleep(0.1)
        lines = [json.loads(x) for x in g.logtext().splitlines() if x.startswith("{")]
        puts = [x for x in lines if x["method"] == "PUT" and x["key"] == "k"]
        expect(len(puts) == 2, "two PUT lines: %s" % puts)
        ok, bad = puts
        expect(ok["verdict"] == "forward" and ok["presentedEpoch"] == e and
               ok["currentEpoch"] == e and ok["upstreamStatus"] == 200 and ok["lock"] == b
               and ok["bucket"] == b and ok["bytesIn"] == 1, "forward line: %s" % ok)
        expect(bad["verdict"] == "reject_unknown" and bad["status"] == 409 and
               bad["upstreamStatus"] is None, "reject line: %s" % bad)
        for x in puts:
            for field in ("requestId", "durationMs", "bytesOut", "time"):
                expect(field in x, "field %s" % field)
    finally:
        g.close()


def test_client_gone_while_suspended(moto):
    b = "fence-gone"
    moto.create_bucket(b)
    g = Gate("--upstream", moto.url, "--access-log", "off")
    try:
        e = acquire(g.port, b, "gone")
        raw = ("PUT /%s/k HTTP/1.1\r\nHost: x\r\nX-Fencing-Token: %d\r\n"
               "Content-Length: 3\r\n\r\nabc" % (b, e)).encode()
        # leave while the write waits for a lock lookup / HEAD, many times
        for i in range(20):
            s = socket.create_connection(("127.0.0.1", g.port))
            token = e + 1 if i % 2 else e
            s.sendall(raw.replace(b"Token: %d" % e, b"Token: %d" % token)
                      .replace(b"/k ", b"/k%d " % i))
            s.close()
        # an acquire that waits, abandoned
        s = socket.create_connection(("127.0.0.1", g.port))
        body = b'{"holder":"x","waitMs":2000}'
        s.sendall(b"POST /_fence/locks/%s/acquire HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Length: %d\r\n\r\n%s" % (b.encode(), len(body), body))
        time.sleep(0.2)
        s.close()
        time.sleep(2.5)
        expect(g.proc.poll() is None, "still running")
        st, h, d = req(g.port, "PUT", "/%s/after" % b, b"ok", {"X-Fencing-Token": str(e)})
        expect(st == 200, "serves after abandoned requests: %s %s" % (st, d))
        st, h, d = req(g.port, "GET", "/_fence/metrics")
        expect("fencegate_in_flight_requests 1" in d.decode(), "nothing left in flight: %s"
               % [x for x in d.decode().splitlines() if "in_flight" in x])
    finally:
        rc = g.close()
        expect(rc == 0, "clean exit: %s" % rc)


def main():
    r = harness.Runner("e2e fencing ops")
    moto = harness.Moto()
    try:
        r.check("health refuses a backend that fails the self-test",
                test_health_refuses_unsafe_backend, moto)
        r.check("health: a self-test that could not reach the store is tried again",
                test_health_self_test_retries, moto)
        r.check("health follows the upstream (--check-bucket)",
                test_health_reports_upstream, moto)
        r.check("steady state: one upstream request per write",
                test_one_upstream_request_per_write, moto)
        r.check("a refused 1 MiB write: answered at once, closed, nothing upstream",
                test_rejection_reads_no_body, moto)
        r.check("a refused write of up to 64 KiB: body dropped, connection kept",
                test_rejection_discards_bounded_body, moto)
        r.check("access log lines", test_access_log, moto)
        r.check("clients leaving while their request is suspended",
                test_client_gone_while_suspended, moto)
    finally:
        moto.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
