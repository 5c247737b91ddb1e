#!/usr/bin/env python3
"""End-to-end: configuration checks (-t) and SIGHUP reloads.

fencegate -c CONFIG runs the embedded store (data directory) with
authentication on. A client added to the file works after SIGHUP (and not
before); a broken file on SIGHUP is logged and the daemon keeps serving with
the running configuration; a reload that changes the listen addresses is
refused; an upload whose body is half sent when SIGHUP arrives (with a
config that no longer knows its client) completes and lands; the lock's
epoch (high-water mark) survives reloads. `fencegate -t -c` exits 0 on a
good file and 1 on a bad one, naming the key path."""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import BIN, Runner, TempDir, free_port, run, stop, wait_port  # noqa: E402

BUCKET = "reloadbkt"
FIRST = ("AKIDFIRST0000001", "first-secret-0001")
ADDED = ("AKIDADDED0000001", "added-secret-0001")


class Gate:
    def __init__(self):
        self.proc = None
        self.dir = TempDir()
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.config = os.path.join(self.dir.path, "fencegate.json")
        self.data = os.path.join(self.dir.path, "data")
        os.mkdir(self.data)
        os.mkdir(os.path.join(self.data, BUCKET))
        self.write_config([FIRST])
        self.logpath = os.path.join(self.dir.path, "fencegate.log")
        self.log = open(self.logpath, "w")
        self.proc = subprocess.Popen([os.path.join(BIN, "fencegate"), "-c", self.config,
                                      "--access-log", "off"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        try:
            wait_port(self.port, self.proc)
        except BaseException:
            self.close()
            raise

    def secret_file(self, creds):
        path = os.path.join(self.dir.path, creds[0] + ".secret")
        with open(path, "w") as f:
            f.write(creds[1] + "\n")
        return path

    def config_for(self, clients, listen=None):
        return {
            "listen": [listen or "127.0.0.1:%d" % self.port],
            "data_dir": self.data,
            "unrouted_writes": "bucket_lock",
            "locks": [{"name": BUCKET, "store": "s3://" + BUCKET,
                       "prefix": "locks/%s/lock-" % BUCKET}],
            "routes": [{"prefix": "/%s/public/" % BUCKET, "lock": BUCKET,
                        "anonymous_read": True}],
            "clients": [{"access_key": c[0], "secret_file": self.secret_file(c),
                         "allow": [{"prefix": "/" + BUCKET,
                                    "actions": ["read", "write", "lock"]}]}
                        for c in clients],
        }

    def write_config(self, clients, listen=None, text=None):
        tmp = self.config + ".tmp"
        with open(tmp, "w") as f:
            f.write(text if text is not None else json.dumps(self.config_for(clients, listen)))
        os.replace(tmp, self.config)

    def close(self):
        stop(self.proc)
        if getattr(self, "log", None):
            self.log.close()
        self.dir.close()

    def log_text(self):
        with open(self.logpath) as f:
            return f.read()

    def hup_and_wait(self, needle):
        """SIGHUP, then wait for a log line containing needle (new lines only)."""
        before = len(self.log_text())
        self.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if needle in self.log_text()[before:]:
                return self.log_text()[before:]
            time.sleep(0.05)
        raise AssertionError("no %r in the log after SIGHUP:\n%s" % (needle, self.log_text()[before:]))

    def headers(self, creds, method, path, body=b"", extra=None):
        """SigV4 headers for the request, extra headers signed with it (the
        proxy refuses a write whose X-Fencing-Token is not signed)."""
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        req = AWSRequest(method=method, url=self.url + path, data=body,
                         headers=dict(extra or {}))
        S3SigV4Auth(Credentials(*creds), "s3", "us-east-1").add_auth(req)
        return dict(req.headers.items())

    def request(self, creds, method, path, body=b"", extra=None):
        h = self.headers(creds, method, path, body, extra)
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    def acquire(self, creds):
        st, body = self.request(creds, "POST", "/_fence/locks/%s/acquire" % BUCKET,
                                b'{"ttlMs":600000}')
        assert st == 200, (st, body)
        return json.loads(body)["epoch"]


def code(body):
    s = body.decode("utf-8", "replace")
    return s.split("<Code>", 1)[1].split("</Code>", 1)[0] if "<Code>" in s else None


def t_add_client(g):
    epoch = g.epoch = g.acquire(FIRST)
    st, body = g.request(ADDED, "PUT", "/%s/added/a" % BUCKET, b"x",
                         {"X-Fencing-Token": str(epoch)})
    assert st == 403 and code(body) == "InvalidAccessKeyId", (st, body)
    g.write_config([FIRST, ADDED])
    g.hup_and_wait("reloaded")
    st, body = g.request(ADDED, "PUT", "/%s/added/a" % BUCKET, b"added",
                         {"X-Fencing-Token": str(epoch)})
    assert st == 200, (st, body)
    st, body = g.request(ADDED, "GET", "/%s/added/a" % BUCKET)
    assert st == 200 and body == b"added", (st, body)


def t_broken_config(g):
    g.write_config(None, text='{"listen": ["127.0.0.1:%d"], "clients": [{"access_key": 7}]}'
                   % g.port)
    out = g.hup_and_wait("reload refused")
    assert "clients[0]" in out, out
    assert g.proc.poll() is None
    # still serving with the running configuration (both clients)
    st, body = g.request(ADDED, "GET", "/%s/added/a" % BUCKET)
    assert st == 200 and body == b"added", (st, body)
    st, _ = g.request(FIRST, "GET", "/%s/added/a" % BUCKET)
    assert st == 200
    g.write_config([FIRST, ADDED], listen="127.0.0.1:%d" % free_port())
    out = g.hup_and_wait("reload refused")
    assert '"listen" changed' in out, out
    st, _ = g.request(ADDED, "GET", "/%s/added/a" % BUCKET)
    assert st == 200


def t_limits_named(g):
    """Each changed limit is named: taken at once, or kept until a restart
    with the value in force (never "reloaded" while one is ignored). A
    second reload compares with what is in force, not with the last file."""
    cfg = g.config_for([FIRST, ADDED])
    cfg["limits"] = {"idle_timeout_ms": 1234, "upstream_timeout_ms": 4321,
                     "objcache_entries": 777}
    g.write_config(None, text=json.dumps(cfg))
    out = g.hup_and_wait("reloaded")
    lines = {ln.split("reload: ", 1)[1] for ln in out.splitlines() if "reload: limits." in ln}
    assert "limits.idle_timeout_ms changed from 60000 to 1234" in lines, out
    assert "limits.upstream_timeout_ms changed from 60000 to 4321" in lines, out
    assert ("limits.objcache_entries changed from 100000 to 777; it applies after a "
            "restart, 100000 until then") in lines, out
    assert len(lines) == 3, out
    out = g.hup_and_wait("reloaded")
    assert "idle_timeout_ms" not in out and "upstream_timeout_ms" not in out, out
    assert "limits.objcache_entries changed from 100000 to 777" in out, out
    g.write_config([FIRST, ADDED])
    out = g.hup_and_wait("reloaded")
    assert "limits.idle_timeout_ms changed from 1234 to 60000" in out, out
    assert "objcache_entries" not in out, out


def slow_head_answer(port, seconds):
    """Sends half a request head and waits up to seconds: (status line or
    b"", seconds it took)."""
    s = socket.create_connection(("127.0.0.1", port))
    try:
        s.sendall(b"GET /_fence/health HTTP/1.1\r\nHost: x\r\n")
        s.settimeout(seconds)
        t0 = time.monotonic()
        try:
            got = s.recv(100)
        except socket.timeout:
            got = b""
        return got.split(b"\r\n", 1)[0], time.monotonic() - t0
    finally:
        s.close()


def t_limits_applied(g):
    """A reload's front-end limits reach the running workers: after SIGHUP a
    half-sent head gets 408 at the new header_timeout_ms (not the 10 s in
    force before), and a head over the new header_bytes gets 431."""
    line, took = slow_head_answer(g.port, 2.0)
    assert line == b"", (line, took)  # 10 s in force: nothing within 2 s
    cfg = g.config_for([FIRST, ADDED])
    cfg["limits"] = {"header_timeout_ms": 300, "header_bytes": 1024}
    g.write_config(None, text=json.dumps(cfg))
    out = g.hup_and_wait("reloaded")
    assert "limits.header_timeout_ms changed from 10000 to 300" in out, out
    try:
        line, took = slow_head_answer(g.port, 5.0)
        assert line.startswith(b"HTTP/1.1 408"), (line, took)
        assert took < 2.0, took
        c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=10)
        c.request("GET", "/_fence/health", headers={"X-Big": "b" * 2000})
        assert c.getresponse().status == 431
        c.close()
    finally:
        g.write_config([FIRST, ADDED])
        g.hup_and_wait("reloaded")
    c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=10)
    c.request("GET", "/_fence/health", headers={"X-Big": "b" * 2000})
    assert c.getresponse().status == 200
    c.close()


def t_upstream_timeout_applied():
    """HTTP mode in front of an upstream that accepts and never answers: a
    reload that lowers limits.upstream_timeout_ms gives 504 at the new
    value (it was 30 s)."""
    d = TempDir()
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    held = []
    proc = log = None
    try:
        port = free_port()
        path = os.path.join(d.path, "http.json")
        cfg = {"listen": ["127.0.0.1:%d" % port], "mode": "http",
               "upstream": {"endpoint": "http://127.0.0.1:%d" % silent.getsockname()[1]},
               "lock_store": "file://" + d.path,
               "locks": [{"name": "jobs"}], "routes": [{"prefix": "/api/", "lock": "jobs"}],
               "limits": {"upstream_timeout_ms": 30000}}
        with open(path, "w") as f:
            json.dump(cfg, f)
        logpath = os.path.join(d.path, "fg.log")
        log = open(logpath, "w")
        proc = subprocess.Popen([os.path.join(BIN, "fencegate"), "-c", path,
                                 "--access-log", "off"], stdout=log, stderr=subprocess.STDOUT)
        wait_port(port, proc)
        cfg["limits"]["upstream_timeout_ms"] = 400
        with open(path + ".tmp", "w") as f:
            json.dump(cfg, f)
        os.replace(path + ".tmp", path)
        proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while "reloaded" not in open(logpath).read():
            assert time.monotonic() < deadline, open(logpath).read()
            time.sleep(0.05)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        t0 = time.monotonic()
        c.request("GET", "/api/items")
        st = c.getresponse().status
        took = time.monotonic() - t0
        c.close()
        assert st == 504 and took < 5.0, (st, took)
    finally:
        stop(proc)
        if log:
            log.close()
        silent.close()
        d.close()


def t_inflight_survives(g):
    g.write_config([FIRST, ADDED])
    g.hup_and_wait("reloaded")
    # a lease is released by the client that took it (another one would
    # need "break"); the client the reload added then takes the lock
    st, b = g.request(ADDED, "POST", "/_fence/locks/%s/release" % BUCKET,
                      json.dumps({"epoch": g.epoch}).encode())
    assert st == 403 and b"break" in b, (st, b)
    st, b = g.request(FIRST, "POST", "/_fence/locks/%s/release" % BUCKET,
                      json.dumps({"epoch": g.epoch}).encode())
    assert st == 200, (st, b)
    epoch = g.epoch = g.acquire(ADDED)
    assert epoch >= 2, epoch
    body = os.urandom(200000)
    path = "/%s/inflight/obj" % BUCKET
    h = g.headers(ADDED, "PUT", path, body, {"X-Fencing-Token": str(epoch)})
    h["Content-Length"] = str(len(body))
    s = socket.create_connection(("127.0.0.1", g.port), timeout=30)
    head = "PUT %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % (path, g.port)
    head += "".join("%s: %s\r\n" % kv for kv in h.items() if kv[0].lower() != "host")
    s.sendall(head.encode() + b"\r\n" + body[:100000])
    time.sleep(0.3)
    # the new config no longer knows the uploading client
    g.write_config([FIRST])
    g.hup_and_wait("reloaded")
    s.sendall(body[100000:])
    resp = b""
    while b"\r\n\r\n" not in resp:
        chunk = s.recv(4096)
        if not chunk:
            break
        resp += chunk
    s.close()
    assert resp.startswith(b"HTTP/1.1 200"), resp
    st, got = g.request(FIRST, "GET", path)
    assert st == 200 and got == body, (st, len(got))
    # and the client is gone for new requests
    st, b = g.request(ADDED, "GET", path)
    assert st == 403 and code(b) == "InvalidAccessKeyId", (st, b)


def t_embedded_aws_chunked(g):
    """The embedded store sees the decoded body of an aws-chunked upload
    (the authz handler decoded and verified it), and a bad CRC stores
    nothing."""
    import base64
    import zlib
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    data = os.urandom(70000)
    enc = b"%x\r\n" % 65536 + data[:65536] + b"\r\n"
    enc += b"%x\r\n" % (len(data) - 65536) + data[65536:] + b"\r\n"
    crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big"))
    enc += b"0\r\nx-amz-checksum-crc32:" + crc + b"\r\n\r\n"
    for key, body, want in (("chunked/ok", enc, 200),
                            ("chunked/bad", enc.replace(data[:8], bytes(8), 1), 400)):
        path = "/%s/%s" % (BUCKET, key)
        hdrs = {"X-Fencing-Token": str(g.epoch), "Content-Encoding": "aws-chunked",
                "x-amz-decoded-content-length": str(len(data)),
                "x-amz-trailer": "x-amz-checksum-crc32"}
        req = AWSRequest(method="PUT", url=g.url + path, data=body, headers=hdrs)
        req.context["checksum"] = {"request_algorithm": {"in": "trailer"}}
        S3SigV4Auth(Credentials(*FIRST), "s3", "us-east-1").add_auth(req)
        c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=30)
        c.request("PUT", path, body=body, headers=dict(req.headers.items()))
        resp = c.getresponse()
        out = resp.read()
        c.close()
        assert resp.status == want, (key, resp.status, out)
    st, got = g.request(FIRST, "GET", "/%s/chunked/ok" % BUCKET)
    assert st == 200 and got == data, (st, len(got))
    st, _ = g.request(FIRST, "GET", "/%s/chunked/bad" % BUCKET)
    assert st == 404, st


def t_anonymous_read_route(g):
    st, b = g.request(FIRST, "PUT", "/%s/public/p.txt" % BUCKET, b"public",
                      {"X-Fencing-Token": str(g.epoch)})
    assert st == 200, (st, b)
    c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=10)
    c.request("GET", "/%s/public/p.txt" % BUCKET)
    resp = c.getresponse()
    body = resp.read()
    assert resp.status == 200 and body == b"public", (resp.status, body)
    c.request("PUT", "/%s/public/p.txt" % BUCKET, body=b"anon",
              headers={"X-Fencing-Token": str(g.epoch)})
    resp = c.getresponse()
    body = resp.read()
    assert resp.status == 403 and code(body) == "AccessDenied", (resp.status, body)
    c.request("GET", "/%s/added/a" % BUCKET)  # outside the route: refused
    resp = c.getresponse()
    body = resp.read()
    assert resp.status == 403 and code(body) == "AccessDenied", (resp.status, body)
    c.close()


def t_high_water_kept(g):
    st, body = g.request(FIRST, "GET", "/_fence/locks/%s" % BUCKET)
    assert st == 200, (st, body)
    before = json.loads(body)
    g.hup_and_wait("reloaded")
    st, body = g.request(FIRST, "GET", "/_fence/locks/%s" % BUCKET)
    after = json.loads(body)
    assert after.get("highWater") == before.get("highWater") and after.get("highWater"), \
        (before, after)
    # a write under an older epoch is still stale after the reload
    st, b = g.request(FIRST, "PUT", "/%s/inflight/obj" % BUCKET, b"zombie",
                      {"X-Fencing-Token": "1"})
    assert st == 409 and code(b) == "FencingTokenStale", (st, b)


def t_check_config(g):
    fg = os.path.join(BIN, "fencegate")
    g.write_config([FIRST])
    r = run([fg, "-t", "-c", g.config])
    assert r.returncode == 0 and "valid" in r.stdout, (r.stdout, r.stderr)
    bad = os.path.join(g.dir.path, "bad.json")
    cfg = g.config_for([FIRST])
    cfg["routes"] = [{"prefix": "/%s/x/" % BUCKET, "lock": "nosuchlock"}]
    json.dump(cfg, open(bad, "w"))
    r = run([fg, "-t", "-c", bad])
    assert r.returncode == 1 and "routes[0].lock" in r.stderr, r.stderr
    cfg = g.config_for([FIRST])
    cfg["limits"] = {"header_bytes": -5}
    json.dump(cfg, open(bad, "w"))
    r = run([fg, "-t", "-c", bad])
    assert r.returncode == 1 and "limits.header_bytes" in r.stderr, r.stderr
    r = run([fg, "-t", "-c", os.path.join(g.dir.path, "absent.json")])
    assert r.returncode == 1 and "absent.json" in r.stderr, r.stderr
    # no clients on a non-loopback address: refused
    cfg = g.config_for([])
    cfg["listen"] = ["0.0.0.0:%d" % free_port()]
    json.dump(cfg, open(bad, "w"))
    r = run([fg, "-t", "-c", bad])
    assert r.returncode == 1 and "clients" in r.stderr, r.stderr


def t_limits_reach_front():
    """limits from the file reach the front end: header_bytes -> 431,
    max_connections -> the third client waits until one closes."""
    d = TempDir()
    proc = None
    try:
        port = free_port()
        path = os.path.join(d.path, "limits.json")
        with open(path, "w") as f:
            json.dump({"listen": ["127.0.0.1:%d" % port], "data_dir": d.path,
                       "unrouted_writes": "bucket_lock",
                       # the exact limit on one listener: one event loop
                       "workers": 1,
                       "limits": {"header_bytes": 1024, "max_connections": 2}}, f)
        log = open(os.path.join(d.path, "fg.log"), "w")
        proc = subprocess.Popen([os.path.join(BIN, "fencegate"), "-c", path, "--access-log",
                                 "off"], stdout=log, stderr=subprocess.STDOUT)
        wait_port(port, proc)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/_fence/health", headers={"X-Big": "b" * 2000})
        assert c.getresponse().status == 431
        c.close()
        time.sleep(0.2)
        a = socket.create_connection(("127.0.0.1", port))
        b = socket.create_connection(("127.0.0.1", port))
        time.sleep(0.2)
        third = socket.create_connection(("127.0.0.1", port))  # in the backlog
        third.sendall(b"GET /_fence/health HTTP/1.1\r\nHost: x\r\n\r\n")
        third.settimeout(1.0)
        try:
            early = third.recv(100)
        except socket.timeout:
            early = b""
        assert early == b"", early
        a.close()
        third.settimeout(5.0)
        assert third.recv(100).startswith(b"HTTP/1.1 200"), "not served after a close"
        b.close()
        third.close()
    finally:
        stop(proc)
        d.close()


def main():
    r = Runner("e2e reload")
    r.check("limits from the file reach the front end (431, max_connections)",
            t_limits_reach_front)
    r.check("SIGHUP's upstream timeout reaches the running workers (504 sooner)",
            t_upstream_timeout_applied)
    g = Gate()
    try:
        r.check("a client added to the file works after SIGHUP", t_add_client, g)
        r.check("a broken file or new listen address on SIGHUP: old config serves",
                t_broken_config, g)
        r.check("SIGHUP names each changed limit: taken, or kept until a restart",
                t_limits_named, g)
        r.check("SIGHUP's header timeout and header size reach the running workers",
                t_limits_applied, g)
        r.check("an upload in flight survives a reload that drops its client",
                t_inflight_survives, g)
        r.check("the lock's high-water mark survives reloads", t_high_water_kept, g)
        r.check("anonymous reads only on an anonymous_read route", t_anonymous_read_route, g)
        r.check("embedded store: aws-chunked decoded before s3local, bad CRC 400",
                t_embedded_aws_chunked, g)
        r.check("fencegate -t: 0 on good, 1 naming the key path on bad", t_check_config, g)
    finally:
        g.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
