"""Helpers the embedded-store tests (test_local_*.py) share: a boto3 client
that sends the token (X-Fencing-Token or fencing-token metadata) on every
request, the lock HTTP API (signed when the gate has clients), the S3
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


def client(url, token=None, meta_token=None, creds=("test", "test")):
    """A path-style boto3 client; with token, X-Fencing-Token on every
    request, with meta_token, x-amz-meta-fencing-token (both added before
    signing, so they are signed)."""
    c = boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                     aws_access_key_id=creds[0], aws_secret_access_key=creds[1],
                     config=Config(s3={"addressing_style": "path"},
                                   retries={"max_attempts": 1}))

    def add(request, **kwargs):
        if token is not None:
            request.headers["X-Fencing-Token"] = str(token)
        if meta_token is not None:
            request.headers["x-amz-meta-fencing-token"] = str(meta_token)
    if token is not None or meta_token is not None:
        c.meta.events.register("before-sign.s3", add)
    return c


def signed_headers(url, creds, method, path, body=b""):
    """The headers of a SigV4-signed request (botocore's signer)."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method=method, url=url + path, data=body)
    S3SigV4Auth(Credentials(*creds), "s3", "us-east-1").add_auth(req)
    return dict(req.headers.items())


def lockapi(g, bucket, op, creds=None, **body):
    """(status, JSON answer) of POST /_fence/locks/BUCKET/OP, signed with
    creds (access key, secret) when given."""
    path, data = "/_fence/locks/%s/%s" % (bucket, op), json.dumps(body).encode()
    req = urllib.request.Request(g.url + path, data=data, method="POST",
                                 headers=signed_headers(g.url, creds, "POST", path, data)
                                 if creds else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def acquire(g, bucket, holder="local-e2e", creds=None):
    st, body = lockapi(g, bucket, "acquire", creds, ttlMs=600000, holder=holder)
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
    """Every object file of bucket (not the store's own, not lock files nor
    the locks' epoch marks)."""
    root, out = os.path.join(g.data, bucket), []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x != ".fencegate" and
                   not (d == root and x in ("locks", "fencing-marks"))]
        out += [os.path.relpath(os.path.join(d, f), root) for f in files]
    return sorted(out)


def disk_state(g, bucket):
    """{file: bytes} of every file of bucket but the store's own, lock
    files included: what a refusal must leave as it was."""
    root, out = os.path.join(g.data, bucket), {}
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x != ".fencegate"]
        for f in files:
            with open(os.path.join(d, f), "rb") as fh:
                out[os.path.relpath(os.path.join(d, f), root)] = fh.read()
    return out


def lock_key(bucket, epoch):
    """The key of lock bucket's epoch file in the default layout."""
    return "locks/%s/lock-%010d.json" % (bucket, epoch)


def not_built(name):
    """True, having printed the failure, when fencegate is not built."""
    import harness
    if os.path.exists(os.path.join(harness.BIN, "fencegate")):
        return False
    print("%s: %s/fencegate is not built" % (name, harness.BIN))
    print("%s: 0 passed, 1 failed" % name)
    return True


def main(name, shared, solo=(), gate_args=(), gate_config=None):
    """Runs shared tests (label, fn(g)) on one fencegate over the embedded
    default (or gate_config), then solo tests (label, fn()) that start
    their own; prints 'N passed, N failed' and returns the exit status."""
    import harness
    if not_built(name):
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


FREE_CONFIG = {"mode": "s3", "unrouted_writes": "allow"}


def main_gates(name, cases, extra=None):
    """Runs cases (label, fn(g, tmp), gate) on the gates "fenced" (the
    embedded default), "free" (unrouted_writes allow) and those extra()
    returns ({name: gate}), with one scratch directory tmp; prints
    'N passed, N failed' and returns the exit status."""
    import harness
    if not_built(name):
        return 1
    runner = harness.Runner(name)
    tmp = harness.TempDir("fencegate-%s-" % name)
    gates = {}
    try:
        gates["fenced"] = harness.Fencegate("--access-log", "off")
        gates["free"] = harness.Fencegate("--access-log", "off", config=FREE_CONFIG)
        gates.update(extra() if extra else {})
        for label, fn, gate in cases:
            runner.check(label, fn, gates[gate], tmp.path)
        runner.check("all alive", lambda: None if all(g.alive() for g in gates.values()) else
                     (_ for _ in ()).throw(AssertionError("fencegate exited")))
        if runner.failed:
            for g in gates.values():
                print(g.stderr()[-3000:])
    finally:
        for g in gates.values():
            g.close()
        tmp.close()
    return runner.finish()
