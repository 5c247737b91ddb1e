#!/usr/bin/env python3
"""What the proxy decides is exactly what storage receives (issue 21).

A client's Connection header names fields to drop at the next hop (RFC 9110
7.6.1). fencegate drops them once, when the request is parsed, before any
handler judges it; the forwarded request is then built from the verdict and
never filtered again. These tests send a hostile Connection header (naming
the object CAS, the stamp, the COPY->REPLACE rewrite, the token and lock)
on every write class, through two replicas, and assert on what moto holds
and on what an upstream received:

  - a zombie's PUT, DELETE and multipart completion through a lagging
    replica never land (the CAS the proxy added reaches moto);
  - the holder's PUT, copies (COPY and REPLACE), multipart create, part,
    part copy and completion carry the holder's stamp, never the copy
    source's; DeleteObjects deletes what it names;
  - Connection naming the token refuses the write (428), naming the
    framing refuses the request (400): nothing reaches moto;
  - HTTP mode: the downstream receives the token and lock the proxy set,
    and none of the client's X-Fencing-* fields; a method override
    (X-HTTP-Method-Override and kin) is refused;
  - a seeded mix of requests and hostile headers through a recording relay:
    every forwarded write carries the stamp and the condition fencing chose,
    with their values, and no field the client's Connection named.

moto and the relay run on free 127.0.0.1 ports and are stopped by PID (the
relay is a thread). Prints 'N passed, N failed'."""
import base64
import hashlib
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from relay import Relay  # noqa: E402
from test_fencing import Gate, acquire, expect, moto_body, release, req, s3code  # noqa: E402
from test_httpmode import Gate as HttpGate, Recorder  # noqa: E402

# what the bug let a client strip: the object CAS, the stamp, the copy
# rewrite, the lock name, the copy condition; plus fields named only to
# see them go
HOSTILE = ("If-Match, If-None-Match, x-amz-meta-fencing-epoch, x-amz-meta-fencing-lock, "
           "x-amz-metadata-directive, X-Fencing-Lock, x-amz-copy-source-if-match, X-Decoy")


def hostile(token, **more):
    """A write's headers with a Connection naming what fencing sets (the
    fields themselves absent or harmless, so that only the naming matters)."""
    h = {"Connection": HOSTILE, "X-Fencing-Token": str(token), "X-Decoy": "1"}
    h.update(more)
    return h


def stamp(moto, bucket, key):
    body, meta = moto_body(moto, bucket, key)
    return body, (meta or {}).get("fencing-epoch"), (meta or {}).get("fencing-lock"), meta


def test_zombie_through_lagging_replica(moto):
    b = "fwd-zombie"
    moto.create_bucket(b)
    one = ("--access-log", "off", "--workers", "1")
    ga = Gate("--upstream", moto.url, *one)
    gb = Gate("--upstream", moto.url, "--lock-refresh", "3600s", *one)  # never refreshes
    gc = Gate("--upstream", moto.url, "--lock-refresh", "3600s", *one)  # nor this one
    try:
        e1 = acquire(ga.port, b, "zombie")
        st, _, d = req(gc.port, "PUT", "/%s/cp" % b, b"z1", {"X-Fencing-Token": str(e1)})
        expect(st == 200, "C writes cp under epoch 1 (its ETag cached): %s %s" % (st, d))
        for k in ("put", "del"):
            st, _, d = req(gb.port, "PUT", "/%s/%s" % (b, k), b"z1", {"X-Fencing-Token": str(e1)})
            expect(st == 200, "epoch 1 writes %s: %s %s" % (k, st, d))
        st, _, d = req(gb.port, "POST", "/%s/mpu?uploads" % b, b"", {"X-Fencing-Token": str(e1)})
        expect(st == 200, "zombie creates an upload: %s %s" % (st, d))
        upload = d.split(b"<UploadId>")[1].split(b"</UploadId>")[0].decode()
        st, hp, d = req(gb.port, "PUT", "/%s/mpu?partNumber=1&uploadId=%s" % (b, upload),
                        b"zombie-part", hostile(e1))
        expect(st == 200, "zombie part: %s %s" % (st, d))
        release(ga.port, b, e1)
        e2 = acquire(ga.port, b, "leader")
        for k in ("put", "del", "mpu", "cp"):
            st, _, _ = req(ga.port, "PUT", "/%s/%s" % (b, k), b"leader",
                           {"X-Fencing-Token": str(e2)})
            expect(st == 200, "the leader writes %s: %s" % (k, st))
        # moto ignores a copy destination's condition (as radosgw does),
        # so C's If-Match on cp's cached ETag would not stop the copy: C
        # decides it on a listing made for it, which shows epoch 2
        st, _, d = req(gc.port, "PUT", "/%s/cp" % b, b"", hostile(
            e1, **{"x-amz-copy-source": "/%s/put" % b, "x-amz-metadata-directive": "REPLACE",
                   "x-amz-meta-z": "zombie"}))
        expect(st == 409 and s3code(d) == "FencingTokenStale", "zombie copy: %s %s" % (st, d))
        # B still believes epoch 1 is current: only the object CAS it adds
        # stands between the zombie and the leader's data (each refusal
        # teaches B epoch 2, so the completion goes first)
        xml = ('<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag>'
               '</Part></CompleteMultipartUpload>' % hp["etag"]).encode()
        st, _, d = req(gb.port, "POST", "/%s/mpu?uploadId=%s" % (b, upload), xml, hostile(e1))
        expect(st == 409, "zombie completion: %s %s" % (st, d))
        st, _, d = req(gb.port, "PUT", "/%s/put" % b, b"zombie", hostile(e1))
        expect(st == 409 and s3code(d) == "FencingTokenStale", "zombie PUT: %s %s" % (st, d))
        st, _, d = req(gb.port, "DELETE", "/%s/del" % b, b"", hostile(e1))
        expect(st == 409, "zombie DELETE: %s %s" % (st, d))
        for k in ("put", "del", "mpu", "cp"):
            body, epoch, lock, _m = stamp(moto, b, k)
            expect(body == b"leader" and epoch == str(e2) and lock == b,
                   "the leader's %s stands: %r %s %s" % (k, body, epoch, lock))
    finally:
        ga.close()
        gb.close()
        gc.close()


def test_holder_writes_carry_the_verdict(moto):
    b, other = "fwd-holder", "fwd-other"
    moto.create_bucket(b)
    moto.create_bucket(other)
    # the copy source carries another lock's stamp (epoch 19)
    moto.client().put_object(Bucket=other, Key="src", Body=b"source",
                             Metadata={"fencing-epoch": "19", "fencing-lock": other,
                                       "color": "blue"})
    ga = Gate("--upstream", moto.url, "--access-log", "off")
    gb = Gate("--upstream", moto.url, "--access-log", "off")
    try:
        e = acquire(ga.port, b, "holder")
        st, _, d = req(ga.port, "PUT", "/%s/p1" % b, b"one", hostile(e))
        expect(st == 200, "PUT: %s %s" % (st, d))
        expect(stamp(moto, b, "p1")[:3] == (b"one", str(e), b), "PUT stamped")
        # COPY (named in Connection, so the default): the proxy's REPLACE
        # with the source's metadata and its own stamp reaches moto
        st, _, d = req(gb.port, "PUT", "/%s/c1" % b, b"", hostile(
            e, **{"x-amz-copy-source": "/%s/src" % other, "x-amz-metadata-directive": "COPY"}))
        expect(st == 200, "COPY: %s %s" % (st, d))
        body, epoch, lock, meta = stamp(moto, b, "c1")
        expect((body, epoch, lock) == (b"source", str(e), b) and meta.get("color") == "blue",
               "the copy carries the holder's stamp, not the source's: %s %s %s" %
               (epoch, lock, meta))
        h = {"Connection": "If-None-Match, x-amz-meta-fencing-epoch, x-amz-meta-fencing-lock",
             "X-Fencing-Token": str(e), "x-amz-copy-source": "/%s/src" % other,
             "x-amz-metadata-directive": "REPLACE", "x-amz-meta-k": "v"}
        st, _, d = req(ga.port, "PUT", "/%s/c2" % b, b"", h)
        expect(st == 200, "REPLACE: %s %s" % (st, d))
        body, epoch, lock, meta = stamp(moto, b, "c2")
        expect((epoch, lock, meta.get("k")) == (str(e), b, "v"), "REPLACE stamped: %s" % meta)
        # multipart: create, a 5 MiB part, a part copied from the source,
        # completion, each through another replica
        st, _, d = req(gb.port, "POST", "/%s/m1?uploads" % b, b"", hostile(e))
        expect(st == 200, "create: %s %s" % (st, d))
        upload = d.split(b"<UploadId>")[1].split(b"</UploadId>")[0].decode()
        big = b"a" * (5 * 1024 * 1024)
        st, h1, d = req(ga.port, "PUT", "/%s/m1?partNumber=1&uploadId=%s" % (b, upload), big,
                        hostile(e))
        expect(st == 200, "part: %s %s" % (st, d))
        st, _, d = req(gb.port, "PUT", "/%s/m1?partNumber=2&uploadId=%s" % (b, upload), b"",
                       hostile(e, **{"x-amz-copy-source": "/%s/src" % other}))
        expect(st == 200, "part copy: %s %s" % (st, d))
        etag2 = d.split(b"<ETag>")[1].split(b"</ETag>")[0].decode().replace("&quot;", '"')
        xml = ('<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>'
               '<Part><PartNumber>2</PartNumber><ETag>%s</ETag></Part>'
               '</CompleteMultipartUpload>' % (h1["etag"], etag2)).encode()
        st, _, d = req(ga.port, "POST", "/%s/m1?uploadId=%s" % (b, upload), xml, hostile(e))
        expect(st == 200, "complete: %s %s" % (st, d))
        body, epoch, lock, _m = stamp(moto, b, "m1")
        expect(body == big + b"source" and (epoch, lock) == (str(e), b),
               "the upload landed stamped: %s %s" % (epoch, lock))
        # DeleteObjects deletes what it names, nothing else
        xml = b"<Delete><Object><Key>p1</Key></Object></Delete>"
        md5 = base64.b64encode(hashlib.md5(xml).digest()).decode()
        st, _, d = req(gb.port, "POST", "/%s?delete" % b, xml, hostile(e, **{"Content-MD5": md5}))
        expect(st == 200 and b"<Deleted>" in d, "DeleteObjects: %s %s" % (st, d))
        expect(stamp(moto, b, "p1")[0] is None and stamp(moto, b, "c1")[0] == b"source",
               "p1 deleted, c1 kept")
        # Connection naming the token removes it: refused, nothing written
        h = {"Connection": "X-Fencing-Token", "X-Fencing-Token": str(e)}
        st, _, d = req(ga.port, "PUT", "/%s/p2" % b, b"two", h)
        expect(st == 428 and s3code(d) == "FencingTokenMissing", "token named: %s %s" % (st, d))
        # the framing cannot be hop-by-hop
        h = {"Connection": "Content-Length", "X-Fencing-Token": str(e)}
        st, _, d = req(gb.port, "PUT", "/%s/p2" % b, b"two", h)
        expect(st == 400, "Content-Length named: %s %s" % (st, d))
        expect(stamp(moto, b, "p2")[0] is None, "nothing reached moto")
    finally:
        ga.close()
        gb.close()


def test_http_mode_downstream_gets_the_verdict():
    rec = Recorder()
    tmp = harness.TempDir()
    g = HttpGate("--mode", "http", "--upstream", rec.url, "--lock-store", "file://" + tmp.path)
    try:
        e = g.acquire("hl")
        h = {"X-Fencing-Lock": "hl", "X-Fencing-Token": str(e), "Connection": "If-Match, X-Other",
             "If-Match": "x", "X-Other": "1", "X-Fencing-Epoch-Current": "99",
             "X-Fencing-Extra": "1", "x-amz-meta-fencing-token": str(e)}
        st, _, d = g.request("POST", "/hl/1", b"body", h)
        expect(st == 200, "fenced POST: %s %s" % (st, d))
        got = rec.seen("/hl/1")
        expect(len(got) == 1, "one request downstream: %s" % got)
        hd = got[0]["headers"]
        expect(hd.get("x-fencing-token") == str(e) and hd.get("x-fencing-lock") == "hl",
               "the token and lock the proxy set: %s" % hd)
        for n in ("if-match", "x-other", "x-fencing-epoch-current", "x-fencing-extra",
                  "x-amz-meta-fencing-token", "connection"):
            expect(n not in hd, "%s not forwarded: %s" % (n, hd))
        for name in ("X-Fencing-Token", "X-Fencing-Lock"):
            h = {"X-Fencing-Lock": "hl", "X-Fencing-Token": str(e), "Connection": name}
            st, _, d = g.request("POST", "/hl/2", b"body", h)
            expect(400 <= st < 500, "Connection naming %s: %s %s" % (name, st, d))
        expect(rec.seen("/hl/2") == [], "nothing reached the downstream")
        # a read that a framework would run as a DELETE is not a read
        for name in ("X-HTTP-Method-Override", "X-HTTP-Method", "x-method-override"):
            st, _, d = g.request("GET", "/hl/3", None, {name: "DELETE"})
            expect(st == 400 and b"MethodOverrideRefused" in d, "%s: %s %s" % (name, st, d))
        expect(rec.seen("/hl/3") == [], "no override reached the downstream")
    finally:
        g.close()
        rec.close()
        tmp.close()


NAMES = ["If-Match", "If-None-Match", "x-amz-meta-fencing-epoch", "x-amz-meta-fencing-lock",
         "X-Fencing-Lock", "X-Fencing-Epoch-Current", "X-Fencing-Epoch-Check", "Content-Type",
         "x-amz-meta-a", "Keep-Alive", "TE", "Upgrade", "Proxy-Authorization", "X-Custom",
         "x-amz-metadata-directive", "Trailer"]
HOP = {"connection", "keep-alive", "te", "upgrade", "proxy-authorization", "trailer"}


def test_property_forwarded_fields(moto):
    """A seeded mix of writes with hostile headers: every write the proxy
    accepted reached moto with fencing's stamp and condition, as chosen."""
    b = "fwd-prop"
    moto.create_bucket(b)
    relay = Relay(moto.port)
    g = Gate("--upstream", relay.url, "--access-log", "off", "--workers", "1")
    rnd = random.Random(21)
    accepted = 0
    try:
        e = acquire(g.port, b, "prop")
        for i in range(48):
            key = "k%d" % rnd.randrange(5)
            kind = rnd.choice(["PUT", "PUT", "DELETE", "CREATE"])
            named = rnd.sample(NAMES, rnd.randint(0, 5))
            h = {"X-Fencing-Token": str(e)}
            if named:
                h["Connection"] = ", ".join(named)
            for n in rnd.sample(NAMES, rnd.randint(0, 4)):
                h[n] = {"If-Match": '"bogus"', "If-None-Match": "*",
                        "x-amz-meta-fencing-epoch": "99", "TE": "trailers",
                        "Upgrade": "h2c"}.get(n, "7")
            before = moto_body(moto, b, key)[0]
            etag = None
            if before is not None:
                etag = moto.client().head_object(Bucket=b, Key=key)["ETag"]
            method, path = {"PUT": ("PUT", "/%s/%s" % (b, key)),
                            "DELETE": ("DELETE", "/%s/%s" % (b, key)),
                            "CREATE": ("POST", "/%s/%s?uploads" % (b, key))}[kind]
            relay.take()
            st, _, d = req(g.port, method, path, b"v%d" % i if kind == "PUT" else b"", h)
            sent = [f for m, t, f in relay.take() if m == method and t == path]
            left = {n.lower() for n in h if n not in named and n != "Connection"}
            if not 200 <= st < 300:
                if st in (400, 428):  # the proxy's own refusals
                    expect(sent == [], "request %d refused %d yet forwarded" % (i, st))
                continue
            accepted += 1
            # one request, or two for a PUT to an existing key the proxy has
            # not seen: the unread create (If-None-Match "*", answered 412),
            # then, after a HEAD, the write with If-Match (objcas.h)
            unread = kind == "PUT" and etag is not None and len(sent) == 2
            expect(len(sent) == 1 or unread, "request %d: %d forwarded" % (i, len(sent)))
            for k, f in enumerate(sent):
                names = [n for n, _v in f]
                for n in names:
                    expect(n not in HOP and not n.startswith("x-fencing-"),
                           "request %d forwarded %s: %s" % (i, n, f))
                for n in named:  # a field the client's Connection named is gone,
                    # unless fencing set it (its value is checked below)
                    if n.lower() not in ("if-match", "if-none-match", "x-amz-meta-fencing-epoch",
                                         "x-amz-meta-fencing-lock", "content-type"):
                        expect(n.lower() not in names, "request %d: %s was named: %s" % (i, n, f))
                values = {}
                for n, v in f:
                    values.setdefault(n, []).append(v)
                if kind in ("PUT", "CREATE"):
                    expect(values.get("x-amz-meta-fencing-epoch") == [str(e)] and
                           values.get("x-amz-meta-fencing-lock") == [b],
                           "request %d stamped by fencing: %s" % (i, f))
                if kind == "PUT" or (kind == "DELETE" and etag):
                    cond = values.get("if-match", []) + values.get("if-none-match", [])
                    want = ["*"] if unread and k == 0 else [etag] if etag else ["*"]
                    expect(cond == want, "request %d: condition %s, want %s (%s, client %s)" %
                           (i, cond, want, f, left))
        expect(accepted >= 12, "enough writes were accepted to mean something: %d" % accepted)
    finally:
        g.close()
        relay.close()


def test_aws_chunked_decoded_when_resigned(moto):
    """Authentication off, in front of S3: an aws-chunked body is decoded
    and forwarded plain under the proxy's signature (a real S3 refuses the
    client's chunk signatures under another signature; moto would not)."""
    import zlib
    b = "fwd-chunked"
    moto.create_bucket(b)
    relay = Relay(moto.port)
    g = Gate("--upstream", relay.url, "--access-log", "off", "--workers", "1")
    try:
        e = acquire(g.port, b, "c")
        data = b"hello, chunked world " * 100
        crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
        half = len(data) // 2
        for mode, sig in (("STREAMING-UNSIGNED-PAYLOAD-TRAILER", ""),
                          ("STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
                           ";chunk-signature=" + "0" * 64)):
            body = b""
            for piece in (data[:half], data[half:], b""):
                body += b"%x%s\r\n%s" % (len(piece), sig.encode(), piece)
                body += b"\r\n" if piece else b""
            body += b"x-amz-checksum-crc32:%s\r\n" % crc.encode()
            if sig:
                body += b"x-amz-trailer-signature:" + b"0" * 64 + b"\r\n"
            body += b"\r\n"
            h = {"X-Fencing-Token": str(e), "Content-Encoding": "aws-chunked",
                 "x-amz-content-sha256": mode, "x-amz-decoded-content-length": str(len(data)),
                 "x-amz-trailer": "x-amz-checksum-crc32"}
            key = "obj-" + mode.lower()
            relay.take()
            st, _, d = req(g.port, "PUT", "/%s/%s" % (b, key), body, h)
            expect(st == 200, "%s: %s %s" % (mode, st, d))
            sent = [f for m, t, f in relay.take() if m == "PUT" and t == "/%s/%s" % (b, key)]
            expect(len(sent) == 1, "one PUT forwarded")
            f = dict(sent[0])
            expect(f.get("x-amz-content-sha256") == "UNSIGNED-PAYLOAD" and
                   "aws-chunked" not in f.get("content-encoding", "") and
                   f.get("content-length") == str(len(data)) and "x-amz-trailer" not in f and
                   "x-amz-decoded-content-length" not in f, "forwarded plain: %s" % f)
            expect(moto_body(moto, b, key)[0] == data, "moto holds the decoded bytes")
        # a body whose checksum trailer does not match is refused, unstored
        bad = b"%x\r\n%s\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n" % (len(data), data)
        h = {"X-Fencing-Token": str(e), "Content-Encoding": "aws-chunked",
             "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
             "x-amz-decoded-content-length": str(len(data)),
             "x-amz-trailer": "x-amz-checksum-crc32"}
        st, _, d = req(g.port, "PUT", "/%s/bad" % b, bad, h)
        expect(400 <= st < 500, "a bad trailer: %s %s" % (st, d))
        expect(moto_body(moto, b, "bad")[0] is None, "nothing stored")
    finally:
        g.close()
        relay.close()


def test_presign_names_stripped_decoded(moto):
    """Presign parameters are classified decoded (s3req.c) and stripped
    decoded: an escaped name is not forwarded beside the proxy's own
    signature."""
    b = "fwd-presign"
    moto.create_bucket(b)
    relay = Relay(moto.port)
    g = Gate("--upstream", relay.url, "--access-log", "off", "--workers", "1")
    try:
        e = acquire(g.port, b, "p")
        relay.take()
        q = "X-Amz-%53ignature=abc&x-amz-%44ate=20260101T000000Z&%41WSAccessKeyId=AK"
        st, _, d = req(g.port, "PUT", "/%s/k?%s" % (b, q), b"v", {"X-Fencing-Token": str(e)})
        expect(st == 200, "PUT with escaped presign names: %s %s" % (st, d))
        sent = [t for m, t, f in relay.take() if m == "PUT" and t.startswith("/%s/k" % b)]
        expect(sent == ["/%s/k" % b], "forwarded without them: %s" % sent)
    finally:
        g.close()
        relay.close()


def main():
    r = harness.Runner("e2e forwarded")
    moto = harness.Moto()
    try:
        r.check("a zombie's hostile Connection through a lagging replica",
                test_zombie_through_lagging_replica, moto)
        r.check("the holder's writes carry the verdict, every class",
                test_holder_writes_carry_the_verdict, moto)
        r.check("property: forwarded writes carry fencing's fields", test_property_forwarded_fields,
                moto)
        r.check("aws-chunked decoded when re-signed, authentication off",
                test_aws_chunked_decoded_when_resigned, moto)
        r.check("presign parameter names are stripped decoded",
                test_presign_names_stripped_decoded, moto)
    finally:
        moto.close()
    r.check("HTTP mode: the downstream gets the verdict",
            test_http_mode_downstream_gets_the_verdict)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
