#!/usr/bin/env python3
"""End-to-end tests of fencegate's forwarding when the upstream misbehaves,
against small scripted upstreams: down (502), silent (504), slow (its first
body bytes reach the client at once), cut mid-body, a connect that never
completes (504 at --connect-timeout); http mode's forwarding
rules; s3 mode keeping the client's presign parameters from the upstream;
and SIGTERM draining a request in flight.

Starts bin/fencegate (from FENCE_BIN, default ./bin) on free 127.0.0.1
ports with test_front.py's Gate and raw-socket helpers. Every process is
stopped by its PID. Prints 'N passed, N failed'."""
import os
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from test_front import Gate, Reader, connect, health_ok, read_all, request  # noqa: E402


# ---- scripted upstreams ------------------------------------------------------

class ScriptedUpstream:
    """A loopback TCP server that runs handler(conn) per connection."""

    def __init__(self, handler):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.handler = handler
        self.stopping = False
        self.conns = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        self.sock.settimeout(0.2)
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            conn.settimeout(10)
            self.handler(conn)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.stopping = True
        self.thread.join(2)
        self.sock.close()


def read_request_head(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


# ---- tests: upstream failures ------------------------------------------------

def test_upstream_down_502():
    dead = harness.free_port()
    g = Gate("--upstream", "http://127.0.0.1:%d" % dead, "--connect-timeout", "2s")
    try:
        st, _, body, _ = request(g.port, b"GET /b/k HTTP/1.1\r\nHost: x\r\n\r\n")
        assert st == 502 and b"<Code>BadGateway</Code>" in body, (st, body)
        health_ok(g.port)
    finally:
        g.close()


class BlackholeUpstream:
    """A loopback port whose connects never complete: a listener with a
    backlog of 0 that never accepts, filled by connections of its own, so
    the kernel drops every further SYN (as a firewall that drops would)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(0)
        self.port = self.sock.getsockname()[1]
        self.fill = []
        for _ in range(4):
            c = socket.socket()
            c.setblocking(False)
            try:
                c.connect(("127.0.0.1", self.port))
            except BlockingIOError:
                pass
            self.fill.append(c)
        time.sleep(0.2)
        probe = socket.socket()
        probe.settimeout(0.5)
        try:
            probe.connect(("127.0.0.1", self.port))
            raise AssertionError("the blackhole accepted a connect")
        except socket.timeout:
            pass
        finally:
            probe.close()

    def close(self):
        for c in self.fill:
            c.close()
        self.sock.close()


def test_upstream_connect_timeout_504():
    """A connect that never completes is given up at --connect-timeout
    (504), not at the 60 s answer timeout, and the next request too."""
    hole = BlackholeUpstream()
    g = Gate("--upstream", "http://127.0.0.1:%d" % hole.port, "--connect-timeout", "1s")
    try:
        for _ in range(2):
            t0 = time.monotonic()
            st, _, body, _ = request(g.port, b"GET /b/k HTTP/1.1\r\nHost: x\r\n\r\n")
            took = time.monotonic() - t0
            assert st == 504 and b"GatewayTimeout" in body, (st, body)
            assert 0.9 <= took < 3.5, took
        health_ok(g.port)
    finally:
        g.close()
        hole.close()


def test_upstream_timeout_504():
    def silent(conn):
        read_request_head(conn)
        time.sleep(4)

    up = ScriptedUpstream(silent)
    g = Gate("--upstream", up.url, "--upstream-timeout", "1s")
    try:
        t0 = time.monotonic()
        st, _, body, _ = request(g.port, b"GET /b/k HTTP/1.1\r\nHost: x\r\n\r\n")
        assert st == 504 and b"GatewayTimeout" in body, (st, body)
        assert time.monotonic() - t0 < 3.5
    finally:
        g.close()
        up.close()


def test_upstream_cut_mid_body():
    def cut(conn):
        read_request_head(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"x" * 10)
        time.sleep(0.2)

    up = ScriptedUpstream(cut)
    g = Gate("--upstream", up.url, "--mode", "http")
    try:
        s = connect(g.port)
        s.sendall(b"GET /b/k HTTP/1.1\r\nHost: x\r\n\r\n")
        data = read_all(s, 5)
        s.close()
        assert data.startswith(b"HTTP/1.1 200"), data[:60]
        assert data.endswith(b"x" * 10), data[-20:]
        health_ok(g.port)
    finally:
        g.close()
        up.close()


def test_streamed_body_reaches_client():
    """Body bytes are passed on as they come: a slow upstream's first bytes
    reach the client long before the rest (not once 64 KiB piled up or the
    response ended)."""
    def slow(conn):
        read_request_head(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n")
        time.sleep(0.3)
        conn.sendall(b"abc")
        time.sleep(2.0)
        conn.sendall(b"def")

    up = ScriptedUpstream(slow)
    g = Gate("--upstream", up.url, "--mode", "http")
    try:
        s = connect(g.port)
        s.sendall(b"GET /b/k HTTP/1.1\r\nHost: x\r\n\r\n")
        t0, data = time.monotonic(), b""
        s.settimeout(1.5)
        while not data.endswith(b"abc"):
            chunk = s.recv(4096)
            assert chunk, data
            data += chunk
        assert time.monotonic() - t0 < 1.5, "first bytes after %.1f s" % (time.monotonic() - t0)
        s.settimeout(5)
        while not data.endswith(b"abcdef"):
            chunk = s.recv(4096)
            assert chunk, data
            data += chunk
        s.close()
    finally:
        g.close()
        up.close()


def test_s3_mode_strips_client_auth():
    """S3 mode re-signs with the proxy's credentials: none of the client's
    presigned-URL parameters (SigV4 or SigV2) goes upstream, or S3 would
    see two auth mechanisms (400)."""
    seen = {}

    def echo(conn):
        seen["head"] = read_request_head(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    up = ScriptedUpstream(echo)
    g = Gate("--upstream", up.url)
    try:
        for q in (b"AWSAccessKeyId=AK&Signature=c2ln&Expires=99&versionId=v1",
                  b"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=c&X-Amz-Date=d"
                  b"&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=s&versionId=v1"):
            seen.clear()
            st, _, body, _ = request(g.port, b"GET /b/k?" + q + b" HTTP/1.1\r\nHost: x\r\n\r\n")
            assert st == 200, (st, body)
            line = seen["head"].split(b"\r\n", 1)[0].decode()
            assert line.startswith("GET /b/k?versionId=v1 "), line
    finally:
        g.close()
        up.close()


def test_http_mode_forwarding():
    """HTTP mode: hop-by-hop headers dropped, Host rewritten, auth kept."""
    seen = {}

    def echo(conn):
        head = read_request_head(conn)
        seen["head"] = head
        conn.sendall(b"HTTP/1.1 201 Created\r\nX-Up: 1\r\nConnection: close, X-Drop\r\n"
                     b"X-Drop: secret\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"3\r\nabc\r\n0\r\n\r\n")

    up = ScriptedUpstream(echo)
    g = Gate("--upstream", up.url + "/base", "--mode", "http")
    try:
        st, hd, body, _ = request(
            g.port, b"GET /path/x?q=1&X-Amz-Signature=keep HTTP/1.1\r\nHost: front\r\n"
                    b"Authorization: Bearer t\r\nConnection: keep-alive, X-Hop\r\n"
                    b"X-Hop: 1\r\nKeep-Alive: 5\r\nTE: trailers\r\nUpgrade: h2c\r\n"
                    b"Proxy-Authorization: p\r\nX-Keep: yes\r\n\r\n")
        assert st == 201 and body == b"abc", (st, body)
        assert hd.get("x-up") == "1" and "x-drop" not in hd, hd
        head = seen["head"].decode().lower()
        assert head.startswith("get /base/path/x?q=1&x-amz-signature=keep http/1.1"), head
        assert "host: 127.0.0.1:%d" % up.port in head
        assert "authorization: bearer t" in head and "x-keep: yes" in head
        for gone in ("x-hop", "keep-alive", "te:", "upgrade", "proxy-authorization"):
            assert gone not in head, (gone, head)
    finally:
        g.close()
        up.close()


def test_header_order_case_duplicates():
    """Both ways: names keep their case, duplicates and their order are
    kept, hop-by-hop headers go (also names listed in a Connection header
    with more tokens than the proxy splits up front)."""
    seen = {}

    def echo(conn):
        seen["head"] = read_request_head(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nX-Resp: a\r\nConnection: keep-alive, X-Gone\r\n"
                     b"x-RESP: b\r\nX-Gone: 1\r\nKeep-Alive: timeout=5\r\nX-Other-CASE: c\r\n"
                     b"Content-Length: 2\r\n\r\nok")

    up = ScriptedUpstream(echo)
    g = Gate("--upstream", up.url, "--mode", "http")
    try:
        many = b", ".join(b"t%d" % i for i in range(30))
        s = connect(g.port)
        s.sendall(b"GET /o HTTP/1.1\r\nHost: front\r\nX-Dup: 1\r\nConnection: " + many +
                  b", X-Tok\r\nx-DUP: 2\r\nT29: z\r\nX-Tok: 1\r\nX-Mixed-Case: v\r\n"
                  b"proxy-connection: x\r\nX-Dup: 3\r\n\r\n")
        data = b""
        while not (b"\r\n\r\n" in data and data.endswith(b"ok")):
            chunk = s.recv(4096)
            assert chunk, data
            data += chunk
        s.close()
        head = data.split(b"\r\n\r\n", 1)[0]
        assert head.startswith(b"HTTP/1.1 200 OK\r\n"), head
        assert b"\r\nX-Resp: a\r\nx-RESP: b\r\nX-Other-CASE: c\r\n" in head, head
        for gone in (b"x-gone", b"keep-alive"):
            assert gone not in head.lower(), (gone, head)
        assert b"\r\nContent-Length: 2" in head, head
        up_head = seen["head"]
        assert b"\r\nX-Dup: 1\r\nx-DUP: 2\r\nX-Mixed-Case: v\r\nX-Dup: 3\r\n" in up_head, up_head
        for gone in (b"x-tok", b"t29:", b"connection", b"proxy-connection"):
            assert gone not in up_head.lower(), (gone, up_head)
    finally:
        g.close()
        up.close()


def test_drain_on_sigterm():
    def slow(conn):
        read_request_head(conn)
        time.sleep(1.0)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nslow")

    up = ScriptedUpstream(slow)
    g = Gate("--upstream", up.url, "--mode", "http")
    try:
        s = connect(g.port)
        s.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.3)
        os.kill(g.proc.pid, signal.SIGTERM)
        st, hd, body = Reader(s).response()
        s.close()
        assert st == 200 and body == b"slow", (st, body)
        assert hd.get("connection") == "close", hd
        assert g.proc.wait(10) == 0
    finally:
        g.close()
        up.close()


def main():
    r = harness.Runner("e2e front upstream")
    r.check("upstream down -> 502", test_upstream_down_502)
    r.check("upstream silent -> 504", test_upstream_timeout_504)
    r.check("upstream connect never completes -> 504 at --connect-timeout",
            test_upstream_connect_timeout_504)
    r.check("a slow upstream's first body bytes reach the client at once",
            test_streamed_body_reaches_client)
    r.check("upstream cut mid-body -> client connection closed", test_upstream_cut_mid_body)
    r.check("http mode forwarding rules", test_http_mode_forwarding)
    r.check("header case, order and duplicates kept both ways; hop-by-hop dropped",
            test_header_order_case_duplicates)
    r.check("s3 mode: the client's presign parameters never go upstream",
            test_s3_mode_strips_client_auth)
    r.check("SIGTERM drains a request in flight", test_drain_on_sigterm)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
