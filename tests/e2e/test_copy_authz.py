#!/usr/bin/env python3
"""Every object a request touches is authorised (issue 21): a copy reads its
source with the proxy's credentials, so CopyObject and UploadPartCopy need
"read" on the source as well as "write" on the destination.

A client allowed read and write only under /authbkt/narrow/ tries to copy
/authbkt/secret/payroll.csv (a prefix it cannot read) and /privbkt/keys.txt
(a bucket absent from its permissions), by CopyObject and by UploadPartCopy,
plainly and with encodings (a versionId, a leading slash or none, escapes in
the key, an escaped bucket name, a raw ';'). Each is refused before storage,
and storage is read directly to show nothing was copied: moto (in front of
it) and the embedded store (its data directory, read back by a client that
may). A copy from inside its own prefix works. Requests are signed with
botocore's SigV4 signer. Prints 'N passed, N failed'."""
import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

WRITER = ("AKIDCOPYWRITER01", "copy-writer-secret-01")
NARROW = ("AKIDCOPYNARROW01", "copy-narrow-secret-01")
ENV = {"GW_COPY_WRITER": WRITER[1], "GW_COPY_NARROW": NARROW[1]}
CONFIG = {
    "unrouted_writes": "bucket_lock",
    "clients": [
        {"access_key": WRITER[0], "secret_env": "GW_COPY_WRITER",
         "allow": [{"prefix": "/", "actions": ["read", "write", "lock", "admin"]}]},
        {"access_key": NARROW[0], "secret_env": "GW_COPY_NARROW",
         "allow": [{"prefix": "/authbkt/narrow/", "actions": ["read", "write"]}]},
    ],
}


def signed(url, creds, method, path, body=b"", headers=None):
    """A SigV4-signed request through the proxy; (status, headers, body)."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    r = AWSRequest(method=method, url=url + path, data=body, headers=dict(headers or {}))
    S3SigV4Auth(Credentials(*creds), "s3", "us-east-1").add_auth(r)
    p = r.prepare()
    req = urllib.request.Request(p.url, data=body if body else None, method=method,
                                 headers=dict(p.headers))
    try:
        with urllib.request.urlopen(req, timeout=15) as resp:
            return resp.status, dict(resp.getheaders()), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


# (x-amz-copy-source, status): the narrow client's copies into its prefix
REFUSED = [
    ("/authbkt/secret/payroll.csv", 403),
    ("authbkt/secret/payroll.csv", 403),
    ("/authbkt/secret/payroll.csv?versionId=null", 403),
    ("/authbkt/secr%65t/payroll.csv", 403),
    ("/privbkt/keys.txt", 403),
    ("/%70rivbkt/keys.txt", 400),
    ("/authbkt/narrow/../secret/payroll.csv;x", 400),
]


class World:
    """A fencegate with the two clients, in front of moto or over a data
    directory; the secret objects written by the writer."""

    def __init__(self, moto=None):
        cfg = dict(CONFIG)
        if moto is not None:
            cfg["upstream"] = {"endpoint": moto.url, "region": "us-east-1"}
            for b in ("authbkt", "privbkt"):
                moto.create_bucket(b)
        env = dict(os.environ, **harness.CREDS)
        env.update(ENV)
        self.gate = harness.Fencegate(config=cfg, data=moto is None, env=env)
        self.url = self.gate.url
        if moto is None:
            for b in ("authbkt", "privbkt"):
                st, _, d = signed(self.url, WRITER, "PUT", "/" + b)
                expect(st == 200, "create %s: %s %s" % (b, st, d))
        self.epochs = {}
        for path, body in (("/authbkt/secret/payroll.csv", b"salaries"),
                           ("/privbkt/keys.txt", b"keys"),
                           ("/authbkt/narrow/own.txt", b"mine")):
            st, _, d = self.write(WRITER, path, body)
            expect(st == 200, "writer puts %s: %s %s" % (path, st, d))

    def token(self, bucket):
        if bucket not in self.epochs:
            st, _, d = signed(self.url, WRITER, "POST", "/_fence/locks/%s/acquire" % bucket,
                              json.dumps({"ttlMs": 60000, "holder": "w"}).encode(),
                              {"Content-Type": "application/json"})
            expect(st == 200, "acquire %s: %s %s" % (bucket, st, d))
            self.epochs[bucket] = json.loads(d)["epoch"]
        return str(self.epochs[bucket])

    def write(self, creds, path, body=b"", headers=None, method="PUT"):
        h = {"X-Fencing-Token": self.token(path.split("/")[1]),
             "Content-Type": "application/octet-stream"}
        h.update(headers or {})
        return signed(self.url, creds, method, path, body, h)

    def stored(self, path):
        """The object as storage has it, read by the writer; None if absent."""
        st, _, d = signed(self.url, WRITER, "GET", path)
        return d if st == 200 else None

    def close(self):
        self.gate.close()


def copies_are_authorised(world, direct=None):
    """direct(path) reads storage itself (moto); else the writer reads."""
    look = direct or world.stored
    for i, (src, want) in enumerate(REFUSED):
        dst = "/authbkt/narrow/stolen-%d" % i
        st, _, d = world.write(NARROW, dst, headers={"x-amz-copy-source": src})
        expect(st == want, "CopyObject from %s: %s %s (want %s)" % (src, st, d, want))
        expect(look(dst) is None, "nothing copied from %s" % src)
    # UploadPartCopy: the upload is the client's, the source is not
    st, _, d = world.write(NARROW, "/authbkt/narrow/mp?uploads", method="POST")
    expect(st == 200, "create upload: %s %s" % (st, d))
    upload = d.split(b"<UploadId>")[1].split(b"</UploadId>")[0].decode()
    for i, (src, want) in enumerate(REFUSED):
        st, _, d = world.write(NARROW, "/authbkt/narrow/mp?partNumber=%d&uploadId=%s"
                               % (i + 1, upload), headers={"x-amz-copy-source": src})
        expect(st == want, "UploadPartCopy from %s: %s %s" % (src, st, d))
    st, _, d = world.write(NARROW, "/authbkt/narrow/mp?uploadId=%s" % upload, method="GET")
    expect(st == 200 and b"<PartNumber>" not in d, "no part was copied: %s %s" % (st, d))
    # a copy from inside its own prefix, and a readable source's part
    st, _, d = world.write(NARROW, "/authbkt/narrow/copy.txt",
                           headers={"x-amz-copy-source": "/authbkt/narrow/own.txt"})
    expect(st == 200, "copy inside the prefix: %s %s" % (st, d))
    expect(look("/authbkt/narrow/copy.txt") == b"mine", "the allowed copy landed")
    st, _, d = world.write(NARROW, "/authbkt/narrow/mp?partNumber=1&uploadId=%s" % upload,
                           headers={"x-amz-copy-source": "/authbkt/narrow/own.txt"})
    expect(st == 200, "a part from inside the prefix: %s %s" % (st, d))
    # the secret objects are where they were
    expect(look("/authbkt/secret/payroll.csv") == b"salaries", "payroll intact")
    expect(look("/privbkt/keys.txt") == b"keys", "keys intact")


def test_moto():
    moto = harness.Moto()
    world = None
    try:
        world = World(moto)
        c = moto.client()

        def direct(path):
            b, k = path.lstrip("/").split("/", 1)
            try:
                return c.get_object(Bucket=b, Key=k)["Body"].read()
            except c.exceptions.NoSuchKey:
                return None
        copies_are_authorised(world, direct)
    finally:
        if world:
            world.close()
        moto.close()


def test_embedded():
    world = World()
    try:
        copies_are_authorised(world)
    finally:
        world.close()


def main():
    r = harness.Runner("e2e copy authz")
    r.check("copy sources need read: in front of moto", test_moto)
    r.check("copy sources need read: the embedded store", test_embedded)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
