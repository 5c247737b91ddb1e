#!/usr/bin/env python3
"""End-to-end test of the cold path (issue 26): a fenced PutObject to a key
the proxy has not seen goes first with If-None-Match "*" and no HEAD (the
unread create, proxy/fence/objcas.h); only when S3 answers 412 is the
object read and decided as before.

A real moto_server, tests/relay.py between bin/fencegate and moto counting
the requests that reach the upstream, one event loop (one ETag cache).
Checked on what moto stores (read back directly, not through the proxy)
and on the requests the relay carried: write-once keys cost exactly one
upstream request per accepted write; an existing uncached key written
under the current epoch lands; one stamped with a newer epoch is refused
409 and keeps its body; a stale writer is refused with nothing sent; a
body beyond the held window (--replay-bytes), or of unknown length
(chunked), keeps the HEAD first and still lands. It does not provoke a
lost race (the simulation, tests/sim, explores those orders).
Prints 'N passed, N failed'."""
import http.client
import http.server
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from relay import Relay  # noqa: E402
from test_dialects import Store, make_handler  # noqa: E402
from test_fencing import (Gate, acquire, api, boto_proxy, expect, moto_body, release,  # noqa: E402
                          req, s3code)  # noqa: E402

BUCKET = "fence-cold"
WINDOW = 8192      # --replay-bytes of the proxy under test: bodies held whole up to it


def field(fields, name):
    for n, v in fields:
        if n == name:
            return v
    return None


DATA = ("once", "exists", "stale", "big", "cond")   # the test's key prefixes


def carried(relay, settle=0.05):
    """[(method, path, if-none-match, if-match)] the relay carried since the
    last call to the test's object keys (the lock's files, its marks and
    the backend self-test's probe key left out)."""
    time.sleep(settle)
    out = []
    for method, target, fields in relay.take():
        path = target.split("?")[0]
        parts = path.split("/")
        if len(parts) < 4 or parts[1] != BUCKET or parts[2] not in DATA:
            continue
        out.append((method, path, field(fields, "if-none-match"), field(fields, "if-match")))
    return out


def put(g, key, body, token, headers=None):
    h = {"X-Fencing-Token": str(token)}
    h.update(headers or {})
    return req(g.port, "PUT", "/%s/%s" % (BUCKET, key), body, h)


def put_chunked(g, key, pieces, token):
    """A PUT whose length is unknown up front (Transfer-Encoding: chunked)."""
    c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=15)
    c.putrequest("PUT", "/%s/%s" % (BUCKET, key))
    c.putheader("Content-Type", "application/octet-stream")
    c.putheader("X-Fencing-Token", str(token))
    c.putheader("Transfer-Encoding", "chunked")
    c.endheaders()
    for p in pieces:
        c.send(b"%x\r\n%s\r\n" % (len(p), p))
    c.send(b"0\r\n\r\n")
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def stamped(moto, key, body, epoch):
    """Writes key straight into moto (not through the proxy), stamped with
    epoch as the proxy would (0: no stamp)."""
    meta = {"fencing-epoch": str(epoch), "fencing-lock": BUCKET} if epoch else {}
    moto.client().put_object(Bucket=BUCKET, Key=key, Body=body, Metadata=meta)


def stored(moto, key):
    body, meta = moto_body(moto, BUCKET, key)
    return body, (meta or {}).get("fencing-epoch")


def wait_healthy(g, seconds=20):
    deadline = time.monotonic() + seconds
    while api(g.port, "GET", "/_fence/health")[0] != 200:
        expect(time.monotonic() < deadline, "fencegate never became healthy:\n" + g.logtext())
        time.sleep(0.1)


class World:
    def __init__(self, moto):
        self.moto = moto
        self.relay = Relay(moto.port)
        self.g = Gate("--upstream", self.relay.url, "--access-log", "off",
                      "--lock-refresh", "3600s", "--workers", "1",
                      "--replay-bytes", str(WINDOW))
        try:
            wait_healthy(self.g)
            self.epoch = acquire(self.g.port, BUCKET, "cold")
        except BaseException:
            self.close()
            raise
        carried(self.relay)

    def close(self):
        self.g.close()
        self.relay.close()


def test_write_once_keys(w):
    """New keys, each written once: one upstream request per accepted write,
    a PUT with If-None-Match "*" and no HEAD; moto holds each body, stamped."""
    n = 20
    sent = []
    for i in range(n):
        body = b"once-%d" % i
        st, h, d = put(w.g, "once/%d" % i, body, w.epoch)
        expect(st == 200, "write-once %d: %s %s" % (i, st, d))
        sent += carried(w.relay)
    expect(len(sent) == n, "upstream requests for %d accepted writes: %d %s" %
           (n, len(sent), sent))
    expect(all(m == "PUT" and inm == "*" and im is None for m, p, inm, im in sent),
           "each is one unread create (PUT If-None-Match *): %s" % sent)
    print("     upstream requests per accepted write-once PUT: %.2f (%d / %d)" %
          (len(sent) / n, len(sent), n))
    for i in range(n):
        body, ep = stored(w.moto, "once/%d" % i)
        expect(body == b"once-%d" % i and ep == str(w.epoch),
               "once/%d stored: %r epoch %s" % (i, body, ep))
    # the key is now cached: the next write is one If-Match PUT
    st, h, d = put(w.g, "once/0", b"again", w.epoch)
    s = carried(w.relay)
    expect(st == 200 and len(s) == 1 and s[0][0] == "PUT" and s[0][3],
           "cached key: one If-Match PUT: %s %s" % (st, s))
    expect(stored(w.moto, "once/0")[0] == b"again", "the cached key's write landed")


def test_existing_uncached_current_epoch(w):
    """A key the proxy has not seen, written earlier under an older epoch
    (and one never stamped): the unread create gets 412, the object is
    read, and the write lands with If-Match its ETag."""
    for key, old_epoch in (("exists/older", w.epoch - 1 if w.epoch > 1 else 0),
                           ("exists/unstamped", 0), ("exists/same", w.epoch)):
        stamped(w.moto, key, b"before", old_epoch)
        carried(w.relay)
        st, h, d = put(w.g, key, b"after", w.epoch)
        expect(st == 200, "%s: %s %s" % (key, st, d))
        s = carried(w.relay)
        expect([x[0] for x in s] == ["PUT", "HEAD", "PUT"] and s[0][2] == "*" and
               s[2][3] and s[2][2] is None,
               "%s: unread create, HEAD, If-Match re-send: %s" % (key, s))
        body, ep = stored(w.moto, key)
        expect(body == b"after" and ep == str(w.epoch),
               "%s: storage holds the new body: %r epoch %s" % (key, body, ep))


def test_existing_newer_epoch_refused(w):
    """A key stamped with a NEWER epoch than the write's: 409
    FencingTokenStale after the unread create's 412 and one HEAD; nothing
    else is sent and moto still holds the newer body."""
    key = "exists/newer"
    stamped(w.moto, key, b"newer-body", w.epoch + 5)
    carried(w.relay)
    st, h, d = put(w.g, key, b"zombie", w.epoch)
    expect(st == 409 and s3code(d) == "FencingTokenStale", "newer epoch: %s %s" % (st, d))
    s = carried(w.relay)
    expect([x[0] for x in s] == ["PUT", "HEAD"] and s[0][2] == "*",
           "newer epoch: unread create, HEAD, no re-send: %s" % s)
    body, ep = stored(w.moto, key)
    expect(body == b"newer-body" and ep == str(w.epoch + 5),
           "the newer body stays: %r epoch %s" % (body, ep))


def test_stale_writer_refused(w):
    """After a newer epoch was acquired, the old holder's write to a new key
    is refused 409 and nothing of it reaches the upstream."""
    old = w.epoch
    release(w.g.port, BUCKET, old)
    w.epoch = acquire(w.g.port, BUCKET, "cold-2")
    expect(w.epoch > old, "a newer epoch: %s > %s" % (w.epoch, old))
    carried(w.relay)
    st, h, d = put(w.g, "stale/new-key", b"zombie", old)
    expect(st == 409 and s3code(d) == "FencingTokenStale", "stale writer: %s %s" % (st, d))
    s = carried(w.relay)
    expect(s == [], "a stale write sends nothing to the object: %s" % s)
    expect(stored(w.moto, "stale/new-key")[0] is None, "nothing stored")
    # the current holder's write to the same new key: one request
    st, h, d = put(w.g, "stale/new-key", b"current", w.epoch)
    s = carried(w.relay)
    expect(st == 200 and len(s) == 1 and s[0][2] == "*", "current holder: %s %s" % (st, s))
    expect(stored(w.moto, "stale/new-key") == (b"current", str(w.epoch)), "current write stored")


def test_big_body_keeps_head_first(w):
    """A body beyond the held window (or of unknown length) cannot be sent
    twice, so the HEAD comes first: new key HEAD + PUT If-None-Match; an
    uncached existing key HEAD + PUT If-Match; a newer-stamped one HEAD and
    409. moto holds what it should."""
    big = os.urandom(WINDOW * 4)
    st, h, d = put(w.g, "big/new", big, w.epoch)
    s = carried(w.relay)
    expect(st == 200 and [x[0] for x in s] == ["HEAD", "PUT"] and s[1][2] == "*",
           "big new key: HEAD first: %s %s" % (st, s))
    expect(stored(w.moto, "big/new") == (big, str(w.epoch)), "the big body stored whole")

    stamped(w.moto, "big/old", b"before", 0)
    carried(w.relay)
    st, h, d = put(w.g, "big/old", big, w.epoch)
    s = carried(w.relay)
    expect(st == 200 and [x[0] for x in s] == ["HEAD", "PUT"] and s[1][3],
           "big body, existing key: HEAD then If-Match: %s %s" % (st, s))
    expect(stored(w.moto, "big/old") == (big, str(w.epoch)), "big body replaced the old one")

    stamped(w.moto, "big/newer", b"newer-body", w.epoch + 3)
    carried(w.relay)
    st, h, d = put(w.g, "big/newer", big, w.epoch)
    s = carried(w.relay)
    expect(st == 409 and [x[0] for x in s] == ["HEAD"], "big body, newer epoch: %s %s" % (st, s))
    expect(stored(w.moto, "big/newer")[0] == b"newer-body", "the newer body stays")

    # exactly the window: still held whole, so one request
    edge = os.urandom(WINDOW)
    st, h, d = put(w.g, "big/edge", edge, w.epoch)
    s = carried(w.relay)
    expect(st == 200 and len(s) == 1 and s[0][2] == "*", "a body of exactly the window: %s" % s)
    expect(stored(w.moto, "big/edge")[0] == edge, "edge body stored")

    # chunked: its length is unknown when the write is decided
    st, d = put_chunked(w.g, "big/chunked", [b"a" * 100, b"b" * 100], w.epoch)
    s = carried(w.relay)
    expect(st == 200 and [x[0] for x in s] == ["HEAD", "PUT"] and s[1][2] == "*",
           "chunked body: HEAD first: %s %s %s" % (st, d, s))
    expect(stored(w.moto, "big/chunked")[0] == b"a" * 100 + b"b" * 100, "chunked body stored")


def test_real_client(w):
    """boto3 (its signed payload and checksum headers) through the
    proxy: a new key is one request; an existing uncached key is the unread
    create's 412, a HEAD and the re-send, and lands."""
    s3 = boto_proxy(w.g.url)
    tok = {"fencing-token": str(w.epoch)}
    s3.put_object(Bucket=BUCKET, Key="once/boto-new", Body=b"boto-new", Metadata=tok)
    s = carried(w.relay)
    expect(len(s) == 1 and s[0][2] == "*", "boto3, new key: one request: %s" % s)
    stamped(w.moto, "exists/boto", b"before", 0)
    carried(w.relay)
    s3.put_object(Bucket=BUCKET, Key="exists/boto", Body=b"boto-after", Metadata=tok)
    s = carried(w.relay)
    expect([x[0] for x in s] == ["PUT", "HEAD", "PUT"], "boto3, existing key: %s" % s)
    expect(stored(w.moto, "once/boto-new") == (b"boto-new", str(w.epoch)) and
           stored(w.moto, "exists/boto") == (b"boto-after", str(w.epoch)),
           "boto3's writes stored and stamped")


def test_client_conditions_unchanged(w):
    """A client's own If-None-Match "*" on an existing key is the client's
    412 (not read, not re-sent); a DELETE of an uncached key still reads
    first (HEAD, then DELETE If-Match)."""
    stamped(w.moto, "cond/exists", b"keep", 0)
    carried(w.relay)
    st, h, d = put(w.g, "cond/exists", b"x", w.epoch, {"If-None-Match": "*"})
    s = carried(w.relay)
    expect(st == 412 and len(s) == 1, "client create-only: its 412: %s %s" % (st, s))
    expect(stored(w.moto, "cond/exists")[0] == b"keep", "not overwritten")
    st, h, d = req(w.g.port, "DELETE", "/%s/cond/exists" % BUCKET, b"",
                   {"X-Fencing-Token": str(w.epoch)})
    s = carried(w.relay)
    expect(st == 204 and [x[0] for x in s] == ["HEAD", "DELETE"] and s[1][3],
           "delete of an uncached key: HEAD, DELETE If-Match: %s %s" % (st, s))
    expect(stored(w.moto, "cond/exists")[0] is None, "deleted")


class ScriptedS3:
    """test_dialects' in-memory S3 with one flaw: "aws" answers the first
    conditional write of each key 409 ConditionalRequestConflict; "early"
    answers 412 to If-None-Match "*" on an existing key at once, before
    reading the body (as S3 may), and closes; "head500" answers every object
    HEAD of /bkt/k 500, "headreset" closes the connection instead. Records (method, path,
    If-None-Match, If-Match) of every object write and HEAD."""

    def __init__(self, flaw):
        self.store = Store(flaw)
        self.seen = []
        base = make_handler(self.store)
        outer = self

        class H(base):
            def note(self):
                path = self.split()[0]
                if "/.fencegate-selftest/" not in path and "/locks/" not in path and \
                        "fencing-marks" not in path:
                    outer.seen.append((self.command, path, self.headers.get("If-None-Match"),
                                       self.headers.get("If-Match")))

            def do_HEAD(self):
                self.note()
                path = self.split()[0]
                if outer.store.flaw == "head500" and path == "/bkt/k":
                    return self.reply(500, b"", [])
                if outer.store.flaw == "headreset" and path == "/bkt/k":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return None
                return base.do_HEAD(self)

            def do_PUT(self):
                self.note()
                path = self.split()[0]
                if outer.store.flaw == "early" and self.headers.get("If-None-Match") == "*" \
                        and path in outer.store.objects:
                    self.close_connection = True
                    return self.reply(412, b"<Error><Code>PreconditionFailed</Code></Error>",
                                      [("Connection", "close")])
                return base.do_PUT(self)

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def scripted_gate(s3):
    g = Gate("--upstream", s3.url, "--access-log", "off", "--lock-refresh", "3600s",
             "--workers", "1", "--replay-bytes", str(WINDOW))
    try:
        wait_healthy(g)
    except BaseException:
        g.close()
        raise
    return g


def test_encoded_keys(w):
    """Keys that need percent-encoding (space, '+', '%', non-ASCII, sub-
    delims), existing and uncached, through boto3: the object's HEAD goes
    to exactly the path the write goes to (the proxy reads the object it
    is about to change, as the client spelled it), so one stamped with a
    newer epoch is refused and kept, and an unstamped one is replaced."""
    s3 = boto_proxy(w.g.url)
    tok = {"fencing-token": str(w.epoch)}
    names = ["sp ace", "plus+sign", "pct%25x", "\u00fcml\u00e4ut", "sub!$&'()*,;=@:x",
             "dir/../dot"]
    for i, name in enumerate(names):
        newer, old = "exists/newer-%s" % name, "exists/old-%s" % name
        stamped(w.moto, newer, b"newer-%d" % i, w.epoch + 2)
        stamped(w.moto, old, b"old-%d" % i, 0)
        carried(w.relay)
        try:
            s3.put_object(Bucket=BUCKET, Key=newer, Body=b"zombie", Metadata=tok)
            code = 200
        except Exception as e:  # botocore ClientError
            code = getattr(e, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode")
        s = carried(w.relay)
        expect(code == 409, "%r stamped newer: %s" % (newer, code))
        expect([x[0] for x in s] == ["PUT", "HEAD"] and s[0][1] == s[1][1],
               "%r: the HEAD reads the write's own path: %s" % (newer, s))
        expect(stored(w.moto, newer) == (b"newer-%d" % i, str(w.epoch + 2)),
               "%r: the newer body stays: %r" % (newer, stored(w.moto, newer)))
        s3.put_object(Bucket=BUCKET, Key=old, Body=b"after-%d" % i, Metadata=tok)
        s = carried(w.relay)
        expect([x[0] for x in s] == ["PUT", "HEAD", "PUT"] and s[0][1] == s[1][1] == s[2][1],
               "%r: one path for the create, the HEAD and the re-send: %s" % (old, s))
        expect(stored(w.moto, old) == (b"after-%d" % i, str(w.epoch)),
               "%r: replaced and stamped: %r" % (old, stored(w.moto, old)))


def test_head_fails(flaw):
    """The object's HEAD fails (S3 answers 500, or the connection is cut):
    the write is answered 503 SlowDown, an SDK's retryable error; nothing
    but the refused unread create was sent and the object is unchanged."""
    s3 = ScriptedS3(flaw)
    g = None
    try:
        g = scripted_gate(s3)
        e = seed_object(s3, g)
        st, h, d = req(g.port, "PUT", "/bkt/k", b"after", {"X-Fencing-Token": str(e)})
        expect(st == 503 and s3code(d) == "SlowDown" and b"cannot read the object" in d,
               "%s: %s %s" % (flaw, st, d))
        kinds = [x[0] for x in s3.seen]
        expect(kinds[0] == "PUT" and s3.seen[0][2] == "*" and set(kinds[1:]) == {"HEAD"},
               "%s: the unread create, then HEADs only: %s" % (flaw, s3.seen))
        expect(s3.store.objects["/bkt/k"][0] == b"before", "%s: the object is unchanged" % flaw)
        # the proxy is still whole: the next write to a new key lands
        st, h, d = req(g.port, "PUT", "/bkt/new", b"new", {"X-Fencing-Token": str(e)})
        expect(st == 200 and s3.store.objects["/bkt/new"][0] == b"new",
               "%s: a later write: %s %s" % (flaw, st, d))
    finally:
        if g:
            g.close()
        s3.close()


def seed_object(s3, g):
    """/bkt/k holds b"before" (ETag "0123") on the scripted S3, the proxy
    has not seen it, and the record is empty; returns an epoch of bkt."""
    e = acquire(g.port, "bkt", "w")
    s3.store.objects["/bkt/k"] = (b"before", '"0123"', "Thu, 01 Jan 2026 00:00:00 GMT")
    s3.seen.clear()
    return e


def test_conflict_409():
    """S3's 409 ConditionalRequestConflict to the unread create is read as
    "exists or in flux" like a 412: HEAD, then the write again (here the key
    was absent, so If-None-Match again), and it lands."""
    s3 = ScriptedS3("aws")
    g = None
    try:
        g = scripted_gate(s3)
        e = acquire(g.port, "bkt", "w")
        s3.seen.clear()
        st, h, d = req(g.port, "PUT", "/bkt/new", b"conflicted", {"X-Fencing-Token": str(e)})
        expect(st == 200, "after a 409: %s %s" % (st, d))
        expect([x[0] for x in s3.seen] == ["PUT", "HEAD", "PUT"] and s3.seen[0][2] == "*"
               and s3.seen[2][2] == "*", "409, HEAD, create again: %s" % s3.seen)
        expect(s3.store.objects.get("/bkt/new", (None,))[0] == b"conflicted", "stored")
    finally:
        if g:
            g.close()
        s3.close()


def test_early_412_before_the_body():
    """S3 answers the unread create's 412 before the body has arrived (the
    client sends its body late): the re-send waits for the rest of the held
    body and the whole body lands."""
    s3 = ScriptedS3("early")
    g = None
    try:
        g = scripted_gate(s3)
        e = seed_object(s3, g)
        body = b"late-body-" * 100
        c = socket.create_connection(("127.0.0.1", g.port), timeout=15)
        c.sendall(b"PUT /bkt/k HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream"
                  b"\r\nX-Fencing-Token: %d\r\nContent-Length: %d\r\n\r\n%s"
                  % (e, len(body), body[:10]))
        time.sleep(0.5)   # the 412 and the HEAD happen meanwhile
        early = list(s3.seen)
        c.sendall(body[10:])
        r = http.client.HTTPResponse(c)
        r.begin()
        data = r.read()
        c.close()
        expect(r.status == 200, "late body: %s %s" % (r.status, data))
        # the 412 and the HEAD came before the body, and the If-Match
        # re-send started with what was held, waiting for the rest
        expect([x[0] for x in early] == ["PUT", "HEAD", "PUT"] and early[0][2] == "*" and
               early[2][3] == '"0123"', "before the body: %s" % early)
        expect(len(s3.seen) == 3, "nothing more after it: %s" % s3.seen)
        expect(s3.store.objects["/bkt/k"][0] == body, "the whole body landed: %r" %
               s3.store.objects["/bkt/k"][0][:40])
    finally:
        if g:
            g.close()
        s3.close()


def main():
    r = harness.Runner("e2e cold path")
    moto = harness.Moto()
    w = None
    try:
        moto.create_bucket(BUCKET)
        w = World(moto)
        r.check("write-once keys: one upstream request per accepted write",
                test_write_once_keys, w)
        r.check("an existing uncached key under the current epoch lands",
                test_existing_uncached_current_epoch, w)
        r.check("an existing key stamped with a newer epoch: 409, kept",
                test_existing_newer_epoch_refused, w)
        r.check("a stale writer is refused, nothing sent", test_stale_writer_refused, w)
        r.check("a body beyond the held window keeps the HEAD first",
                test_big_body_keeps_head_first, w)
        r.check("a real client (boto3) on the cold path", test_real_client, w)
        r.check("client conditions and deletes keep their order",
                test_client_conditions_unchanged, w)
        r.check("keys that need encoding: the HEAD reads the write's own path",
                test_encoded_keys, w)
        r.check("scripted S3: 409 ConditionalRequestConflict to the unread create",
                test_conflict_409)
        r.check("scripted S3: the 412 comes before the body; the re-send waits for it",
                test_early_412_before_the_body)
        r.check("scripted S3: the object's HEAD answered 500: 503, unchanged",
                test_head_fails, "head500")
        r.check("scripted S3: the object's HEAD cut: 503, unchanged",
                test_head_fails, "headreset")
    finally:
        if w:
            w.close()
        moto.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
