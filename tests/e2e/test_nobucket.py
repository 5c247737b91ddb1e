#!/usr/bin/env python3
"""End-to-end: a bucket that does not exist, in S3 mode against moto.

A fenced write to a missing bucket used to answer 503 ServiceUnavailable
("cannot read lock": the lock's first load fails on the missing bucket),
which every S3 SDK retries; S3 itself answers 404 NoSuchBucket. Now the
proxy relays that: boto3 sees NoSuchBucket after one request, raw PUT,
DELETE and CreateMultipartUpload get 404 NoSuchBucket, and the lock API's
acquire on a bucket-named lock does too. Once the bucket exists the same
lock loads and writes go through. A lock whose own store is a missing
bucket the client never named (a config) stays 503: that bucket is the
operator's to fix, and nothing is forwarded either way.

The embedded store answers the same: its lock API used to create the
bucket directory of a lock nobody had created a bucket for; now acquire
and status on such a lock are 404 NoSuchBucket and nothing appears in the
data directory, until the bucket is created (PUT /BUCKET)."""
import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

MISSING = "nobucket-e2e"


def call(g, method, path, body=None, headers=None):
    req = urllib.request.Request(g.url + path, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def s3_code(body):
    s = body.decode("utf-8", "replace")
    return s.split("<Code>", 1)[1].split("</Code>", 1)[0] if "<Code>" in s else None


def boto(g):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=g.url, region_name="us-east-1",
                        aws_access_key_id="test", aws_secret_access_key="test",
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 4, "mode": "standard"}))


def puts_logged(g, path):
    lines = [json.loads(x) for x in g.stderr().splitlines() if x.startswith("{")]
    return [e for e in lines if e["method"] == "PUT" and e["path"] == path]


def t_boto3_no_retry(g):
    from botocore.exceptions import ClientError
    try:
        boto(g).put_object(Bucket=MISSING, Key="boto.txt", Body=b"x",
                           Metadata={"fencing-token": "1"})
    except ClientError as e:
        assert e.response["Error"]["Code"] == "NoSuchBucket", e.response
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404, e.response
    else:
        raise AssertionError("put_object into a missing bucket succeeded")
    sent = harness.wait_for("the PUT in the access log",
                            lambda: puts_logged(g, "/%s/boto.txt" % MISSING))
    assert len(sent) == 1, "the SDK retried: %d PUTs" % len(sent)
    assert sent[0]["status"] == 404 and sent[0]["upstreamStatus"] is None, sent[0]


def t_raw_writes(g):
    token = {"X-Fencing-Token": "1", "Content-Type": "application/octet-stream"}
    for method, path, body in (("PUT", "/%s/raw.txt" % MISSING, b"raw"),
                               ("DELETE", "/%s/raw.txt" % MISSING, None),
                               ("POST", "/%s/mpu.bin?uploads" % MISSING, b"")):
        st, resp = call(g, method, path, body, token)
        assert st == 404 and s3_code(resp) == "NoSuchBucket", (method, st, resp)
    st, resp = call(g, "GET", "/%s/raw.txt" % MISSING)  # reads were relayed before too
    assert st == 404 and s3_code(resp) == "NoSuchBucket", (st, resp)


def t_lock_api(g):
    st, resp = call(g, "POST", "/_fence/locks/%s/acquire" % MISSING, b'{"ttlMs":30000}')
    assert st == 404, (st, resp)
    assert json.loads(resp)["error"] == "NoSuchBucket", resp


def t_bucket_created_later(g, moto):
    moto.create_bucket(MISSING)
    st, resp = call(g, "POST", "/_fence/locks/%s/acquire" % MISSING, b'{"ttlMs":30000}')
    assert st == 200, (st, resp)
    epoch = json.loads(resp)["epoch"]
    st, resp = call(g, "PUT", "/%s/later.txt" % MISSING, b"later",
                    {"X-Fencing-Token": str(epoch), "Content-Type": "application/octet-stream"})
    assert st == 200, (st, resp)
    got = moto.client().get_object(Bucket=MISSING, Key="later.txt")["Body"].read()
    assert got == b"later", got


def t_operator_bucket_stays_503(moto):
    moto.create_bucket("nobucket-data")
    g = harness.Fencegate(data=False, config={
        "upstream": {"endpoint": moto.url},
        "locks": [{"name": "inv", "store": "s3://nobucket-locks-missing",
                   "prefix": "locks/inv/lock-"}],
        "routes": [{"prefix": "/nobucket-data/", "lock": "inv"}]})
    try:
        st, resp = call(g, "PUT", "/nobucket-data/x.txt", b"x",
                        {"X-Fencing-Token": "1", "Content-Type": "application/octet-stream"})
        assert st == 503 and s3_code(resp) == "ServiceUnavailable", (st, resp)
        objs = moto.client().list_objects_v2(Bucket="nobucket-data").get("Contents", [])
        assert objs == [], objs
    finally:
        g.close()


def t_embedded():
    g = harness.Fencegate("--access-log", "off")
    try:
        before = sorted(os.listdir(g.data))
        for method, path, body in (("POST", "/_fence/locks/%s/acquire" % MISSING, b'{"ttlMs":30000}'),
                                   ("GET", "/_fence/locks/%s" % MISSING, None)):
            st, resp = call(g, method, path, body)
            assert st == 404 and json.loads(resp)["error"] == "NoSuchBucket", (path, st, resp)
        st, resp = call(g, "PUT", "/%s/x.txt" % MISSING, b"x", {"X-Fencing-Token": "1"})
        assert st == 404 and s3_code(resp) == "NoSuchBucket", (st, resp)
        assert sorted(os.listdir(g.data)) == before, (before, os.listdir(g.data))
        assert not os.path.exists(os.path.join(g.data, MISSING))
        st, resp = call(g, "PUT", "/" + MISSING)
        assert st == 200, (st, resp)
        st, resp = call(g, "POST", "/_fence/locks/%s/acquire" % MISSING, b'{"ttlMs":30000}')
        assert st == 200 and json.loads(resp)["epoch"] == 1, (st, resp)
        st, resp = call(g, "PUT", "/%s/x.txt" % MISSING, b"x", {"X-Fencing-Token": "1"})
        assert st == 200, (st, resp)
        with open(os.path.join(g.data, MISSING, "x.txt"), "rb") as f:
            assert f.read() == b"x"
    finally:
        g.close()


def main():
    r = harness.Runner("e2e nobucket")
    moto = harness.Moto()
    try:
        g = harness.Fencegate("--upstream", moto.url, data=False)
        try:
            r.check("boto3 put_object: NoSuchBucket after one request, no retries",
                    t_boto3_no_retry, g)
            r.check("PUT, DELETE, CreateMultipartUpload: 404 NoSuchBucket", t_raw_writes, g)
            r.check("lock API acquire: 404 NoSuchBucket", t_lock_api, g)
            r.check("bucket created later: the lock loads, the write lands",
                    t_bucket_created_later, g, moto)
        finally:
            g.close()
        r.check("a missing lock bucket the client did not name: 503, nothing forwarded",
                t_operator_bucket_stays_503, moto)
        r.check("embedded store: the lock API answers NoSuchBucket and creates nothing",
                t_embedded)
    finally:
        moto.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
