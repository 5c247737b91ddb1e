#!/usr/bin/env python3
"""End-to-end: a request body must arrive at a minimum rate.

With --body-timeout 3s, a body trickling in one byte a second never trips
the inactivity timeout, but it falls below limits.body_min_rate (1024
bytes/s after 3 s of grace): 408 and close after about 3 s, where it used
to hold the connection for as long as the client liked. A slow but honest
body (8 KiB over 2 s) still lands. Time the proxy itself paused reading
because the upstream was slow (back-pressure) does not count against the
client: with --body-min-rate 8 MiB/s and 2 s of grace, a 24 MiB upload
(5 s of allowance) to an upstream that reads nothing for 6 s completes.
Every loop here is bounded."""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from test_front_upstream import ScriptedUpstream, read_request_head  # noqa: E402

BUCKET = "slowbody"


def acquire(g, lock):
    import json
    import urllib.request
    req = urllib.request.Request(g.url + "/_fence/locks/%s/acquire" % lock,
                                 data=b'{"ttlMs":60000}', method="POST")
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())["epoch"]


def response_of(s, timeout):
    """What the server sent before closing, within timeout seconds."""
    s.settimeout(timeout)
    got = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except OSError:
        pass
    return got


def t_trickle_cut(g):
    s = socket.create_connection(("127.0.0.1", g.port), timeout=5)
    t0 = time.monotonic()
    cut = False
    try:
        s.sendall(b"POST /_fence/locks/%s/acquire HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Length: 100\r\n\r\n{" % BUCKET.encode())
        for _ in range(15):  # 15 s at most, far past the 3 s deadline
            time.sleep(1.0)
            try:
                s.sendall(b" ")
            except OSError:
                cut = True
                break
            s.settimeout(0.01)
            try:
                if s.recv(1, socket.MSG_PEEK):
                    cut = True
                    break
            except socket.timeout:
                pass
            except OSError:
                cut = True
                break
        got = response_of(s, 3)
    finally:
        s.close()
    elapsed = time.monotonic() - t0
    assert cut, "the connection was still open after 15 s of 1 byte/s"
    assert got.startswith(b"HTTP/1.1 408"), got[:200]
    assert 2.5 < elapsed < 7, "cut after %.1f s, want about 3 s" % elapsed
    assert "too slow" in g.stderr(), g.stderr()[-2000:]
    assert g.get("/_fence/health")[0] == 200


def t_slow_but_honest(g):
    token = acquire(g, BUCKET)
    body = os.urandom(8192)
    s = socket.create_connection(("127.0.0.1", g.port), timeout=5)
    try:
        s.sendall(b"PUT /%s/honest HTTP/1.1\r\nHost: x\r\nX-Fencing-Token: %d\r\n"
                  b"Content-Type: application/octet-stream\r\nConnection: close\r\n"
                  b"Content-Length: %d\r\n\r\n" % (BUCKET.encode(), token, len(body)))
        for i in range(4):
            s.sendall(body[i * 2048:(i + 1) * 2048])
            time.sleep(0.5)
        got = response_of(s, 5)
    finally:
        s.close()
    assert got.startswith(b"HTTP/1.1 200"), got[:300]
    status, stored = g.get("/%s/honest" % BUCKET)
    assert status == 200 and stored == body, (status, len(stored))


def t_backpressure_not_counted():
    size = 24 * 1024 * 1024
    seen = {}

    def late_reader(conn):
        head = read_request_head(conn)
        time.sleep(6.0)  # reads nothing: the proxy must pause the client
        rest = len(head.split(b"\r\n\r\n", 1)[1])
        while rest < size:
            chunk = conn.recv(1 << 20)
            if not chunk:
                break
            rest += len(chunk)
        seen["bytes"] = rest
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    up = ScriptedUpstream(late_reader)
    locks = harness.TempDir()
    g = harness.Fencegate("--mode", "http", "--upstream", up.url, "--lock-store",
                          "file://" + locks.path, "--body-timeout", "2s",
                          "--body-min-rate", str(8 * 1024 * 1024), data=False)
    try:
        token = acquire(g, "uploads")
        s = socket.create_connection(("127.0.0.1", g.port), timeout=30)
        try:
            s.sendall(b"PUT /big HTTP/1.1\r\nHost: x\r\nX-Fencing-Lock: uploads\r\n"
                      b"Connection: close\r\n"
                      b"X-Fencing-Token: %d\r\nContent-Length: %d\r\n\r\n" % (token, size))
            block = b"z" * (1 << 20)
            for _ in range(size // len(block)):
                s.sendall(block)
            got = response_of(s, 20)
        finally:
            s.close()
        assert got.startswith(b"HTTP/1.1 200"), got[:300]
        assert seen.get("bytes") == size, seen
    finally:
        g.close()
        up.close()
        locks.close()


def main():
    r = harness.Runner("e2e slowbody")
    g = harness.Fencegate("--body-timeout", "3s")
    try:
        os.makedirs(os.path.join(g.data, BUCKET), exist_ok=True)
        r.check("1 byte/s body with --body-timeout 3s: 408 after about 3 s", t_trickle_cut, g)
        r.check("8 KiB over 2 s still lands", t_slow_but_honest, g)
    finally:
        g.close()
    r.check("upstream back-pressure does not count against the client",
            t_backpressure_not_counted)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
