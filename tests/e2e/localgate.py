"""Helpers the embedded-store tests (test_local_*.py) share: a boto3 client
that sends X-Fencing-Token on every request, the lock HTTP API, the S3
error of a failing call, and what the data directory holds. Standard
library and boto3 only; no test runs from here."""
import json
import os
import sys
import urllib.error
import urllib.request

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError


def client(url, token=None):
    """A path-style boto3 client; with token, X-Fencing-Token on every
    request (added before signing)."""
    c = boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                     aws_access_key_id="test", aws_secret_access_key="test",
                     config=Config(s3={"addressing_style": "path"},
                                   retries={"max_attempts": 1}))
    if token is not None:
        def add(request, **kwargs):
            request.headers["X-Fencing-Token"] = str(token)
        c.meta.events.register("before-sign.s3", add)
    return c


def lockapi(g, bucket, op, **body):
    """(status, JSON answer) of POST /_fence/locks/BUCKET/OP."""
    req = urllib.request.Request("%s/_fence/locks/%s/%s" % (g.url, bucket, op),
                                 data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def acquire(g, bucket, holder="local-e2e"):
    st, body = lockapi(g, bucket, "acquire", ttlMs=600000, holder=holder)
    assert st == 200, (st, body)
    return body["epoch"]


def error_of(fn):
    """(S3 error code, HTTP status) of a call that must fail."""
    try:
        fn()
    except ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    raise AssertionError("the call succeeded")


def on_disk(g, bucket, key):
    """The bytes of key's file in the data directory, None when absent."""
    p = os.path.join(g.data, bucket, key)
    if not os.path.isfile(p):
        return None
    with open(p, "rb") as f:
        return f.read()


def disk_keys(g, bucket):
    """Every object file of bucket (not the store's own, not lock files)."""
    root, out = os.path.join(g.data, bucket), []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x != ".fencegate" and not (d == root and x == "locks")]
        out += [os.path.relpath(os.path.join(d, f), root) for f in files]
    return sorted(out)


def main(name, shared, solo=(), gate_args=(), gate_config=None):
    """Runs shared tests (label, fn(g)) on one fencegate over the embedded
    default (or gate_config), then solo tests (label, fn()) that start
    their own; prints 'N passed, N failed' and returns the exit status."""
    import harness
    if not os.path.exists(os.path.join(harness.BIN, "fencegate")):
        print("%s: %s/fencegate is not built" % (name, harness.BIN))
        print("%s: 0 passed, 1 failed" % name)
        return 1
    runner = harness.Runner(name)
    g = harness.Fencegate(*gate_args, config=gate_config)
    try:
        for label, fn in shared:
            runner.check(label, fn, g)
        runner.check("still alive", lambda: None if g.alive() else
                     (_ for _ in ()).throw(AssertionError("fencegate exited")))
        if runner.failed:
            print(g.stderr()[-4000:])
    finally:
        g.close()
    for label, fn in solo:
        runner.check(label, fn)
    sys.stdout.flush()
    return runner.finish()
