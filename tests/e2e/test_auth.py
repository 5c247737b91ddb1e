#!/usr/bin/env python3
"""End-to-end: client authentication and permissions through fencegate.

Starts moto_server and $FENCE_BIN/fencegate -c CONFIG in S3 mode with three
clients (a writer, a read-only reader, a client that may write only under
one prefix). Real signers — the AWS CLI, boto3, s3cmd and rclone — put (with
the fencing token), get, list and delete with valid credentials. Then every
refusal is checked for its S3 error code AND, by asking moto directly, for
nothing having reached storage: wrong secret, unknown key, expired presigned
URL, read-only client writing, a write outside the allowed prefix, an
anonymous write, a payload whose signed hash does not match, a tampered
aws-chunked body. Also the lock API needs "lock" on the lock's routes."""
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import BIN, CREDS, Moto, Runner, TempDir, free_port, run, stop, wait_port  # noqa: E402

BUCKET = "authbkt"
WRITER = ("AKIDWRITER0001", "writer-secret-0001")
READER = ("AKIDREADER0001", "reader-secret-0001")
NARROW = ("AKIDNARROW0001", "narrow-secret-0001")
NOLOCK = ("AKIDNOLOCK0001", "nolock-secret-0001")
ADMIN = ("AKIDADMIN00001", "admin-secret-00001")
LOCKER = ("AKIDLOCKER0001", "locker-secret-0001")
BREAKER = ("AKIDBREAKER001", "breaker-secret-001")


class Gate:
    """moto + fencegate with a client config."""

    def __init__(self):
        self.proc = None
        self.moto = Moto()
        try:
            self.start()
        except BaseException:
            self.close()
            raise

    def start(self):
        self.moto.create_bucket(BUCKET)
        self.dir = TempDir()
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        cfg = {
            "listen": ["127.0.0.1:%d" % self.port],
            "upstream": {"endpoint": self.moto.url, "region": "us-east-1"},
            "unrouted_writes": "bucket_lock",
            "clients": [
                {"access_key": WRITER[0], "secret_env": "GW_WRITER_SECRET",
                 "allow": [{"prefix": "/%s" % BUCKET, "actions": ["read", "write", "lock"]},
                           {"prefix": "/", "actions": ["read"]}]},
                {"access_key": READER[0], "secret_env": "GW_READER_SECRET",
                 "allow": [{"prefix": "/%s/" % BUCKET, "actions": ["read"]}]},
                {"access_key": NARROW[0], "secret_env": "GW_NARROW_SECRET",
                 "allow": [{"prefix": "/%s/" % BUCKET, "actions": ["read"]},
                           {"prefix": "/%s/narrow/" % BUCKET, "actions": ["read", "write"]}]},
                {"access_key": NOLOCK[0], "secret_env": "GW_NOLOCK_SECRET",
                 "allow": [{"prefix": "/%s" % BUCKET, "actions": ["read", "write"]}]},
                {"access_key": ADMIN[0], "secret_env": "GW_ADMIN_SECRET",
                 "allow": [{"prefix": "/%s/" % BUCKET, "actions": ["read", "admin"]}]},
                {"access_key": LOCKER[0], "secret_env": "GW_LOCKER_SECRET",
                 "allow": [{"prefix": "/%s" % BUCKET, "actions": ["read", "write", "lock"]}]},
                {"access_key": BREAKER[0], "secret_env": "GW_BREAKER_SECRET",
                 "allow": [{"prefix": "/%s" % BUCKET,
                            "actions": ["read", "write", "lock", "break"]}]},
            ],
        }
        self.config = os.path.join(self.dir.path, "fencegate.json")
        with open(self.config, "w") as f:
            json.dump(cfg, f)
        env = dict(os.environ, **CREDS)
        env.update(GW_WRITER_SECRET=WRITER[1], GW_READER_SECRET=READER[1],
                   GW_NARROW_SECRET=NARROW[1], GW_NOLOCK_SECRET=NOLOCK[1],
                   GW_ADMIN_SECRET=ADMIN[1], GW_LOCKER_SECRET=LOCKER[1],
                   GW_BREAKER_SECRET=BREAKER[1])
        self.log = open(os.path.join(self.dir.path, "fencegate.log"), "w+")
        self.access_log = os.path.join(self.dir.path, "access.log")
        self.proc = subprocess.Popen([os.path.join(BIN, "fencegate"), "-c", self.config,
                                      "--access-log", self.access_log],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env)
        wait_port(self.port, self.proc)
        self.epoch = self.acquire(WRITER)

    def close(self):
        stop(self.proc)
        if getattr(self, "log", None):
            self.log.close()
        self.moto.close()
        if getattr(self, "dir", None):
            self.dir.close()

    def client(self, creds, **kw):
        import boto3
        from botocore.config import Config
        return boto3.client("s3", endpoint_url=self.url, region_name="us-east-1",
                            aws_access_key_id=creds[0], aws_secret_access_key=creds[1],
                            config=Config(s3={"addressing_style": "path"},
                                          retries={"max_attempts": 1}, **kw))

    def signed(self, creds, method, path, body=b"", headers=None, sign_body=None,
               streaming=False):
        """A raw SigV4-signed request (botocore's signer) whose payload hash
        is that of sign_body (default: body), or STREAMING-UNSIGNED-PAYLOAD-
        TRAILER; returns (status, body)."""
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        req = AWSRequest(method=method, url=self.url + path,
                         data=body if sign_body is None else sign_body,
                         headers=dict(headers or {}))
        if streaming:
            req.context["checksum"] = {"request_algorithm": {"in": "trailer"}}
        S3SigV4Auth(Credentials(*creds), "s3", "us-east-1").add_auth(req)
        return raw(self.port, method, path, body, dict(req.headers.items()))

    def acquire(self, creds):
        st, body = self.signed(creds, "POST", "/_fence/locks/%s/acquire" % BUCKET,
                               b'{"ttlMs":600000}', {"Content-Type": "application/json"})
        assert st == 200, (st, body)
        return json.loads(body)["epoch"]

    def in_moto(self, key):
        try:
            return self.moto.client().get_object(Bucket=BUCKET, Key=key)["Body"].read()
        except Exception:  # noqa: BLE001 - absent
            return None


def raw(port, method, path, body=b"", headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def s3_code(body):
    s = body.decode("utf-8", "replace")
    if "<Code>" not in s:
        return None
    return s.split("<Code>", 1)[1].split("</Code>", 1)[0]


def expect_client_error(fn, code, status):
    from botocore.exceptions import ClientError
    try:
        fn()
    except ClientError as e:
        got = (e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"])
        assert got == (code, status), "expected %s/%s, got %s" % (code, status, got)
        return
    raise AssertionError("expected %s, the request succeeded" % code)


def s3cmd_config(path, creds, port, signature_v2=False):
    """Writes an s3cmd config for the proxy on 127.0.0.1:port (http,
    path-style) to path; returns path."""
    host = "127.0.0.1:%d" % port
    with open(path, "w") as f:
        f.write("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = %s\n"
                "host_bucket = %s\nuse_https = False\nsignature_v2 = %s\n"
                "bucket_location = us-east-1\n" % (creds[0], creds[1], host, host,
                                                    signature_v2))
    return path


def cli_env(g, creds):
    env = dict(os.environ)
    env.update(AWS_ACCESS_KEY_ID=creds[0], AWS_SECRET_ACCESS_KEY=creds[1],
               AWS_DEFAULT_REGION="us-east-1", AWS_REGION="us-east-1",
               AWS_EC2_METADATA_DISABLED="true")
    for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CA_BUNDLE"):
        env.pop(k, None)
    return env


# ---- valid clients ---------------------------------------------------------

def t_boto3(g):
    s3 = g.client(WRITER)
    body = os.urandom(200000)
    s3.put_object(Bucket=BUCKET, Key="boto3/a.bin", Body=body,
                  Metadata={"fencing-token": str(g.epoch)})
    assert s3.get_object(Bucket=BUCKET, Key="boto3/a.bin")["Body"].read() == body
    assert g.in_moto("boto3/a.bin") == body
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="boto3/")["Contents"]]
    assert keys == ["boto3/a.bin"], keys
    tok = g.client(WRITER)
    tok.meta.events.register("before-sign.s3.DeleteObject",
                             lambda request, **kw: request.headers.__setitem__(
                                 "X-Fencing-Token", str(g.epoch)))
    tok.delete_object(Bucket=BUCKET, Key="boto3/a.bin")
    assert g.in_moto("boto3/a.bin") is None
    # the read-only client reads
    s3.put_object(Bucket=BUCKET, Key="boto3/r.txt", Body=b"r",
                  Metadata={"fencing-token": str(g.epoch)})
    assert g.client(READER).get_object(Bucket=BUCKET, Key="boto3/r.txt")["Body"].read() == b"r"


def t_aws_cli(g):
    env = cli_env(g, WRITER)
    d = tempfile.mkdtemp()
    try:
        src = os.path.join(d, "in.bin")
        with open(src, "wb") as f:
            f.write(os.urandom(300000))
        r = run(["aws", "--endpoint-url", g.url, "s3api", "put-object", "--bucket", BUCKET,
                 "--key", "cli/in.bin", "--body", src, "--metadata",
                 "fencing-token=%d" % g.epoch], env=env)
        assert r.returncode == 0, r.stderr
        assert g.in_moto("cli/in.bin") == open(src, "rb").read()
        out = os.path.join(d, "out.bin")
        r = run(["aws", "--endpoint-url", g.url, "s3", "cp", "s3://%s/cli/in.bin" % BUCKET, out],
                env=env)
        assert r.returncode == 0, r.stderr
        assert open(out, "rb").read() == open(src, "rb").read()
        r = run(["aws", "--endpoint-url", g.url, "s3", "ls", "s3://%s/cli/" % BUCKET], env=env)
        assert r.returncode == 0 and "in.bin" in r.stdout, (r.stdout, r.stderr)
        r = run(["aws", "--endpoint-url", g.url, "s3api", "delete-object", "--bucket", BUCKET,
                 "--key", "cli/in.bin"], env=dict(env))
        # a delete carries no metadata: the token goes as a header, which the
        # CLI cannot add; fencing answers 428 and the object stays
        assert r.returncode != 0 and "FencingTokenMissing" in r.stderr, (r.stdout, r.stderr)
        assert g.in_moto("cli/in.bin") is not None
        # wrong secret with the CLI
        bad = cli_env(g, (WRITER[0], "not-the-secret"))
        r = run(["aws", "--endpoint-url", g.url, "s3api", "put-object", "--bucket", BUCKET,
                 "--key", "cli/bad.bin", "--body", src, "--metadata",
                 "fencing-token=%d" % g.epoch], env=bad)
        assert r.returncode != 0 and "SignatureDoesNotMatch" in r.stderr, r.stderr
        assert g.in_moto("cli/bad.bin") is None
    finally:
        shutil.rmtree(d, ignore_errors=True)


def t_s3cmd(g):
    if not shutil.which("s3cmd"):
        raise AssertionError("s3cmd is not installed (deploy/install-deps.sh test)")
    d = tempfile.mkdtemp()
    try:
        cfg = s3cmd_config(os.path.join(d, "s3cfg"), WRITER, g.port)
        src = os.path.join(d, "in.txt")
        with open(src, "wb") as f:
            f.write(b"s3cmd payload " * 1000)
        base = ["s3cmd", "-c", cfg, "--no-check-md5"]
        r = run(base + ["put", "--add-header=X-Fencing-Token:%d" % g.epoch, src,
                        "s3://%s/s3cmd/in.txt" % BUCKET])
        assert r.returncode == 0, r.stdout + r.stderr
        assert g.in_moto("s3cmd/in.txt") == open(src, "rb").read()
        out = os.path.join(d, "out.txt")
        r = run(base + ["get", "s3://%s/s3cmd/in.txt" % BUCKET, out])
        assert r.returncode == 0, r.stdout + r.stderr
        assert open(out, "rb").read() == open(src, "rb").read()
        r = run(base + ["ls", "s3://%s/s3cmd/" % BUCKET])
        assert r.returncode == 0 and "in.txt" in r.stdout, r.stdout + r.stderr
        # s3cmd 2.3 sends --add-header only on uploads: its DELETE carries no
        # token, so fencing refuses it (428) and the object stays
        r = run(base + ["del", "--add-header=X-Fencing-Token:%d" % g.epoch,
                        "s3://%s/s3cmd/in.txt" % BUCKET])
        assert r.returncode != 0 and "FencingTokenMissing" in r.stdout + r.stderr, \
            r.stdout + r.stderr
        assert g.in_moto("s3cmd/in.txt") is not None
    finally:
        shutil.rmtree(d, ignore_errors=True)


def t_rclone(g):
    if not shutil.which("rclone"):
        raise AssertionError("rclone is not installed (deploy/install-deps.sh test)")
    d = tempfile.mkdtemp()
    try:
        env = dict(os.environ)
        env.pop("AWS_CA_BUNDLE", None)  # rclone fails whenever it is set
        env.update(RCLONE_CONFIG=os.path.join(d, "rclone.conf"))
        with open(env["RCLONE_CONFIG"], "w") as f:
            f.write("[gw]\ntype = s3\nprovider = Other\naccess_key_id = %s\n"
                    "secret_access_key = %s\nendpoint = %s\nregion = us-east-1\n"
                    "force_path_style = true\n" % (WRITER[0], WRITER[1], g.url))
        src = os.path.join(d, "in.bin")
        with open(src, "wb") as f:
            f.write(os.urandom(100000))
        common = ["rclone", "--s3-no-check-bucket", "--retries", "1", "--low-level-retries", "1"]
        # rclone 1.60 sets only known keys on upload: the token as metadata
        r = run(common + ["copyto", "--header-upload", "X-Amz-Meta-Fencing-Token: %d" % g.epoch,
                          src, "gw:%s/rclone/in.bin" % BUCKET], env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert g.in_moto("rclone/in.bin") == open(src, "rb").read()
        out = os.path.join(d, "out.bin")
        r = run(common + ["copyto", "gw:%s/rclone/in.bin" % BUCKET, out], env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert open(out, "rb").read() == open(src, "rb").read()
        r = run(common + ["lsf", "gw:%s/rclone/" % BUCKET], env=env)
        assert r.returncode == 0 and "in.bin" in r.stdout, r.stdout + r.stderr
        # rclone's --header is added after signing: on a write the proxy
        # refuses an unsigned X-Fencing-Token (an on-path party could have
        # set it), so the fenced delete is refused and the object stays
        r = run(common + ["deletefile", "--header", "X-Fencing-Token: %d" % g.epoch,
                          "gw:%s/rclone/in.bin" % BUCKET], env=env)
        assert r.returncode != 0 and "AccessDenied" in r.stdout + r.stderr, \
            r.stdout + r.stderr
        assert g.in_moto("rclone/in.bin") == open(src, "rb").read()
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---- refusals: the right code, and nothing reaches moto --------------------

def t_wrong_secret(g):
    s3 = g.client((WRITER[0], "wrong-secret"))
    expect_client_error(lambda: s3.put_object(Bucket=BUCKET, Key="deny/ws", Body=b"x",
                                              Metadata={"fencing-token": str(g.epoch)}),
                        "SignatureDoesNotMatch", 403)
    assert g.in_moto("deny/ws") is None
    # refusals are access-logged and counted
    deadline = time.monotonic() + 5
    lines = []
    while time.monotonic() < deadline and not lines:
        with open(g.access_log) as f:
            lines = [json.loads(x) for x in f if "auth:SignatureDoesNotMatch" in x]
        time.sleep(0.05)
    assert lines and lines[-1].get("status") == 403, lines
    st, body = raw(g.port, "GET", "/_fence/metrics")
    assert st == 200 and b'fencegate_rejections_total{code="SignatureDoesNotMatch"}' in body, \
        body[:2000]


def t_unknown_key(g):
    s3 = g.client(("AKIDNOBODY000001", "whatever"))
    expect_client_error(lambda: s3.put_object(Bucket=BUCKET, Key="deny/uk", Body=b"x",
                                              Metadata={"fencing-token": str(g.epoch)}),
                        "InvalidAccessKeyId", 403)
    assert g.in_moto("deny/uk") is None


def t_presigned(g):
    s3 = g.client(WRITER, signature_version="s3v4")
    g.client(WRITER).put_object(Bucket=BUCKET, Key="pre/obj", Body=b"presigned",
                                Metadata={"fencing-token": str(g.epoch)})
    url = s3.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "pre/obj"},
                                    ExpiresIn=60)
    u = urllib.parse.urlsplit(url)
    st, body = raw(g.port, "GET", u.path + "?" + u.query)
    assert st == 200 and body == b"presigned", (st, body)
    url = s3.generate_presigned_url("put_object", Params={"Bucket": BUCKET, "Key": "pre/exp"},
                                    ExpiresIn=1)
    time.sleep(2.2)
    u = urllib.parse.urlsplit(url)
    st, body = raw(g.port, "PUT", u.path + "?" + u.query, b"late",
                   {"X-Fencing-Token": str(g.epoch)})
    assert st == 403 and s3_code(body) == "AccessDenied", (st, body)
    assert g.in_moto("pre/exp") is None


def t_read_only_writes(g):
    s3 = g.client(READER)
    expect_client_error(lambda: s3.put_object(Bucket=BUCKET, Key="deny/ro", Body=b"x",
                                              Metadata={"fencing-token": str(g.epoch)}),
                        "AccessDenied", 403)
    assert g.in_moto("deny/ro") is None
    g.client(WRITER).put_object(Bucket=BUCKET, Key="deny/keep", Body=b"k",
                                Metadata={"fencing-token": str(g.epoch)})
    expect_client_error(lambda: s3.delete_object(Bucket=BUCKET, Key="deny/keep"),
                        "AccessDenied", 403)
    assert g.in_moto("deny/keep") == b"k"
    # the lock API needs "lock": the reader may not acquire
    st, body = g.signed(READER, "POST", "/_fence/locks/%s/acquire" % BUCKET, b"{}")
    assert st == 403 and s3_code(body) == "AccessDenied", (st, body)


def t_outside_prefix(g):
    s3 = g.client(NARROW)
    s3.put_object(Bucket=BUCKET, Key="narrow/ok", Body=b"in",
                  Metadata={"fencing-token": str(g.epoch)})
    assert g.in_moto("narrow/ok") == b"in"
    expect_client_error(lambda: s3.put_object(Bucket=BUCKET, Key="narrowx/no", Body=b"out",
                                              Metadata={"fencing-token": str(g.epoch)}),
                        "AccessDenied", 403)
    assert g.in_moto("narrowx/no") is None
    st, body = g.signed(WRITER, "GET", "/%s?list-type=2&prefix=narrow%%2F" % BUCKET)
    assert st == 200, (st, body)


def t_bucket_level(g):
    """Bucket configuration needs "admin" ("write" is not enough), and
    DeleteObjects needs "write" on the whole bucket: a client held to a
    prefix cannot delete outside it through the body's keys."""
    direct = g.moto.client()
    vers = {"Status": "Enabled"}
    expect_client_error(lambda: g.client(WRITER).put_bucket_versioning(
        Bucket=BUCKET, VersioningConfiguration=vers), "AccessDenied", 403)
    assert "Status" not in direct.get_bucket_versioning(Bucket=BUCKET)
    tags = {"TagSet": [{"Key": "team", "Value": "x"}]}
    expect_client_error(lambda: g.client(WRITER).put_bucket_tagging(
        Bucket=BUCKET, Tagging=tags), "AccessDenied", 403)
    g.client(ADMIN).put_bucket_tagging(Bucket=BUCKET, Tagging=tags)
    assert direct.get_bucket_tagging(Bucket=BUCKET)["TagSet"] == tags["TagSet"]
    direct.delete_bucket_tagging(Bucket=BUCKET)
    # the admin permission does not write objects
    expect_client_error(lambda: g.client(ADMIN).put_object(
        Bucket=BUCKET, Key="by-admin", Body=b"x", Metadata={"fencing-token": str(g.epoch)}),
        "AccessDenied", 403)
    assert g.in_moto("by-admin") is None
    # DeleteObjects: the narrow client may not, even for keys it may write
    direct.put_object(Bucket=BUCKET, Key="outside/victim", Body=b"keep")
    s3 = g.client(NARROW)
    s3.meta.events.register("before-sign.s3.DeleteObjects",
                            lambda request, **kw: request.headers.__setitem__(
                                "X-Fencing-Token", str(g.epoch)))
    expect_client_error(lambda: s3.delete_objects(
        Bucket=BUCKET, Delete={"Objects": [{"Key": "outside/victim"}]}), "AccessDenied", 403)
    assert g.in_moto("outside/victim") == b"keep"
    w = g.client(WRITER)
    w.meta.events.register("before-sign.s3.DeleteObjects",
                           lambda request, **kw: request.headers.__setitem__(
                               "X-Fencing-Token", str(g.epoch)))
    r = w.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": "outside/victim"}]})
    assert [d["Key"] for d in r.get("Deleted", [])] == ["outside/victim"], r
    assert g.in_moto("outside/victim") is None


def t_lock_files(g):
    """Lock files are writable only with "lock": NOLOCK may write the bucket
    but not its lock files; WRITER takes the lock with fencectl through the
    proxy's S3 API."""
    nxt = "locks/%s/lock-%010d.json" % (BUCKET, g.epoch + 1)
    st, body = g.signed(NOLOCK, "PUT", "/%s/%s" % (BUCKET, nxt),
                        b'{"leaderId":"thief","validityMs":30000,"expired":true}',
                        {"If-None-Match": "*", "Content-Type": "application/json"})
    assert st == 403 and s3_code(body) == "AccessDenied", (st, body)
    assert g.in_moto(nxt) is None
    g.client(NOLOCK).put_object(Bucket=BUCKET, Key="nolock/data", Body=b"d",
                                Metadata={"fencing-token": str(g.epoch)})
    env = cli_env(g, WRITER)
    st, body = g.signed(WRITER, "POST", "/_fence/locks/%s/release" % BUCKET,
                        json.dumps({"epoch": g.epoch}).encode())
    assert st == 200, (st, body)
    r = run([os.path.join(BIN, "fencectl"), "--store", "s3://" + BUCKET, "--endpoint", g.url,
             "acquire", BUCKET, "--ttl", "10m"], env=env)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.strip()) == g.epoch + 1, r.stdout
    assert g.in_moto(nxt) is not None
    g.epoch += 1
    r = run([os.path.join(BIN, "fencectl"), "--store", "s3://" + BUCKET, "--endpoint", g.url,
             "status", BUCKET], env=cli_env(g, NOLOCK))
    assert r.returncode == 0, r.stderr  # reading lock files needs only "read"


def t_break_permission(g):
    """Ending a live lease through the S3 API needs "break": a "lock"-only
    client can neither create the next epoch expired over a live one nor
    rewrite (mark expired, or renew to take over) a live epoch file another
    client wrote; that file's writer may renew and release it; a "break"
    client breaks it. Every outcome is read back from moto."""
    moto = g.moto.client()

    def key(e):
        return "locks/%s/lock-%010d.json" % (BUCKET, e)

    def payload(holder, expired, nonce):
        return json.dumps({"leaderId": holder, "validityMs": 600000, "expired": expired,
                           "nonce": nonce}).encode()

    def put(creds, e, body, cond):
        return g.signed(creds, "PUT", "/%s/%s" % (BUCKET, key(e)), body,
                        dict(cond, **{"Content-Type": "application/json"}))

    def stored(e):
        try:
            o = moto.get_object(Bucket=BUCKET, Key=key(e))
        except Exception:  # noqa: BLE001 - absent
            return None
        return json.loads(o["Body"].read()), o["Metadata"].get("fencing-client"), o["ETag"]

    # the lock API's rule is the same: a "lock"-only client can neither
    # release nor renew a lease another client took
    for op in ("release", "renew"):
        st, body = g.signed(LOCKER, "POST", "/_fence/locks/%s/%s" % (BUCKET, op),
                            json.dumps({"epoch": g.epoch}).encode())
        assert st == 403 and b"break" in body, (op, st, body)
    pl0, _, _ = stored(g.epoch)
    assert pl0["expired"] is False, pl0
    st, body = g.signed(WRITER, "POST", "/_fence/locks/%s/release" % BUCKET,
                        json.dumps({"epoch": g.epoch}).encode())
    assert st == 200, (st, body)
    e = g.epoch + 1
    st, body = put(WRITER, e, payload("w1", False, "n-w1"), {"If-None-Match": "*"})
    assert st == 200, (st, body)
    pl, writer, etag = stored(e)
    assert writer == WRITER[0] and pl["expired"] is False, (pl, writer)
    # "lock" only: no break, no mark-expired, no take-over of WRITER's live epoch
    st, body = put(LOCKER, e + 1, payload("thief", True, "n-t"), {"If-None-Match": "*"})
    assert st == 403 and s3_code(body) == "AccessDenied" and b"break" in body, (st, body)
    assert stored(e + 1) is None
    st, body = put(LOCKER, e, payload("w1", True, "n-w1"), {"If-Match": etag})
    assert st == 403 and s3_code(body) == "AccessDenied", (st, body)
    st, body = put(LOCKER, e, payload("w1", False, "n-w1"), {"If-Match": etag})
    assert st == 403 and s3_code(body) == "AccessDenied", (st, body)
    assert stored(e) == (pl, WRITER[0], etag), stored(e)  # untouched
    # its writer renews it
    st, body = put(WRITER, e, payload("w1", False, "n-w1"), {"If-Match": etag})
    assert st == 200, (st, body)
    pl, writer, etag = stored(e)
    assert writer == WRITER[0] and pl["expired"] is False, (pl, writer)
    # "break" breaks it: epoch e+1, already expired, stamped with the breaker
    st, body = put(BREAKER, e + 1, payload("breaker", True, "n-b"), {"If-None-Match": "*"})
    assert st == 200, (st, body)
    pl2, writer2, _ = stored(e + 1)
    assert pl2["expired"] is True and writer2 == BREAKER[0], (pl2, writer2)
    # the writer stamp is the proxy's: not shown through it
    h = g.client(BREAKER).head_object(Bucket=BUCKET, Key=key(e + 1))
    assert "fencing-client" not in h["Metadata"], h["Metadata"]
    # the lock is free now: the lock-only client takes e+2, then releases
    # its own epoch (it is the writer)
    st, body = put(LOCKER, e + 2, payload("locker", False, "n-l"), {"If-None-Match": "*"})
    assert st == 200, (st, body)
    _, writer3, etag3 = stored(e + 2)
    assert writer3 == LOCKER[0], writer3
    st, body = put(LOCKER, e + 2, payload("locker", True, "n-l"), {"If-Match": etag3})
    assert st == 200, (st, body)
    assert stored(e + 2)[0]["expired"] is True
    g.epoch = g.acquire(WRITER)
    assert g.epoch == e + 3, g.epoch


def t_anonymous(g):
    st, body = raw(g.port, "PUT", "/%s/deny/anon" % BUCKET, b"anon",
                   {"X-Fencing-Token": str(g.epoch), "Content-Type": "application/octet-stream"})
    assert st == 403 and s3_code(body) == "AccessDenied", (st, body)
    assert g.in_moto("deny/anon") is None
    st, body = raw(g.port, "GET", "/%s/deny/keep" % BUCKET)
    assert st == 403 and s3_code(body) == "AccessDenied", (st, body)
    st, _ = raw(g.port, "GET", "/_fence/health")
    assert st == 200


def t_payload_mismatch(g):
    body = b"the real body " * 5000
    signed_for = b"the real body " * 4999 + b"the real bodY "
    st, resp = g.signed(WRITER, "PUT", "/%s/deny/hash" % BUCKET, body,
                        {"X-Fencing-Token": str(g.epoch),
                         "Content-Type": "application/octet-stream"}, sign_body=signed_for)
    assert st == 400 and s3_code(resp) == "XAmzContentSHA256Mismatch", (st, resp)
    assert g.in_moto("deny/hash") is None
    # the right hash goes through
    st, resp = g.signed(WRITER, "PUT", "/%s/deny/hash" % BUCKET, body,
                        {"X-Fencing-Token": str(g.epoch),
                         "Content-Type": "application/octet-stream"})
    assert st == 200, (st, resp)
    assert g.in_moto("deny/hash") == body


def chunked_body(data, chunk=65536):
    out = b""
    for i in range(0, len(data), chunk):
        part = data[i:i + chunk]
        out += b"%x\r\n" % len(part) + part + b"\r\n"
    import zlib
    import base64
    crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big"))
    return out + b"0\r\nx-amz-checksum-crc32:" + crc + b"\r\n\r\n"


def t_aws_chunked_unsigned_trailer(g):
    data = os.urandom(150000)
    hdrs = {"X-Fencing-Token": str(g.epoch), "Content-Encoding": "aws-chunked",
            "x-amz-decoded-content-length": str(len(data)),
            "x-amz-trailer": "x-amz-checksum-crc32",
            "Content-Type": "application/octet-stream"}
    st, resp = g.signed(WRITER, "PUT", "/%s/chunked/ok" % BUCKET, chunked_body(data), hdrs,
                        streaming=True)
    assert st == 200, (st, resp)
    assert g.in_moto("chunked/ok") == data
    head = g.moto.client().head_object(Bucket=BUCKET, Key="chunked/ok")
    assert head.get("ContentEncoding") in (None, ""), head.get("ContentEncoding")
    # a flipped byte: the CRC trailer fails, nothing lands
    bad = bytearray(chunked_body(data))
    bad[100] ^= 1
    st, resp = g.signed(WRITER, "PUT", "/%s/chunked/bad" % BUCKET, bytes(bad), hdrs,
                        streaming=True)
    assert st == 400 and s3_code(resp) == "BadDigest", (st, resp)
    assert g.in_moto("chunked/bad") is None


# ---- HTTP mode: bearer tokens ----------------------------------------------

class Downstream:
    """A tiny downstream API that records what reaches it."""

    def __init__(self):
        import http.server
        import threading
        self.seen = []
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _any(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                rec.seen.append((self.command, self.path,
                                 {k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            do_GET = do_PUT = do_POST = do_DELETE = _any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def t_http_bearer():
    down = Downstream()
    d = TempDir()
    proc = None
    try:
        tokens = {"worker": "tok-worker-0123456789", "viewer": "tok-viewer-0123456789"}
        files = {}
        for name, tok in tokens.items():
            files[name] = os.path.join(d.path, name + ".token")
            with open(files[name], "w") as f:
                f.write(tok + "\n")
        port = free_port()
        cfg = {
            "listen": ["127.0.0.1:%d" % port], "mode": "http",
            "upstream": {"endpoint": down.url},
            "lock_store": "file://" + d.path,
            "locks": [{"name": "jobs", "store": "file://" + d.path,
                       "prefix": "locks/jobs/lock-"}],
            "routes": [{"prefix": "/api/", "lock": "jobs"}],
            "clients": [
                {"name": "worker", "token_file": files["worker"],
                 "allow": [{"prefix": "/api/", "actions": ["read", "write", "lock"]}]},
                {"name": "viewer", "token_file": files["viewer"],
                 "allow": [{"prefix": "/api/", "actions": ["read"]}]},
            ],
        }
        path = os.path.join(d.path, "http.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        log = open(os.path.join(d.path, "fg.log"), "w")
        proc = subprocess.Popen([os.path.join(BIN, "fencegate"), "-c", path,
                                 "--access-log", "off"], stdout=log, stderr=subprocess.STDOUT)
        wait_port(port, proc)

        def req(method, p, token=None, body=b"", extra=None):
            h = dict(extra or {})
            if token:
                h["Authorization"] = "Bearer " + token
            st, data = raw(port, method, p, body, h)
            return st, (json.loads(data) if data.startswith(b"{") else data)

        st, b = req("PUT", "/api/x", None, b"anon", {"X-Fencing-Token": "1"})
        assert st == 401 and b["error"] == "Unauthorized", (st, b)
        st, b = req("PUT", "/api/x", "tok-wrong", b"bad", {"X-Fencing-Token": "1"})
        assert st == 401 and b["error"] == "Unauthorized", (st, b)
        st, b = req("POST", "/_fence/locks/jobs/acquire", tokens["viewer"], b"{}")
        assert st == 403 and b["error"] == "AccessDenied", (st, b)
        st, b = req("POST", "/_fence/locks/jobs/acquire", tokens["worker"], b'{"ttlMs":60000}')
        assert st == 200, (st, b)
        epoch = b["epoch"]
        st, b = req("PUT", "/api/x", tokens["viewer"], b"viewer", {"X-Fencing-Token": str(epoch)})
        assert st == 403 and b["error"] == "AccessDenied", (st, b)
        assert down.seen == [], down.seen  # nothing refused reached the API
        st, b = req("PUT", "/api/x", tokens["worker"], b"worker", {"X-Fencing-Token": str(epoch)})
        assert st == 200, (st, b)
        st, b = req("GET", "/api/x", tokens["viewer"])
        assert st == 200, (st, b)
        assert [(m, p) for m, p, _, _ in down.seen] == [("PUT", "/api/x"), ("GET", "/api/x")]
        assert down.seen[0][3] == b"worker"
        for _, _, h, _ in down.seen:  # the proxy's credential stays at the proxy
            assert "authorization" not in h, h
    finally:
        stop(proc)
        down.close()
        d.close()


def main():
    r = Runner("e2e auth")
    r.check("http mode: bearer tokens, 401/403 JSON, token not forwarded", t_http_bearer)
    g = Gate()
    try:
        for label, fn in [
            ("boto3 put/get/list/delete, reader reads", t_boto3),
            ("aws cli put/cp/ls, wrong secret refused", t_aws_cli),
            ("s3cmd put/get/ls/del", t_s3cmd),
            ("rclone copyto/lsf/deletefile", t_rclone),
            ("wrong secret: 403 SignatureDoesNotMatch, nothing lands", t_wrong_secret),
            ("unknown key: 403 InvalidAccessKeyId, nothing lands", t_unknown_key),
            ("presigned: valid GET, expired PUT 403 AccessDenied", t_presigned),
            ("read-only client writing: 403, lock API refused", t_read_only_writes),
            ("write outside the allowed prefix: 403", t_outside_prefix),
            ("bucket configuration needs admin; DeleteObjects the whole bucket",
             t_bucket_level),
            ("anonymous: 403 AccessDenied, health open", t_anonymous),
            ("lock files: writable only with lock; fencectl through the proxy", t_lock_files),
            ("payload hash mismatch: 400, nothing lands", t_payload_mismatch),
            ("aws-chunked with CRC trailer: decoded upstream; bad CRC 400", t_aws_chunked_unsigned_trailer),
            ("breaking a live lock needs break; its writer renews and releases", t_break_permission),
        ]:
            r.check(label, fn, g)
    finally:
        g.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
