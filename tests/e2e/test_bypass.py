#!/usr/bin/env python3
"""No way around the fence: the reproductions of "every write through the
S3 API is decided, fail closed", each against moto and against the embedded
store, asserting on storage (moto read directly; the data directory read as
files), never only on the status.

In front of moto the proxy's upstream is a counting relay (test_fencing's
CountingProxy): a request the proxy refuses must send no write upstream.
Cases: DeleteObjects without, with a stale and with a valid token (lock
files refused per key, epochs never reused); unknown, repeated,
percent-encoded and malformed parameters; a client setting the proxy's
fencing metadata; the stamp hidden on GET/HEAD; a 409 naming the lock's
current epoch; If-Match without quotes; the AWS CLI's DeleteObjects
(aws s3 rm --recursive) unfenced on the embedded store. Prints
'N passed, N failed'."""
import base64
import hashlib
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from test_fencing import (Gate, req, acquire, release, s3code,  # noqa: E402
                          expect, cli_env)
from test_fencing_ops import CountingProxy  # noqa: E402


class MotoTarget:
    """fencegate -> counting relay -> moto; storage read from moto."""

    name = "moto"

    def __init__(self):
        self.moto = harness.Moto()
        self.relay = CountingProxy(self.moto.port)
        self.gate = Gate("--upstream", self.relay.url, "--access-log", "off")

    def bucket(self, name):
        self.moto.create_bucket(name)
        return name

    def keys(self, bucket):
        out, token = [], None
        c = self.moto.client()
        while True:
            kw = {"Bucket": bucket}
            if token:
                kw["ContinuationToken"] = token
            page = c.list_objects_v2(**kw)
            out += [o["Key"] for o in page.get("Contents", [])]
            if not page.get("IsTruncated"):
                return sorted(out)
            token = page["NextContinuationToken"]

    def body(self, bucket, key):
        try:
            o = self.moto.client().get_object(Bucket=bucket, Key=key)
        except Exception as e:  # noqa: BLE001
            if "NoSuchKey" in str(e):
                return None, None
            raise
        return o["Body"].read(), o["Metadata"]

    def writes_upstream(self):
        """Write requests seen upstream, the lock protocol's own (lock files,
        epoch marks) excepted."""
        return [ln for ln in self.relay.lines
                if not ln.startswith(("GET ", "HEAD ")) and "/locks/" not in ln and
                "/fencing-marks/" not in ln]

    def reset(self):
        self.relay.reset()

    def close(self):
        self.gate.close()
        self.relay.close()
        self.moto.close()


class EmbeddedTarget:
    """fencegate on its embedded store; storage read from the directory."""

    name = "embedded"

    def __init__(self):
        self.tmp = harness.TempDir()
        self.data = os.path.join(self.tmp.path, "data")
        self.gate = Gate("--data", self.data, "--access-log", "off")

    def bucket(self, name):
        st, _, d = req(self.gate.port, "PUT", "/" + name)
        expect(st == 200, "create bucket: %s %s" % (st, d))
        return name

    def keys(self, bucket):
        root = os.path.join(self.data, bucket)
        out = []
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if x != ".fencegate"]
            out += [os.path.relpath(os.path.join(d, f), root) for f in files]
        return sorted(out)

    def body(self, bucket, key):
        p = os.path.join(self.data, bucket, key)
        if not os.path.isfile(p):
            return None, None
        with open(p, "rb") as f:
            return f.read(), None

    def writes_upstream(self):
        return []  # no upstream: storage is checked directly

    def reset(self):
        pass

    def close(self):
        self.gate.close()
        self.tmp.close()


def snapshot(t, b):
    return {k: t.body(b, k)[0] for k in t.keys(b)}


def delete_xml(keys, quiet=False):
    objs = "".join("<Object><Key>%s</Key></Object>" % k for k in keys)
    q = "<Quiet>true</Quiet>" if quiet else ""
    return ('<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">%s%s</Delete>'
            % (q, objs)).encode()


def md5_header(body):
    return base64.b64encode(hashlib.md5(body).digest()).decode()


def put(t, b, key, body, epoch, headers=None):
    h = {"X-Fencing-Token": str(epoch)}
    h.update(headers or {})
    return req(t.gate.port, "PUT", "/%s/%s" % (b, key), body, h)


def boto_with_token(t, epoch):
    """boto3 through the proxy, X-Fencing-Token on every request."""
    import boto3
    from botocore.config import Config
    c = boto3.client("s3", endpoint_url=t.gate.url, region_name="us-east-1",
                     aws_access_key_id="test", aws_secret_access_key="test",
                     config=Config(s3={"addressing_style": "path"},
                                   retries={"max_attempts": 1}))

    def add(request, **kw):
        request.headers["X-Fencing-Token"] = str(epoch)
    c.meta.events.register("before-sign.s3.*", add)
    return c


# ---- the cases ---------------------------------------------------------------

def t_delete_objects(t):
    b = t.bucket("bypass-del-" + t.name)
    e1 = acquire(t.gate.port, b, "w1")
    for k in ("a.txt", "dir/b.txt"):
        st, _, d = put(t, b, k, b"data " + k.encode(), e1)
        expect(st == 200, "put %s: %s %s" % (k, st, d))
    lock_key = "locks/%s/lock-%010d.json" % (b, e1)
    before = snapshot(t, b)
    expect(lock_key in before and "a.txt" in before, "storage: %s" % sorted(before))
    body = delete_xml(["a.txt", "dir/b.txt", lock_key])
    t.reset()
    # no token, under every spelling of the sub-resource
    for q in ("delete", "d%65lete", "delete=" + "x" * 200, "delete&delete", "delete=",
              "%64elete", "Delete"):
        st, _, d = req(t.gate.port, "POST", "/%s?%s" % (b, q), body,
                       {"Content-MD5": md5_header(body)})
        expect(st >= 400, "?%s without a token: %s %s" % (q, st, d))
        expect(snapshot(t, b) == before, "?%s changed storage" % q)
    # a stale token
    release(t.gate.port, b, e1)
    e2 = acquire(t.gate.port, b, "w2")
    st, h, d = req(t.gate.port, "POST", "/%s?delete" % b, body,
                   {"X-Fencing-Token": str(e1), "Content-MD5": md5_header(body)})
    expect(st == 409 and s3code(d) == "FencingTokenStale", "stale: %s %s" % (st, d))
    expect(h.get("x-fencing-epoch") == str(e2), "409 names the current epoch: %s" % h)
    expect(t.writes_upstream() == [], "writes reached upstream: %s" % t.writes_upstream())
    # a body that does not match its Content-MD5
    st, _, d = req(t.gate.port, "POST", "/%s?delete" % b, body,
                   {"X-Fencing-Token": str(e2), "Content-MD5": md5_header(b"other")})
    expect(st == 400 and s3code(d) == "BadDigest", "bad digest: %s %s" % (st, d))
    after = snapshot(t, b)
    def data(snap):  # the lock protocol's own files (lock files, epoch mark) aside
        return {k: v for k, v in snap.items()
                if "lock-" not in k and not k.startswith("fencing-marks/")}
    expect(data(after) == data(before), "refusals changed data")
    # the valid token, through boto3: data deleted, the lock file refused
    c = boto_with_token(t, e2)
    r = c.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "a.txt"}, {"Key": lock_key},
                                                       {"Key": "never-there"}]})
    deleted = sorted(x["Key"] for x in r.get("Deleted", []))
    errors = {x["Key"]: x["Code"] for x in r.get("Errors", [])}
    expect(deleted == ["a.txt", "never-there"], "deleted: %s" % r)
    expect(errors == {lock_key: "AccessDenied"}, "errors: %s" % r)
    now = t.keys(b)
    expect("a.txt" not in now and "dir/b.txt" in now and lock_key in now, "storage: %s" % now)
    # epochs are never handed out again
    release(t.gate.port, b, e2)
    e3 = acquire(t.gate.port, b, "w3")
    expect(e3 == e2 + 1, "epoch after the deletes: %d (was %d)" % (e3, e2))
    # an object written under a newer epoch is not deleted by an older one
    st, _, _ = put(t, b, "newer.txt", b"e3", e3)
    expect(st == 200, "put under e3")
    release(t.gate.port, b, e3)
    # (the proxy refuses e2 at lock level; the object check is the second line)
    st, _, d = req(t.gate.port, "POST", "/%s?delete" % b, delete_xml(["newer.txt"]),
                   {"X-Fencing-Token": str(e2)})
    expect(st == 409, "older epoch: %s %s" % (st, d))
    expect(t.body(b, "newer.txt")[0] == b"e3", "newer object kept")


def t_parameters(t):
    b = t.bucket("bypass-par-" + t.name)
    e = acquire(t.gate.port, b, "w")
    st, _, _ = put(t, b, "k", b"original", e)
    expect(st == 200, "put")
    before = snapshot(t, b)
    t.reset()
    cases = [
        ("PUT", "/%s/k?x=1" % b), ("DELETE", "/%s/k?x=1" % b),
        ("PUT", "/%s/k?upload%%49d=ID" % b), ("PUT", "/%s/k?uploadId=ID" % b),
        ("PUT", "/%s/k?partNumber=1&partNumber=2&uploadId=ID" % b),
        ("PUT", "/%s/k?tagging&tagging" % b), ("DELETE", "/%s/k?%%zz" % b),
        ("PUT", "/%s/k?acl=%%" % b), ("POST", "/%s/k?x-id=PutObject" % b),
        ("PUT", "/%s/k?versionId=1&x=2" % b), ("POST", "/%s?unknown" % b),
        ("PUT", "/%s?lifecycle&x" % b),
    ]
    for method, path in cases:
        st, _, d = req(t.gate.port, method, path, b"zombie", {"X-Fencing-Token": str(e)})
        expect(st >= 400, "%s %s with a token: %s %s" % (method, path, st, d))
        expect(snapshot(t, b) == before, "%s %s changed storage" % (method, path))
    # encodings of known operations are the operation, fenced as such
    for method, path in [("POST", "/%s/k?upload%%73" % b), ("POST", "/%s/k?uploads=" % b),
                         ("PUT", "/%s/k?t%%61gging" % b), ("DELETE", "/%s/k" % b)]:
        st, _, d = req(t.gate.port, method, path, b"<Tagging/>")
        expect(st == 428, "%s %s without a token: %s %s" % (method, path, st, d))
        expect(snapshot(t, b) == before, "%s %s changed storage" % (method, path))
    expect(t.writes_upstream() == [], "writes reached upstream: %s" % t.writes_upstream())


def t_owned_metadata(t):
    b = t.bucket("bypass-meta-" + t.name)
    e = acquire(t.gate.port, b, "w")
    st, _, d = put(t, b, "k", b"forged", e, {"x-amz-meta-fencing-epoch": "9999999999"})
    expect(st == 400, "client-set epoch: %s %s" % (st, d))
    expect(t.body(b, "k")[0] is None, "the forged object was stored")
    st, _, d = put(t, b, "k", b"real", e, {"x-amz-meta-owner": "me"})
    expect(st == 200, "legit write: %s %s" % (st, d))
    body, meta = t.body(b, "k")
    expect(body == b"real", "stored: %r" % body)
    if meta is not None:
        expect(meta == {"fencing-epoch": str(e), "fencing-lock": b, "owner": "me"},
               "stored metadata: %s" % meta)
    # reads: what the client wrote, the epoch as a header of its own
    c = boto_with_token(t, e)
    h = c.head_object(Bucket=b, Key="k")
    expect(h["Metadata"] == {"owner": "me"}, "HEAD metadata: %s" % h["Metadata"])
    expect(h["ResponseMetadata"]["HTTPHeaders"].get("x-fencing-object-epoch") == str(e),
           "X-Fencing-Object-Epoch: %s" % h["ResponseMetadata"]["HTTPHeaders"])
    g = c.get_object(Bucket=b, Key="k")
    expect(g["Metadata"] == {"owner": "me"} and g["Body"].read() == b"real", "GET")
    # a stale write's 409 names the lock's current epoch
    release(t.gate.port, b, e)
    e2 = acquire(t.gate.port, b, "w2")
    st, h, d = put(t, b, "k", b"zombie", e)
    expect(st == 409 and h.get("x-fencing-epoch") == str(e2), "409: %s %s" % (st, h))
    expect(t.body(b, "k")[0] == b"real", "the zombie landed")


def t_if_match(t):
    b = t.bucket("bypass-ifm-" + t.name)
    e = acquire(t.gate.port, b, "w")
    st, h, _ = put(t, b, "k", b"one", e)
    etag = h["etag"]
    st, _, d = put(t, b, "k", b"two", e, {"If-Match": etag.strip('"')})
    expect(st == 200, "unquoted If-Match: %s %s" % (st, d))
    expect(t.body(b, "k")[0] == b"two", "stored")
    st, _, d = put(t, b, "k", b"three", e, {"If-Match": etag.strip('"')})
    expect(st == 412, "unquoted, old ETag: %s %s" % (st, d))
    st, _, d = put(t, b, "k", b"four", e, {"If-None-Match": etag})
    expect(st == 501, "If-None-Match with an ETag: %s %s" % (st, d))
    expect(t.body(b, "k")[0] == b"two", "unchanged")


def t_lock_file_rewrite(t):
    """Through the S3 API a lock file's rewrite may renew (live lease, same
    holder) or mark it expired; it never revives a lapsed lease nor changes
    a live lease's holder."""
    import time
    b = t.bucket("bypass-lock-" + t.name)
    e = acquire(t.gate.port, b, "w", ttl=1000)
    key = "/%s/locks/%s/lock-%010d.json" % (b, b, e)
    time.sleep(3.0)  # past the lease and the server clock's one-second rounding
    st, h, old = req(t.gate.port, "GET", key)
    expect(st == 200, "read the lock file: %s" % st)
    payload = json.loads(old)
    revived = dict(payload, validityMs=600000, expired=False)
    st, _, d = req(t.gate.port, "PUT", key, json.dumps(revived).encode(),
                   {"If-Match": h["etag"], "Content-Type": "application/json"})
    expect(st == 409 and s3code(d) == "LockLost", "revive a lapsed lease: %s %s" % (st, d))
    expect(t.body(b, key.split("/", 2)[2])[0] == old, "the lapsed file changed")
    # a live lease: renewing is the holder's, not anyone's
    e2 = acquire(t.gate.port, b, "w2", ttl=60000)
    key2 = "/%s/locks/%s/lock-%010d.json" % (b, b, e2)
    st, h, cur = req(t.gate.port, "GET", key2)
    stolen = dict(json.loads(cur), leaderId="thief")
    st, _, d = req(t.gate.port, "PUT", key2, json.dumps(stolen).encode(),
                   {"If-Match": h["etag"], "Content-Type": "application/json"})
    expect(st == 409 and s3code(d) == "LockHolderMismatch", "change the holder: %s %s" %
           (st, d))
    expect(t.body(b, key2.split("/", 2)[2])[0] == cur, "the live file changed")
    release(t.gate.port, b, e2)


def t_cli_rm_recursive_unfenced():
    """aws s3 rm --recursive (DeleteObjects) on the embedded store with
    unrouted_writes: allow: the keys go, through the proxy's own delete."""
    tmp = harness.TempDir()
    port = harness.free_port()
    cfg = {"listen": ["127.0.0.1:%d" % port], "mode": "s3",
           "data_dir": os.path.join(tmp.path, "data"), "unrouted_writes": "allow"}
    path = os.path.join(tmp.path, "fencegate.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    log = open(os.path.join(tmp.path, "log"), "w+")
    proc = subprocess.Popen([os.path.join(harness.BIN, "fencegate"), "-c", path,
                             "--access-log", "off"], stderr=log)
    try:
        harness.wait_port(port, proc)
        url = "http://127.0.0.1:%d" % port
        env = cli_env()
        r = harness.run(["aws", "--endpoint-url", url, "s3", "mb", "s3://rm-bucket"], env=env)
        expect(r.returncode == 0, "mb: %s" % r.stderr)
        for i in range(5):
            r = harness.run(["aws", "--endpoint-url", url, "s3api", "put-object", "--bucket",
                             "rm-bucket", "--key", "d/%d.txt" % i], env=env)
            expect(r.returncode == 0, "put: %s" % r.stderr)
        r = harness.run(["aws", "--endpoint-url", url, "s3", "rm", "--recursive",
                         "s3://rm-bucket/d/"], env=env)
        expect(r.returncode == 0 and r.stdout.count("delete:") == 5, "rm: %s %s" %
               (r.stdout, r.stderr))
        left = []
        for d, dirs, fs in os.walk(os.path.join(tmp.path, "data", "rm-bucket")):
            dirs[:] = [x for x in dirs if x != ".fencegate"]
            left += fs
        expect(left == [], "left on disk: %s" % left)
    finally:
        harness.stop(proc)
        log.close()
        tmp.close()


def main():
    r = harness.Runner("e2e bypass")
    for make in (MotoTarget, EmbeddedTarget):
        t = make()
        try:
            r.check("%s: DeleteObjects fenced key by key, lock files kept" % t.name,
                    t_delete_objects, t)
            r.check("%s: unknown, repeated, encoded parameters refused" % t.name,
                    t_parameters, t)
            r.check("%s: the proxy owns the fencing metadata" % t.name, t_owned_metadata, t)
            r.check("%s: If-Match without quotes" % t.name, t_if_match, t)
            r.check("%s: lock files: no revival, no change of holder" % t.name,
                    t_lock_file_rewrite, t)
        finally:
            t.close()
    r.check("embedded: aws s3 rm --recursive, unrouted_writes allow",
            t_cli_rm_recursive_unfenced)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
