#!/usr/bin/env python3
"""End-to-end: AWS Signature Version 2 clients through fencegate (S3 mode).

The same moto + fencegate -c CONFIG as test_auth.py (its Gate). boto3's
generate_presigned_url against a custom endpoint makes a SigV2 URL
(AWSAccessKeyId, Signature, Expires) by default: opened with urllib and
curl it answers 200 with the object; expired or tampered it is 403; a
presigned PUT carries the token as x-amz-meta-fencing-token in its query,
which is read as the header S3 takes it for (so is the content-type
botocore moves there with it). boto3
with signature_version "s3" (header auth) writes with the token as
metadata, and a token sent as X-Fencing-Token (which SigV2 cannot sign) is
refused. s3cmd --signature-v2 puts, gets, lists and deletes. Every refusal
is checked on moto's storage too: nothing lands."""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Runner, run  # noqa: E402
from test_auth import (BUCKET, READER, WRITER, Gate, expect_client_error, raw,  # noqa: E402
                       s3_code, s3cmd_config)


def v2_client(g, creds):
    return g.client(creds, signature_version="s3")


def default_client(g, creds):
    """boto3 as a user makes it: no signature_version (presigns with V2)."""
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=g.url, region_name="us-east-1",
                        aws_access_key_id=creds[0], aws_secret_access_key=creds[1],
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


def urlopen(url, method="GET", data=None):
    req = urllib.request.Request(url, method=method, data=data)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def put_fenced(g, key, body):
    g.client(WRITER).put_object(Bucket=BUCKET, Key=key, Body=body,
                                Metadata={"fencing-token": str(g.epoch)})


def t_presigned_default(g):
    body = b"presigned with signature version 2 " * 100
    put_fenced(g, "v2/pre.txt", body)
    s3 = default_client(g, WRITER)
    url = s3.generate_presigned_url("get_object",
                                    Params={"Bucket": BUCKET, "Key": "v2/pre.txt"},
                                    ExpiresIn=300)
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    assert set(q) == {"AWSAccessKeyId", "Signature", "Expires"}, url
    st, got = urlopen(url)
    assert st == 200 and got == body, (st, got[:200])
    if not shutil.which("curl"):
        raise AssertionError("curl is not installed (deploy/install-deps.sh test)")
    r = subprocess.run(["curl", "-s", "-o", "-", "-w", "\n%{http_code}", url],
                       stdout=subprocess.PIPE, timeout=30)
    out, code = r.stdout.rsplit(b"\n", 1)
    assert code == b"200" and out == body, (code, out[:200])
    # a key with spaces and UTF-8: the path is signed as sent
    key = "v2/dir/fran\u00e7ais and spaces+plus.txt"
    put_fenced(g, key, b"unicode")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": key},
                                    ExpiresIn=300)
    assert urlopen(url) == (200, b"unicode"), url
    # a reader's presigned URL works too; a sub-resource (response-*) is
    # signed (moto ignores response-content-type: only the status is checked)
    url = default_client(g, READER).generate_presigned_url(
        "get_object", Params={"Bucket": BUCKET, "Key": "v2/pre.txt",
                              "ResponseContentType": "text/x-v2"}, ExpiresIn=300)
    assert urlopen(url) == (200, body), url
    st, got = urlopen(url.replace("text%2Fx-v2", "text%2Fhtml"))
    assert st == 403 and s3_code(got) == "SignatureDoesNotMatch", (st, got)


def t_presigned_expired_and_tampered(g):
    put_fenced(g, "v2/exp.txt", b"e")
    s3 = default_client(g, WRITER)
    url = s3.generate_presigned_url("get_object",
                                    Params={"Bucket": BUCKET, "Key": "v2/exp.txt"}, ExpiresIn=1)
    time.sleep(2.2)
    st, body = urlopen(url)
    assert st == 403 and s3_code(body) == "AccessDenied", (st, body)
    assert b"expired" in body, body
    url = s3.generate_presigned_url("get_object",
                                    Params={"Bucket": BUCKET, "Key": "v2/exp.txt"}, ExpiresIn=300)
    # another key under the same signature
    st, body = urlopen(url.replace("v2/exp.txt", "v2/pre.txt"))
    assert st == 403 and s3_code(body) == "SignatureDoesNotMatch", (st, body)
    # a later expiry under the same signature
    u = urllib.parse.urlsplit(url)
    q = urllib.parse.parse_qs(u.query)
    q["Expires"] = [str(int(q["Expires"][0]) + 60)]
    st, body = urlopen(u._replace(query=urllib.parse.urlencode(q, doseq=True)).geturl())
    assert st == 403 and s3_code(body) == "SignatureDoesNotMatch", (st, body)
    # a signature changed by one character
    sig = q["Signature"][0]
    q["Signature"] = [("A" if sig[0] != "A" else "B") + sig[1:]]
    q["Expires"] = [str(int(q["Expires"][0]) - 60)]
    st, body = urlopen(u._replace(query=urllib.parse.urlencode(q, doseq=True)).geturl())
    assert st == 403 and s3_code(body) == "SignatureDoesNotMatch", (st, body)
    # a wrong secret
    url = default_client(g, (WRITER[0], "not-the-secret")).generate_presigned_url(
        "get_object", Params={"Bucket": BUCKET, "Key": "v2/exp.txt"}, ExpiresIn=300)
    st, body = urlopen(url)
    assert st == 403 and s3_code(body) == "SignatureDoesNotMatch", (st, body)


def t_presigned_writes(g):
    s3 = default_client(g, WRITER)
    # a presigned PUT with no token: fenced like any write (428), nothing lands
    u = urllib.parse.urlsplit(s3.generate_presigned_url(
        "put_object", Params={"Bucket": BUCKET, "Key": "v2/pput"}, ExpiresIn=300))
    # (http.client, not urllib: urllib adds a Content-Type, which SigV2 signs)
    st, body = raw(g.port, "PUT", u.path + "?" + u.query, b"no token")
    assert st == 428 and s3_code(body) == "FencingTokenMissing", (st, body)
    assert g.in_moto("v2/pput") is None
    # botocore moves the metadata into the query, and S3 reads x-amz-* query
    # parameters of a SigV2 URL as headers; so does fencegate: the token in
    # the URL fences the write, which lands stamped, with the metadata
    # stored as metadata (not as a query parameter)
    def presigned_put(token, key):
        return urllib.parse.urlsplit(s3.generate_presigned_url("put_object", Params={
            "Bucket": BUCKET, "Key": key, "Metadata": {"fencing-token": str(token), "note": "n"}},
            ExpiresIn=300))
    u = presigned_put(g.epoch, "v2/pput-ok")
    assert "x-amz-meta-fencing-token=" in u.query, u.query
    st, body = raw(g.port, "PUT", u.path + "?" + u.query, b"token in the query")
    assert st == 200, (st, body)
    assert g.in_moto("v2/pput-ok") == b"token in the query"
    h = g.moto.client().head_object(Bucket=BUCKET, Key="v2/pput-ok")
    assert h["Metadata"].get("fencing-epoch") == str(g.epoch), h["Metadata"]
    assert h["Metadata"].get("note") == "n" and "fencing-token" not in h["Metadata"], h
    # botocore's SigV2 query signer moves a presigned PUT's ContentType into
    # the query too (content-type=): read as the header, like x-amz-*; a
    # client that sends another type is refused, one that sends none is not
    u = urllib.parse.urlsplit(s3.generate_presigned_url("put_object", Params={
        "Bucket": BUCKET, "Key": "v2/pput-type", "ContentType": "text/x-v2",
        "Metadata": {"fencing-token": str(g.epoch)}}, ExpiresIn=300))
    assert "content-type=text%2Fx-v2" in u.query, u.query
    st, body = raw(g.port, "PUT", u.path + "?" + u.query, b"typed", {"Content-Type": "text/html"})
    assert (st, s3_code(body)) in ((403, "SignatureDoesNotMatch"), (400, "InvalidArgument")), \
        (st, body)
    assert g.in_moto("v2/pput-type") is None
    st, body = raw(g.port, "PUT", u.path + "?" + u.query, b"typed")
    assert st == 200, (st, body)
    assert g.in_moto("v2/pput-type") == b"typed"
    h = g.moto.client().head_object(Bucket=BUCKET, Key="v2/pput-type")
    assert h["ContentType"] == "text/x-v2", h
    # a token below the lock's epoch in the URL (0 when the lock is at 1,
    # which no epoch is): refused, nothing changes
    u = presigned_put(g.epoch - 1, "v2/pput-stale")
    st, body = raw(g.port, "PUT", u.path + "?" + u.query, b"stale")
    assert (st, s3_code(body)) == ((409, "FencingTokenStale") if g.epoch > 1 else
                                   (400, "FencingTokenInvalid")), (st, body)
    assert g.in_moto("v2/pput-stale") is None
    # the token in the query is signed: changed, the URL no longer verifies
    u = presigned_put(g.epoch, "v2/pput-forged")
    forged = u.query.replace("x-amz-meta-fencing-token=%d" % g.epoch,
                             "x-amz-meta-fencing-token=%d" % (g.epoch + 5))
    assert forged != u.query
    st, body = raw(g.port, "PUT", u.path + "?" + forged, b"forged")
    assert st == 403 and s3_code(body) == "SignatureDoesNotMatch", (st, body)
    assert g.in_moto("v2/pput-forged") is None
    # the proxy's stamp cannot come in through the query either
    u = urllib.parse.urlsplit(s3.generate_presigned_url("put_object", Params={
        "Bucket": BUCKET, "Key": "v2/pput-stamp",
        "Metadata": {"fencing-token": str(g.epoch), "fencing-epoch": "999"}}, ExpiresIn=300))
    st, body = raw(g.port, "PUT", u.path + "?" + u.query, b"stamp")
    assert st == 400, (st, body)
    assert g.in_moto("v2/pput-stamp") is None
    # a header that contradicts the query's: refused (the signature, which
    # covers the query's value, is checked first), nothing lands
    u = presigned_put(g.epoch, "v2/pput-twice")
    st, body = raw(g.port, "PUT", u.path + "?" + u.query, b"twice",
                   {"x-amz-meta-note": "other"})
    assert (st, s3_code(body)) in ((403, "SignatureDoesNotMatch"), (400, "InvalidArgument")), \
        (st, body)
    assert g.in_moto("v2/pput-twice") is None
    # an unsigned X-Fencing-Token on a presigned SigV2 write: 403
    u = urllib.parse.urlsplit(s3.generate_presigned_url(
        "put_object", Params={"Bucket": BUCKET, "Key": "v2/pput"}, ExpiresIn=300))
    st, body = raw(g.port, "PUT", u.path + "?" + u.query, b"header token",
                   {"X-Fencing-Token": str(g.epoch)})
    assert st == 403 and s3_code(body) == "AccessDenied", (st, body)
    assert g.in_moto("v2/pput") is None


def t_header_auth(g):
    s3 = v2_client(g, WRITER)
    body = os.urandom(50000)
    s3.put_object(Bucket=BUCKET, Key="v2/hdr.bin", Body=body,
                  Metadata={"fencing-token": str(g.epoch)})
    h = g.moto.client().head_object(Bucket=BUCKET, Key="v2/hdr.bin")
    assert h["Metadata"].get("fencing-epoch") == str(g.epoch), h["Metadata"]
    assert g.in_moto("v2/hdr.bin") == body
    assert s3.get_object(Bucket=BUCKET, Key="v2/hdr.bin")["Body"].read() == body
    keys = [o["Key"] for o in s3.list_objects(Bucket=BUCKET, Prefix="v2/hdr")["Contents"]]
    assert keys == ["v2/hdr.bin"], keys
    # a stale token as (signed) metadata: fenced as usual
    expect_client_error(lambda: s3.put_object(Bucket=BUCKET, Key="v2/hdr.bin", Body=b"z",
                                              Metadata={"fencing-token": str(g.epoch - 1)}),
                        "FencingTokenStale" if g.epoch > 1 else "FencingTokenInvalid",
                        409 if g.epoch > 1 else 400)
    # X-Fencing-Token cannot be signed with SigV2: refused, nothing changes
    tok = v2_client(g, WRITER)
    tok.meta.events.register("before-sign.s3.*", lambda request, **kw:
                             request.headers.__setitem__("X-Fencing-Token", str(g.epoch)))
    expect_client_error(lambda: tok.put_object(Bucket=BUCKET, Key="v2/hdr.bin", Body=b"x"),
                        "AccessDenied", 403)
    expect_client_error(lambda: tok.delete_object(Bucket=BUCKET, Key="v2/hdr.bin"),
                        "AccessDenied", 403)
    assert g.in_moto("v2/hdr.bin") == body
    # ... but a read may carry it
    assert tok.get_object(Bucket=BUCKET, Key="v2/hdr.bin")["Body"].read() == body
    # permissions are the same as with SigV4: the reader cannot write
    expect_client_error(lambda: v2_client(g, READER).put_object(
        Bucket=BUCKET, Key="v2/ro", Body=b"r", Metadata={"fencing-token": str(g.epoch)}),
        "AccessDenied", 403)
    assert g.in_moto("v2/ro") is None
    # wrong secret, unknown key
    expect_client_error(lambda: v2_client(g, (WRITER[0], "wrong")).put_object(
        Bucket=BUCKET, Key="v2/bad", Body=b"b", Metadata={"fencing-token": str(g.epoch)}),
        "SignatureDoesNotMatch", 403)
    expect_client_error(lambda: v2_client(g, ("AKIDNOBODY0001", "x")).get_object(
        Bucket=BUCKET, Key="v2/hdr.bin"), "InvalidAccessKeyId", 403)
    assert g.in_moto("v2/bad") is None


def t_header_skew(g):
    """A SigV2 header request with a Date 20 minutes off: 403."""
    import base64
    import email.utils
    import hashlib
    import hmac
    date = email.utils.formatdate(time.time() - 1200, usegmt=True)
    sts = "GET\n\n\n%s\n/%s/v2/hdr.bin" % (date, BUCKET)
    sig = base64.b64encode(hmac.new(WRITER[1].encode(), sts.encode(), hashlib.sha1).digest())
    st, body = raw(g.port, "GET", "/%s/v2/hdr.bin" % BUCKET, b"",
                   {"Date": date, "Authorization": "AWS %s:%s" % (WRITER[0], sig.decode())})
    assert st == 403 and s3_code(body) == "RequestTimeTooSkewed", (st, body)
    # the same string signed now, with x-amz-date (which wins over Date)
    now = time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime())
    sts = "GET\n\n\n\nx-amz-date:%s\n/%s/v2/hdr.bin" % (now, BUCKET)
    sig = base64.b64encode(hmac.new(WRITER[1].encode(), sts.encode(), hashlib.sha1).digest())
    st, body = raw(g.port, "GET", "/%s/v2/hdr.bin" % BUCKET, b"",
                   {"Date": date, "x-amz-date": now,
                    "Authorization": "AWS %s:%s" % (WRITER[0], sig.decode())})
    assert st == 200, (st, body[:300])


def t_s3cmd_v2(g):
    if not shutil.which("s3cmd"):
        raise AssertionError("s3cmd is not installed (deploy/install-deps.sh test)")
    d = tempfile.mkdtemp()
    try:
        cfg = s3cmd_config(os.path.join(d, "s3cfg"), WRITER, g.port, signature_v2=True)
        src = os.path.join(d, "in.txt")
        with open(src, "wb") as f:
            f.write(b"s3cmd v2 payload " * 1000)
        base = ["s3cmd", "-c", cfg, "--signature-v2", "--no-check-md5"]
        r = run(base + ["put", "--add-header=x-amz-meta-fencing-token:%d" % g.epoch, src,
                        "s3://%s/s3cmdv2/in.txt" % BUCKET])
        assert r.returncode == 0, r.stdout + r.stderr
        assert g.in_moto("s3cmdv2/in.txt") == open(src, "rb").read()
        h = g.moto.client().head_object(Bucket=BUCKET, Key="s3cmdv2/in.txt")
        assert h["Metadata"].get("fencing-epoch") == str(g.epoch), h["Metadata"]
        out = os.path.join(d, "out.txt")
        r = run(base + ["get", "s3://%s/s3cmdv2/in.txt" % BUCKET, out])
        assert r.returncode == 0, r.stdout + r.stderr
        assert open(out, "rb").read() == open(src, "rb").read()
        r = run(base + ["ls", "s3://%s/s3cmdv2/" % BUCKET])
        assert r.returncode == 0 and "in.txt" in r.stdout, r.stdout + r.stderr
        # the token as X-Fencing-Token cannot be signed with SigV2: 403
        r = run(base + ["put", "--add-header=X-Fencing-Token:%d" % g.epoch, src,
                        "s3://%s/s3cmdv2/hdr.txt" % BUCKET])
        assert r.returncode != 0 and "AccessDenied" in r.stdout + r.stderr, r.stdout + r.stderr
        assert g.in_moto("s3cmdv2/hdr.txt") is None
        # s3cmd's DELETE carries no token: fenced (428), the object stays
        r = run(base + ["del", "s3://%s/s3cmdv2/in.txt" % BUCKET])
        assert r.returncode != 0 and "FencingTokenMissing" in r.stdout + r.stderr, \
            r.stdout + r.stderr
        assert g.in_moto("s3cmdv2/in.txt") is not None
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    r = Runner("e2e sigv2")
    g = Gate()
    try:
        for label, fn in [
            ("boto3 default presign (SigV2) via urllib and curl: 200", t_presigned_default),
            ("presigned SigV2: expired 403, tampered 403", t_presigned_expired_and_tampered),
            ("presigned SigV2 writes: the token in the query fences them; forged, stale, "
             "stamp and unsigned header refused",
             t_presigned_writes),
            ("boto3 signature_version s3: token as metadata; X-Fencing-Token 403",
             t_header_auth),
            ("SigV2 header: skewed Date 403, x-amz-date wins", t_header_skew),
            ("s3cmd --signature-v2 put/get/ls/del", t_s3cmd_v2),
        ]:
            r.check(label, fn, g)
    finally:
        g.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
