#!/usr/bin/env python3
"""End-to-end tests of fencegate's embedded S3 server (no --upstream).

Starts $FENCE_BIN/fencegate (default ./bin) with --data on a temporary
directory and a free 127.0.0.1 port, then drives it with boto3, the aws CLI
and raw HTTP: buckets, objects, metadata, ranges, conditional writes and
reads, ListObjects v1/v2, 404/400/501 answers, the object-level fencing
compare-and-swap. Works with the fencing handler on (writes then carry the
bucket lock's epoch as X-Fencing-Token) or off. Stops fencegate by its PID.
Prints 'N passed, N failed'."""
import base64
import hashlib
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402


class Gate:
    """fencegate serving a fresh data directory on a free loopback port."""

    def __init__(self):
        self.data = harness.TempDir("fencegate-s3local-")
        self.port = harness.free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log = tempfile.TemporaryFile()
        env = dict(os.environ, **harness.CREDS)
        self.proc = subprocess.Popen(
            [os.path.join(harness.BIN, "fencegate"), "--listen", "127.0.0.1:%d" % self.port,
             "--data", self.data.path], stdout=self.log, stderr=subprocess.STDOUT, env=env)
        harness.wait_port(self.port, self.proc)
        self.epochs = {}      # bucket -> epoch of the lock we hold (fencing on)
        self.fencing = None   # decided on the first write

    def close(self):
        rc = harness.stop(self.proc)
        self.log.seek(0)
        tail = self.log.read()[-4000:].decode("utf-8", "replace")
        self.log.close()
        self.data.close()
        return rc, tail

    # --- raw HTTP ------------------------------------------------------
    def http(self, method, path, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    # --- fencing ----------------------------------------------------------
    def token_for(self, bucket):
        """The epoch to send on writes to bucket, or None when fencegate
        does not fence (the fencing handler is not wired)."""
        if self.fencing is None:
            self.detect_fencing()
        if not self.fencing:
            return None
        if bucket not in self.epochs:
            st, _, body = self.http("POST", "/_fence/locks/%s/acquire" % bucket,
                                    json.dumps({"ttlMs": 600000, "holder": "e2e"}).encode(),
                                    {"Content-Type": "application/json"})
            assert st == 200, (st, body)
            self.epochs[bucket] = int(json.loads(body)["epoch"])
        return self.epochs[bucket]

    def detect_fencing(self):
        """An unfenced write to a fresh bucket: 428 means fencing is on."""
        st, _, body = self.http("PUT", "/fencing-probe")
        assert st == 200, (st, body)
        st, _, body = self.http("PUT", "/fencing-probe/probe", b"x")
        assert st in (200, 428), (st, body)
        self.fencing = st == 428

    def wh(self, bucket, extra=None):
        """Headers for a raw write to bucket."""
        h = dict(extra or {})
        t = self.token_for(bucket)
        if t is not None:
            h["X-Fencing-Token"] = str(t)
        return h

    def client(self, bucket=None):
        """A boto3 client; with bucket, every request carries its token."""
        c = boto3.client("s3", endpoint_url=self.url, region_name="us-east-1",
                         aws_access_key_id="test", aws_secret_access_key="test",
                         config=Config(s3={"addressing_style": "path"},
                                       retries={"max_attempts": 1}))
        if bucket is not None:
            t = self.token_for(bucket)
            if t is not None:
                def add_token(request, **kwargs):
                    request.headers["X-Fencing-Token"] = str(t)
                c.meta.events.register("before-sign.s3", add_token)
        return c

    def make_bucket(self, name):
        self.client().create_bucket(Bucket=name)
        return self.client(name)


def code_of(exc):
    return exc.response["Error"]["Code"], exc.response["ResponseMetadata"]["HTTPStatusCode"]


def expect_error(fn, code, status):
    try:
        fn()
    except ClientError as e:
        got = code_of(e)
        assert got == (code, status), "expected %s %d, got %r" % (code, status, got)
        return e
    raise AssertionError("expected %s %d, the call succeeded" % (code, status))


def user_meta(meta):
    """Metadata without what the fencing handler stamps."""
    return {k: v for k, v in meta.items()
            if k not in ("fencing-epoch", "fencing-lock", "fencing-token")}


# --- tests ---------------------------------------------------------------

def t_buckets(g):
    c = g.client()
    c.create_bucket(Bucket="alpha-bucket")
    c.create_bucket(Bucket="beta.bucket-2")
    c.head_bucket(Bucket="alpha-bucket")
    names = [b["Name"] for b in c.list_buckets()["Buckets"]]
    assert "alpha-bucket" in names and "beta.bucket-2" in names, names
    assert all(b["CreationDate"].year >= 2024 for b in c.list_buckets()["Buckets"])
    expect_error(lambda: c.create_bucket(Bucket="alpha-bucket"), "BucketAlreadyOwnedByYou", 409)
    expect_error(lambda: c.head_bucket(Bucket="no-such-bucket"), "404", 404)
    for bad in ("ab", "Upper-Case", "-dash", "a..b", "192.168.1.1", "x" * 64):
        st, _, body = g.http("PUT", "/" + bad)
        if g.fencing and len(bad) > 63 and st == 405:
            pass  # the fencing handler refuses an over-long bucket name itself
        else:
            assert st == 400 and b"InvalidBucketName" in body, (bad, st, body)
        st, _, body = g.http("GET", "/" + bad + "/key")
        assert st == 400 and b"InvalidBucketName" in body, (bad, st, body)
    # an empty bucket can be deleted; afterwards it is gone
    c.create_bucket(Bucket="short-lived")
    st, _, body = g.http("DELETE", "/short-lived")
    assert st == 204, (st, body)
    expect_error(lambda: c.head_bucket(Bucket="short-lived"), "404", 404)
    st, _, body = g.http("DELETE", "/short-lived")
    assert st == 404 and b"NoSuchBucket" in body, (st, body)
    # location: us-east-1 (empty constraint)
    assert c.get_bucket_location(Bucket="alpha-bucket").get("LocationConstraint") in (None, "")


def t_bucket_not_empty(g):
    c = g.make_bucket("full-bucket")
    c.put_object(Bucket="full-bucket", Key="k", Body=b"v")
    st, _, body = g.http("DELETE", "/full-bucket", headers=g.wh("full-bucket"))
    assert st == 409 and b"BucketNotEmpty" in body, (st, body)
    assert c.get_object(Bucket="full-bucket", Key="k")["Body"].read() == b"v"


def t_put_get_head_delete(g):
    c = g.make_bucket("objects")
    body = os.urandom(100000)
    r = c.put_object(Bucket="objects", Key="dir/sub/blob.bin", Body=body)
    assert r["ETag"] == '"%s"' % hashlib.md5(body).hexdigest(), r["ETag"]
    got = c.get_object(Bucket="objects", Key="dir/sub/blob.bin")
    assert got["Body"].read() == body
    assert got["ContentLength"] == len(body)
    assert got["ETag"] == r["ETag"]
    assert got["AcceptRanges"] == "bytes"
    assert got["LastModified"].year >= 2024
    h = c.head_object(Bucket="objects", Key="dir/sub/blob.bin")
    assert h["ContentLength"] == len(body) and h["ETag"] == r["ETag"]
    # overwrite, then empty object
    c.put_object(Bucket="objects", Key="dir/sub/blob.bin", Body=b"small")
    assert c.get_object(Bucket="objects", Key="dir/sub/blob.bin")["Body"].read() == b"small"
    c.put_object(Bucket="objects", Key="empty", Body=b"")
    e = c.get_object(Bucket="objects", Key="empty")
    assert e["ContentLength"] == 0 and e["Body"].read() == b""
    # unicode and odd characters survive the round trip
    for key in ("ünï cödé/ key+plus=eq&amp.txt", "a b/c%d", "tilde~/(paren)"):
        c.put_object(Bucket="objects", Key=key, Body=key.encode())
        assert c.get_object(Bucket="objects", Key=key)["Body"].read() == key.encode(), key
    c.delete_object(Bucket="objects", Key="dir/sub/blob.bin")
    expect_error(lambda: c.get_object(Bucket="objects", Key="dir/sub/blob.bin"), "NoSuchKey", 404)
    expect_error(lambda: c.head_object(Bucket="objects", Key="dir/sub/blob.bin"), "404", 404)
    # deleting a missing key is a 204, as in S3
    c.delete_object(Bucket="objects", Key="never-there")
    # the data directory holds the file itself
    assert os.path.isfile(os.path.join(g.data.path, "objects", "empty"))


def t_metadata_and_content_type(g):
    c = g.make_bucket("meta-bucket")
    c.put_object(Bucket="meta-bucket", Key="doc.json", Body=b"{}", ContentType="application/json",
                 Metadata={"owner": "worker-7", "Mixed-Case": "Value With Spaces"})
    h = c.head_object(Bucket="meta-bucket", Key="doc.json")
    assert h["ContentType"] == "application/json", h["ContentType"]
    assert user_meta(h["Metadata"]) == {"owner": "worker-7", "mixed-case": "Value With Spaces"}, \
        h["Metadata"]
    # what the client wrote, exactly: the proxy's stamp is not shown
    assert h["Metadata"] == {"owner": "worker-7", "mixed-case": "Value With Spaces"}, h["Metadata"]
    if g.fencing:
        assert h["ResponseMetadata"]["HTTPHeaders"]["x-fencing-object-epoch"] == \
            str(g.epochs["meta-bucket"]), h["ResponseMetadata"]["HTTPHeaders"]
    got = c.get_object(Bucket="meta-bucket", Key="doc.json")
    assert got["ContentType"] == "application/json"
    assert user_meta(got["Metadata"]) == user_meta(h["Metadata"])
    # no Content-Type given: the default
    st, hdrs, _ = g.http("PUT", "/meta-bucket/raw", b"abc", g.wh("meta-bucket"))
    assert st == 200, st
    st, hdrs, _ = g.http("GET", "/meta-bucket/raw")
    assert hdrs["content-type"] == "application/octet-stream", hdrs
    # response-content-type overrides on GET
    url = c.generate_presigned_url("get_object", Params={
        "Bucket": "meta-bucket", "Key": "doc.json", "ResponseContentType": "text/plain"})
    path = url[len(g.url):]
    st, hdrs, body = g.http("GET", path)
    assert st == 200 and hdrs["content-type"] == "text/plain" and body == b"{}", (st, hdrs)
    # a replace without metadata drops it
    c.put_object(Bucket="meta-bucket", Key="doc.json", Body=b"[]")
    assert user_meta(c.head_object(Bucket="meta-bucket", Key="doc.json")["Metadata"]) == {}
    # too much metadata is refused
    big = {"m%d" % i: "v" for i in range(20)}
    expect_error(lambda: c.put_object(Bucket="meta-bucket", Key="big", Body=b"x", Metadata=big),
                 "MetadataTooLarge", 400)


def t_ranges(g):
    c = g.make_bucket("range-bucket")
    data = bytes(range(256)) * 4
    c.put_object(Bucket="range-bucket", Key="r", Body=data)
    for rng, lo, hi in (("bytes=0-9", 0, 9), ("bytes=1000-", 1000, 1023), ("bytes=-24", 1000, 1023),
                        ("bytes=10-10", 10, 10), ("bytes=1020-5000", 1020, 1023)):
        r = c.get_object(Bucket="range-bucket", Key="r", Range=rng)
        assert r["ResponseMetadata"]["HTTPStatusCode"] == 206, rng
        assert r["ContentRange"] == "bytes %d-%d/1024" % (lo, hi), (rng, r["ContentRange"])
        assert r["Body"].read() == data[lo:hi + 1], rng
    e = expect_error(lambda: c.get_object(Bucket="range-bucket", Key="r", Range="bytes=1024-"),
                     "InvalidRange", 416)
    st, hdrs, _ = g.http("GET", "/range-bucket/r", headers={"Range": "bytes=5000-6000"})
    assert st == 416 and hdrs.get("content-range") == "bytes */1024", (st, hdrs)
    # a Range this server does not serve (several ranges) is ignored: 200
    st, _, body = g.http("GET", "/range-bucket/r", headers={"Range": "bytes=0-1,5-6"})
    assert st == 200 and body == data, st
    del e


def t_conditional_writes(g):
    c = g.make_bucket("cond-bucket")
    r1 = c.put_object(Bucket="cond-bucket", Key="once", Body=b"first", IfNoneMatch="*")
    expect_error(lambda: c.put_object(Bucket="cond-bucket", Key="once", Body=b"second",
                                      IfNoneMatch="*"), "PreconditionFailed", 412)
    assert c.get_object(Bucket="cond-bucket", Key="once")["Body"].read() == b"first"
    # If-Match: only the current version is replaced
    r2 = c.put_object(Bucket="cond-bucket", Key="once", Body=b"second", IfMatch=r1["ETag"])
    expect_error(lambda: c.put_object(Bucket="cond-bucket", Key="once", Body=b"third",
                                      IfMatch=r1["ETag"]), "PreconditionFailed", 412)
    assert c.get_object(Bucket="cond-bucket", Key="once")["Body"].read() == b"second"
    expect_error(lambda: c.put_object(Bucket="cond-bucket", Key="missing", Body=b"x",
                                      IfMatch=r1["ETag"]), "NoSuchKey", 404)
    # unquoted If-Match works as well (raw)
    st, _, _ = g.http("PUT", "/cond-bucket/once", b"fourth",
                      g.wh("cond-bucket", {"If-Match": r2["ETag"].strip('"')}))
    assert st == 200, st
    # If-None-Match with an ETag on PUT is not S3: 501
    st, _, body = g.http("PUT", "/cond-bucket/once", b"x",
                         g.wh("cond-bucket", {"If-None-Match": r2["ETag"]}))
    assert st == 501 and b"NotImplemented" in body, (st, body)
    # DELETE honours If-Match
    cur = c.head_object(Bucket="cond-bucket", Key="once")["ETag"]
    st, _, body = g.http("DELETE", "/cond-bucket/once", headers=g.wh("cond-bucket", {"If-Match": r1["ETag"]}))
    assert st == 412, (st, body)
    st, _, _ = g.http("DELETE", "/cond-bucket/once", headers=g.wh("cond-bucket", {"If-Match": cur}))
    assert st == 204, st
    st, _, body = g.http("DELETE", "/cond-bucket/once", headers=g.wh("cond-bucket", {"If-Match": cur}))
    assert st == 404 and b"NoSuchKey" in body, (st, body)
    # Content-MD5
    good = base64.b64encode(hashlib.md5(b"digest me").digest()).decode()
    st, _, _ = g.http("PUT", "/cond-bucket/md5", b"digest me", g.wh("cond-bucket", {"Content-MD5": good}))
    assert st == 200, st
    st, _, body = g.http("PUT", "/cond-bucket/md5", b"digest mE", g.wh("cond-bucket", {"Content-MD5": good}))
    assert st == 400 and b"BadDigest" in body, (st, body)
    assert c.get_object(Bucket="cond-bucket", Key="md5")["Body"].read() == b"digest me"


def t_concurrent_creates(g):
    c = g.make_bucket("race-bucket")
    results = []

    def create(i):
        cl = g.client("race-bucket")
        try:
            cl.put_object(Bucket="race-bucket", Key="winner", Body=str(i).encode(), IfNoneMatch="*")
            results.append(("ok", i))
        except ClientError as e:
            results.append(code_of(e))

    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    wins = [r for r in results if r[0] == "ok"]
    assert len(results) == 8 and len(wins) == 1, results
    assert all(r == ("PreconditionFailed", 412) for r in results if r[0] != "ok"), results
    assert c.get_object(Bucket="race-bucket", Key="winner")["Body"].read() == str(wins[0][1]).encode()


def t_conditional_reads(g):
    c = g.make_bucket("read-bucket")
    etag = c.put_object(Bucket="read-bucket", Key="k", Body=b"content")["ETag"]
    st, hdrs, body = g.http("GET", "/read-bucket/k", headers={"If-None-Match": etag})
    assert st == 304 and body == b"" and hdrs["etag"] == etag, (st, hdrs)
    st, _, body = g.http("GET", "/read-bucket/k", headers={"If-None-Match": '"other"'})
    assert st == 200 and body == b"content", st
    st, _, body = g.http("GET", "/read-bucket/k", headers={"If-Match": '"other"'})
    assert st == 412 and b"PreconditionFailed" in body, (st, body)
    st, _, body = g.http("GET", "/read-bucket/k", headers={"If-Match": etag})
    assert st == 200 and body == b"content", st
    lm = c.head_object(Bucket="read-bucket", Key="k")["ResponseMetadata"]["HTTPHeaders"]["last-modified"]
    st, _, _ = g.http("GET", "/read-bucket/k", headers={"If-Modified-Since": lm})
    assert st == 304, st
    st, _, _ = g.http("HEAD", "/read-bucket/k", headers={"If-Modified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"})
    assert st == 200, st
    st, _, _ = g.http("GET", "/read-bucket/k", headers={"If-Unmodified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"})
    assert st == 412, st
    expect_error(lambda: c.get_object(Bucket="read-bucket", Key="k", IfNoneMatch=etag), "304", 304)


def t_list_v2(g):
    c = g.make_bucket("list-bucket")
    keys = ["a.txt", "b/1", "b/2", "b/c/3", "c d/e", "d", "e/f/g", "e/h", "z"]
    for k in keys:
        c.put_object(Bucket="list-bucket", Key=k, Body=k.encode())
    # lock files and epoch marks of the fencing handler live in the bucket
    lock_prefix = ("locks/", "fencing-marks/")
    r = c.list_objects_v2(Bucket="list-bucket")
    got = [o["Key"] for o in r["Contents"] if not o["Key"].startswith(lock_prefix)]
    assert got == keys, got
    o = [x for x in r["Contents"] if x["Key"] == "b/1"][0]
    assert o["Size"] == 3 and o["StorageClass"] == "STANDARD" and o["ETag"].startswith('"')
    assert r["KeyCount"] == len(r["Contents"]) and r["IsTruncated"] is False
    # prefix + delimiter
    r = c.list_objects_v2(Bucket="list-bucket", Prefix="b/", Delimiter="/")
    assert [o["Key"] for o in r["Contents"]] == ["b/1", "b/2"], r
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["b/c/"], r
    assert r["KeyCount"] == 3
    r = c.list_objects_v2(Bucket="list-bucket", Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"] if p["Prefix"] not in lock_prefix] == \
        ["b/", "c d/", "e/"], r["CommonPrefixes"]
    assert [o["Key"] for o in r["Contents"]] == ["a.txt", "d", "z"]
    # pagination: the paginator with pages of 2, delimiter and without
    pages = list(c.get_paginator("list_objects_v2").paginate(
        Bucket="list-bucket", Delimiter="/", PaginationConfig={"PageSize": 2}))
    items = []
    for p in pages:
        assert p["KeyCount"] <= 2
        items += [o["Key"] for o in p.get("Contents", [])] + [x["Prefix"] for x in p.get("CommonPrefixes", [])]
    assert sorted(i for i in items if i not in lock_prefix) == ["a.txt", "b/", "c d/", "d", "e/", "z"], items
    assert len(items) == len(set(items)), items
    assert len(pages) >= 3 and pages[0]["IsTruncated"] and "NextContinuationToken" in pages[0]
    pages = list(c.get_paginator("list_objects_v2").paginate(
        Bucket="list-bucket", Prefix="b", PaginationConfig={"PageSize": 2}))
    assert [o["Key"] for p in pages for o in p.get("Contents", [])] == ["b/1", "b/2", "b/c/3"]
    assert len(pages) == 2
    # start-after, max-keys=0, url encoding
    r = c.list_objects_v2(Bucket="list-bucket", StartAfter="d", Prefix="")
    assert [o["Key"] for o in r["Contents"] if not o["Key"].startswith(lock_prefix)] == \
        ["e/f/g", "e/h", "z"]
    r = c.list_objects_v2(Bucket="list-bucket", MaxKeys=0)
    assert r["KeyCount"] == 0 and "Contents" not in r
    st, _, body = g.http("GET", "/list-bucket?list-type=2&prefix=c%20&encoding-type=url")
    assert st == 200 and b"<Key>c%20d/e</Key>" in body and b"<EncodingType>url</EncodingType>" in body, body
    # exact XML shape
    st, hdrs, body = g.http("GET", "/list-bucket?list-type=2&prefix=b/&max-keys=1")
    assert hdrs["content-type"] == "application/xml"
    text = body.decode()
    assert '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">' in text, text
    assert "<KeyCount>1</KeyCount><MaxKeys>1</MaxKeys><IsTruncated>true</IsTruncated>" in text, text
    assert "<NextContinuationToken>" in text and "<LastModified>" in text
    lm = text.split("<LastModified>")[1].split("</LastModified>")[0]
    assert len(lm) == 24 and lm.endswith(".000Z"), lm
    st, _, body = g.http("GET", "/list-bucket?list-type=2&continuation-token=%21%21bad")
    assert st == 400, (st, body)


def t_list_v1(g):
    c = g.make_bucket("listv1-bucket")
    for k in ("k1", "k2", "k3", "p/x", "p/y"):
        c.put_object(Bucket="listv1-bucket", Key=k, Body=b"1")
    r = c.list_objects(Bucket="listv1-bucket", Prefix="k", MaxKeys=2)
    assert [o["Key"] for o in r["Contents"]] == ["k1", "k2"] and r["IsTruncated"] is True
    r = c.list_objects(Bucket="listv1-bucket", Prefix="k", Marker="k2")
    assert [o["Key"] for o in r["Contents"]] == ["k3"] and r["IsTruncated"] is False
    r = c.list_objects(Bucket="listv1-bucket", Delimiter="/", Prefix="", Marker="k3")
    assert [p["Prefix"] for p in r.get("CommonPrefixes", [])
            if p["Prefix"] not in ("locks/", "fencing-marks/")] == ["p/"], r
    assert "Contents" not in r, r
    pages = list(c.get_paginator("list_objects").paginate(
        Bucket="listv1-bucket", Prefix="k", PaginationConfig={"PageSize": 1}))
    assert [o["Key"] for p in pages for o in p.get("Contents", [])] == ["k1", "k2", "k3"]
    st, _, body = g.http("GET", "/listv1-bucket?prefix=p/&delimiter=/&max-keys=1")
    assert b"<Marker></Marker>" in body and b"<NextMarker>p/x</NextMarker>" in body, body


def t_not_found(g):
    c = g.client()
    expect_error(lambda: c.get_object(Bucket="nope-bucket", Key="k"), "NoSuchBucket", 404)
    expect_error(lambda: c.list_objects_v2(Bucket="nope-bucket"), "NoSuchBucket", 404)
    if not g.fencing:
        # (with fencing, taking the lock that a write needs creates the
        # bucket's directory: the lock lives in the bucket)
        st, _, body = g.http("PUT", "/nope-bucket/k", b"x")
        assert st == 404 and b"NoSuchBucket" in body, (st, body)
        st, _, body = g.http("DELETE", "/nope-bucket/k")
        assert st == 404 and b"NoSuchBucket" in body, (st, body)
    g.make_bucket("found-bucket")
    expect_error(lambda: c.get_object(Bucket="found-bucket", Key="missing"), "NoSuchKey", 404)
    # HEAD errors carry no body but the status
    st, _, body = g.http("HEAD", "/found-bucket/missing")
    assert st == 404 and body == b"", st


def t_not_implemented(g):
    c = g.make_bucket("nimp-bucket")
    c.put_object(Bucket="nimp-bucket", Key="src", Body=b"x")
    for fn in (lambda: c.get_object_tagging(Bucket="nimp-bucket", Key="src"),
               lambda: c.get_bucket_versioning(Bucket="nimp-bucket"),
               lambda: c.put_object_acl(Bucket="nimp-bucket", Key="src", ACL="private"),
               lambda: c.get_object(Bucket="nimp-bucket", Key="src", VersionId="v1")):
        e = expect_error(fn, "NotImplemented", 501)
        msg = e.response["Error"]["Message"]
        assert "embedded" in msg and "--upstream" in msg, msg


def t_any_keys(g):
    """Every S3 key is stored (dot and empty segments, a trailing '/',
    control bytes, the store's own directory name, 1024 bytes) and comes
    back from GET and ListObjectsV2, inside the bucket directory; only NUL
    and keys over 1024 bytes are refused."""
    c = g.make_bucket("keys-bucket")
    h = g.wh("keys-bucket")
    keys = {"a/%2E%2E/b": "a/../b", "a/./b": "a/./b", "ctl%01byte": "ctl\x01byte",
            ".fencegate/x": ".fencegate/x", "folder/": "folder/", "a//b": "a//b",
            "a": "a", "a/b": "a/b", "%2E%2E": "..", "k" * 1024: "k" * 1024}
    for raw, key in keys.items():
        st, _, body = g.http("PUT", "/keys-bucket/" + raw, key.encode(), h)
        assert st == 200, (raw, st, body)
    for raw, key in keys.items():
        st, _, body = g.http("GET", "/keys-bucket/" + raw)
        assert st == 200 and body == key.encode(), (raw, st, body)
    listed = [o["Key"] for o in c.list_objects_v2(Bucket="keys-bucket",
                                                   EncodingType="url")["Contents"]]
    listed = [urllib.parse.unquote(k) for k in listed
              if not k.startswith(("locks/", "fencing-marks/"))]
    assert listed == sorted(keys.values(), key=lambda k: k.encode()), listed
    for path, code in (("/keys-bucket/nul%00byte", b"InvalidURI"),
                       ("/keys-bucket/" + "k" * 1025, b"KeyTooLongError")):
        st, _, body = g.http("PUT", path, b"x", h)
        assert st == 400 and code in body, (path, st, body)
        assert b"<Message>" in body and b"<Message></Message>" not in body, body
    # a bucket directory that is a symlink is no bucket
    os.symlink(os.path.join(g.data.path, "keys-bucket"), os.path.join(g.data.path, "link-bucket"))
    st, _, body = g.http("GET", "/link-bucket/a")
    assert st == 404 and b"NoSuchBucket" in body, (st, body)
    st, _, body = g.http("PUT", "/link-bucket/new", b"x", {"X-Fencing-Token": "1"})
    assert st >= 400 and not os.path.exists(
        os.path.join(g.data.path, "keys-bucket", "new")), (st, body)
    # nothing escaped the bucket directory
    assert not os.path.exists(os.path.join(g.data.path, "keys-bucket", "b"))
    assert not os.path.exists(os.path.join(g.data.path, "b"))
    assert os.path.isfile(os.path.join(g.data.path, "keys-bucket", "a", "%2E.", "b"))
    assert os.path.isfile(os.path.join(g.data.path, "keys-bucket", "a", "%@"))


def t_too_large(g):
    g.make_bucket("large-bucket")
    # announced bigger than S3's 5 GiB: refused before the body is read
    conn = http.client.HTTPConnection("127.0.0.1", g.port, timeout=30)
    try:
        conn.putrequest("PUT", "/large-bucket/huge")
        for k, v in g.wh("large-bucket", {"Content-Length": str(5 * 1024 ** 3 + 1),
                                          "Expect": "100-continue"}).items():
            conn.putheader(k, v)
        conn.endheaders()
        r = conn.getresponse()
        body = r.read()
        assert r.status == 413 and b"EntityTooLarge" in body, (r.status, body)
    finally:
        conn.close()
    st, _, _ = g.http("HEAD", "/large-bucket/huge")
    assert st == 404, st


def peak_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def t_streamed(g):
    """A 200 MiB PUT (over the 64 MiB that buffered bodies may have) goes
    to disk as it arrives and comes back from the file: the server's peak
    memory stays far below the object's size."""
    g.make_bucket("stream-bucket")
    size, chunk = 200 * 1024 * 1024, os.urandom(1024 * 1024)
    md5 = hashlib.md5()
    conn = http.client.HTTPConnection("127.0.0.1", g.port, timeout=120)
    try:
        conn.putrequest("PUT", "/stream-bucket/big")
        for k, v in g.wh("stream-bucket", {"Content-Length": str(size),
                                           "Content-Type": "application/octet-stream"}).items():
            conn.putheader(k, v)
        conn.endheaders()
        for _ in range(size // len(chunk)):
            conn.send(chunk)
            md5.update(chunk)
        r = conn.getresponse()
        body = r.read()
        assert r.status == 200, (r.status, body)
        assert r.getheader("ETag") == '"%s"' % md5.hexdigest(), r.getheader("ETag")
    finally:
        conn.close()
    assert os.path.getsize(os.path.join(g.data.path, "stream-bucket", "big")) == size
    back = hashlib.md5()
    conn = http.client.HTTPConnection("127.0.0.1", g.port, timeout=120)
    try:
        conn.request("GET", "/stream-bucket/big")
        r = conn.getresponse()
        assert r.status == 200 and int(r.getheader("Content-Length")) == size
        while True:
            b = r.read(1 << 20)
            if not b:
                break
            back.update(b)
    finally:
        conn.close()
    assert back.hexdigest() == md5.hexdigest()
    peak = peak_rss_kib(g.proc.pid)
    with open("/proc/%d/maps" % g.proc.pid) as f:
        sanitized = "libasan" in f.read()  # ASan's shadow memory is not ours
    assert sanitized or peak < 100 * 1024, "peak RSS %d KiB for a 200 MiB object" % peak


def chunked_put(g, key, size, crc_ok=True, mode="STREAMING-UNSIGNED-PAYLOAD-TRAILER"):
    """PUT key with an aws-chunked body of size random bytes in 1 MiB chunks,
    in mode (x-amz-content-sha256): with a CRC32 trailer (wrong unless
    crc_ok) unless the mode has none; signed modes carry chunk signatures
    (nobody checks them here: authentication is off). Returns (status,
    body, md5 hex)."""
    import zlib
    chunk, crc, md5 = os.urandom(1024 * 1024), 0, hashlib.md5()
    signed = mode.startswith("STREAMING-AWS4-HMAC-SHA256")
    trailer = mode.endswith("-TRAILER")
    sig = b";chunk-signature=" + b"ab" * 32 if signed else b""
    conn = http.client.HTTPConnection("127.0.0.1", g.port, timeout=120)
    try:
        conn.putrequest("PUT", "/stream-bucket/" + key)
        hdrs = {"Content-Encoding": "aws-chunked", "Transfer-Encoding": "chunked",
                "x-amz-content-sha256": mode, "x-amz-decoded-content-length": str(size)}
        if trailer:
            hdrs["x-amz-trailer"] = "x-amz-checksum-crc32"
        for k, v in g.wh("stream-bucket", hdrs).items():
            conn.putheader(k, v)
        conn.endheaders()
        sent = 0
        while sent < size:
            piece = chunk[:min(len(chunk), size - sent)]
            crc = zlib.crc32(piece, crc)
            md5.update(piece)
            enc = b"%x" % len(piece) + sig + b"\r\n" + piece + b"\r\n"
            conn.send(b"%x\r\n" % len(enc) + enc + b"\r\n")
            sent += len(piece)
        if not crc_ok:
            crc ^= 1
        end = b"0" + sig + b"\r\n"
        if trailer:
            end += b"x-amz-checksum-crc32:" + base64.b64encode(crc.to_bytes(4, "big")) + b"\r\n"
            if signed:
                end += b"x-amz-trailer-signature:" + b"cd" * 32 + b"\r\n"
        end += b"\r\n"
        conn.send(b"%x\r\n" % len(end) + end + b"\r\n0\r\n\r\n")
        r = conn.getresponse()
        return r.status, r.read(), md5.hexdigest()
    finally:
        conn.close()


def t_streamed_chunked(g):
    """An aws-chunked body, with unsigned chunks (what SDKs send over https)
    or signed ones (over http), is decoded on its way to disk, its CRC32
    trailer checked: 66-70 MiB, over the 64 MiB a buffered body may have; a
    wrong checksum stores nothing."""
    st, body, md5 = chunked_put(g, "chunked", 70 * 1024 * 1024)
    assert st == 200, (st, body)
    path = os.path.join(g.data.path, "stream-bucket", "chunked")
    with open(path, "rb") as f:
        assert hashlib.md5(f.read()).hexdigest() == md5
    st, body, _ = chunked_put(g, "bad-crc", 3 * 1024 * 1024 + 5, crc_ok=False)
    assert st == 400 and b"BadDigest" in body, (st, body)
    assert not os.path.exists(os.path.join(g.data.path, "stream-bucket", "bad-crc"))
    # signed chunks (what SDKs send over http), with and without a trailer:
    # streamed the same way, no longer held in memory up to 64 MiB
    for key, mode in (("signed", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
                      ("signed-trailer", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER")):
        st, body, md5 = chunked_put(g, key, 66 * 1024 * 1024 + 3, mode=mode)
        assert st == 200, (key, st, body)
        with open(os.path.join(g.data.path, "stream-bucket", key), "rb") as f:
            assert hashlib.md5(f.read()).hexdigest() == md5, key
    st, body, _ = chunked_put(g, "signed-bad-crc", 2 * 1024 * 1024, crc_ok=False,
                              mode="STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER")
    assert st == 400 and b"BadDigest" in body, (st, body)
    assert not os.path.exists(os.path.join(g.data.path, "stream-bucket", "signed-bad-crc"))


def t_aws_cli(g):
    g.make_bucket("cli-bucket")
    env = dict(os.environ, **harness.CREDS)
    env.pop("AWS_CA_BUNDLE", None)
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
        f.write(b"hello from the aws cli\n")
        src = f.name
    try:
        cmd = ["aws", "--endpoint-url", g.url, "s3", "cp", src, "s3://cli-bucket/up/hello.txt"]
        t = g.token_for("cli-bucket")
        if t is not None:
            cmd += ["--metadata", "fencing-token=%d" % t]
        r = harness.run(cmd, env=env)
        assert r.returncode == 0, (r.stdout, r.stderr)
        r = harness.run(["aws", "--endpoint-url", g.url, "s3", "ls", "s3://cli-bucket/up/"], env=env)
        assert r.returncode == 0 and "hello.txt" in r.stdout and " 23 " in r.stdout, (r.stdout, r.stderr)
        r = harness.run(["aws", "--endpoint-url", g.url, "s3", "ls"], env=env)
        assert r.returncode == 0 and "cli-bucket" in r.stdout, (r.stdout, r.stderr)
        r = harness.run(["aws", "--endpoint-url", g.url, "s3", "cp", "s3://cli-bucket/up/hello.txt", "-"],
                        env=env)
        assert r.returncode == 0 and r.stdout == "hello from the aws cli\n", (r.stdout, r.stderr)
        h = g.client().head_object(Bucket="cli-bucket", Key="up/hello.txt")
        assert h["ContentType"] == "text/plain", h["ContentType"]
    finally:
        os.unlink(src)


def t_fencing_cas(g):
    """Stale epochs never overwrite an object written under a newer one."""
    c = g.make_bucket("fence-bucket")
    if not g.fencing:
        # fencing handler not wired: drive s3local's contract headers directly
        st, _, _ = g.http("PUT", "/fence-bucket/obj", b"epoch 5", {"x-amz-meta-fencing-epoch": "5"})
        assert st == 200, st
        st, hdrs, body = g.http("PUT", "/fence-bucket/obj", b"epoch 3", {"x-amz-meta-fencing-epoch": "3"})
        assert st == 409 and b"FencingTokenStale" in body, (st, body)
        assert hdrs.get("x-fencing-epoch") == "5", hdrs
        assert b"<CurrentEpoch>5</CurrentEpoch>" in body, body
        st, _, _ = g.http("PUT", "/fence-bucket/obj", b"epoch 6", {"x-amz-meta-fencing-epoch": "6"})
        assert st == 200, st
        st, hdrs, _ = g.http("DELETE", "/fence-bucket/obj", headers={"X-Fencing-Epoch-Check": "4"})
        assert st == 409 and hdrs.get("x-fencing-epoch") == "6", (st, hdrs)
        # the client's own conditions combine with the proxy's
        st, _, _ = g.http("PUT", "/fence-bucket/obj", b"x",
                          {"x-amz-meta-fencing-epoch": "7", "If-None-Match": "*"})
        assert st == 412, st
        st, _, _ = g.http("PUT", "/fence-bucket/obj", b"x",
                          {"x-amz-meta-fencing-epoch": "7", "If-Match": '"0123"'})
        assert st == 412, st
        st, _, _ = g.http("PUT", "/fence-bucket/new", b"x",
                          {"x-amz-meta-fencing-epoch": "7", "If-Match": '"0123"'})
        assert st == 404, st
        st, _, _ = g.http("PUT", "/fence-bucket/obj", b"x", {"x-amz-meta-fencing-epoch": "junk"})
        assert st == 400, st
        assert g.client().get_object(Bucket="fence-bucket", Key="obj")["Body"].read() == b"epoch 6"
        st, _, _ = g.http("DELETE", "/fence-bucket/obj", headers={"X-Fencing-Epoch-Check": "6"})
        assert st == 204, st
        return
    old = g.epochs["fence-bucket"]
    c.put_object(Bucket="fence-bucket", Key="obj", Body=b"old epoch")
    st, _, body = g.http("POST", "/_fence/locks/fence-bucket/release",
                         json.dumps({"epoch": old}).encode(), {"Content-Type": "application/json"})
    assert st == 200, (st, body)
    del g.epochs["fence-bucket"]
    new = g.token_for("fence-bucket")
    assert new > old
    g.client("fence-bucket").put_object(Bucket="fence-bucket", Key="obj", Body=b"new epoch")
    st, hdrs, body = g.http("PUT", "/fence-bucket/obj", b"zombie", {"X-Fencing-Token": str(old)})
    assert st == 409 and b"FencingTokenStale" in body, (st, body)
    assert g.client().get_object(Bucket="fence-bucket", Key="obj")["Body"].read() == b"new epoch"
    h = g.client().head_object(Bucket="fence-bucket", Key="obj")
    assert h["ResponseMetadata"]["HTTPHeaders"]["x-fencing-object-epoch"] == str(new), h


def main():
    if not os.access(os.path.join(harness.BIN, "fencegate"), os.X_OK):
        print("test_s3local: %s/fencegate is not built" % harness.BIN)
        print("test_s3local: 0 passed, 1 failed")
        return 1
    runner = harness.Runner("test_s3local")
    g = Gate()
    try:
        runner.check("detect the fencing handler", g.detect_fencing)
        for name, fn in (("buckets", t_buckets),
                         ("put/get/head/delete", t_put_get_head_delete),
                         ("bucket not empty", t_bucket_not_empty),
                         ("metadata and content type", t_metadata_and_content_type),
                         ("range gets", t_ranges),
                         ("conditional writes", t_conditional_writes),
                         ("concurrent creates: one winner", t_concurrent_creates),
                         ("conditional reads", t_conditional_reads),
                         ("list v2", t_list_v2),
                         ("list v1", t_list_v1),
                         ("404s", t_not_found),
                         ("501 for what the embedded store lacks", t_not_implemented),
                         ("any key", t_any_keys),
                         ("too large", t_too_large),
                         ("bodies streamed to and from disk", t_streamed),
                         ("aws-chunked bodies streamed", t_streamed_chunked),
                         ("aws cli cp and ls", t_aws_cli),
                         ("fencing compare-and-swap", t_fencing_cas)):
            runner.check(name, fn, g)
        runner.check("still alive", lambda: None if g.proc.poll() is None else
                     (_ for _ in ()).throw(AssertionError("fencegate exited")))
    finally:
        rc, tail = g.close()
        if runner.failed or os.environ.get("FENCE_DEBUG"):
            print("fencegate output (tail):\n" + tail)
    print("fencing handler active: %s" % g.fencing)
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
