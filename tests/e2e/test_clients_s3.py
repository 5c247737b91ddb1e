#!/usr/bin/env python3
"""End-to-end: real S3 clients through fencegate's S3 mode in front of moto.

Two proxies on one moto_server: FENCED is fencegate --upstream (no config:
every write under /BUCKET/ fenced by lock BUCKET, authentication off on
loopback), UNFENCED is -c with unrouted_writes "allow". Driven with the
AWS CLI (s3 cp of a 9 MiB file, which is multipart, sync, sync --delete,
mv inside the bucket, rm --recursive; fenced: the token as --metadata,
single and multipart, a stale one refused, a bucket-to-bucket copy), s3cmd
(put, get, ls, del, sync), rclone (copy, lsf, sync, purge: rclone 1.60
deletes one key at a time, never with DeleteObjects) and boto3's
delete_objects (DeleteObjects) and @aws-sdk/client-s3 with lib-storage,
fenced (token as X-Fencing-Token or as
x-amz-meta-fencing-token) and unfenced, with a lock file among the keys:
it is refused per key and stays. Every outcome is read back from moto with
boto3 directly, not only from the client's exit status. Prints
'N passed, N failed'."""
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import run  # noqa: E402
from test_auth import s3cmd_config  # noqa: E402

FBUCKET = "clients-fenced"
UBUCKET = "clients-unfenced"


class Setup:
    def __init__(self):
        self.moto = harness.Moto()
        self.fenced = self.unfenced = None
        self.dir = harness.TempDir()
        try:
            self.moto.create_bucket(FBUCKET)
            self.moto.create_bucket(UBUCKET)
            self.access_log = os.path.join(self.dir.path, "fenced-access.log")
            self.fenced = harness.Fencegate("--upstream", self.moto.url, "--access-log",
                                            self.access_log, data=False)
            self.unfenced = harness.Fencegate(data=False, config={
                "upstream": {"endpoint": self.moto.url, "region": "us-east-1"},
                "unrouted_writes": "allow"})
            self.epoch = self.acquire()
        except BaseException:
            self.close()
            raise

    def acquire(self):
        req = urllib.request.Request(
            self.fenced.url + "/_fence/locks/%s/acquire" % FBUCKET, method="POST",
            data=json.dumps({"ttlMs": 600000, "holder": "clients-test"}).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=20) as r:
            return json.loads(r.read())["epoch"]

    def keys(self, bucket, prefix=""):
        out, token = [], None
        c = self.moto.client()
        while True:
            kw = {"Bucket": bucket, "Prefix": prefix}
            if token:
                kw["ContinuationToken"] = token
            page = c.list_objects_v2(**kw)
            out += [o["Key"] for o in page.get("Contents", [])]
            if not page.get("IsTruncated"):
                return sorted(out)
            token = page["NextContinuationToken"]

    def body(self, bucket, key):
        try:
            return self.moto.client().get_object(Bucket=bucket, Key=key)["Body"].read()
        except Exception as e:  # noqa: BLE001 - absent
            if "NoSuchKey" in str(e):
                return None
            raise

    def meta(self, bucket, key):
        return self.moto.client().head_object(Bucket=bucket, Key=key)["Metadata"]

    def lock_key(self, epoch=None):
        return "locks/%s/lock-%010d.json" % (FBUCKET, epoch or self.epoch)

    def requests(self):
        """(method, query, status) of every request FENCED logged so far
        (the access log file is buffered: lines of requests already answered
        arrive within 100 ms)."""
        time.sleep(0.25)
        with open(self.access_log) as f:
            return [(e["method"], e["query"], e["status"])
                    for e in map(json.loads, filter(None, f.read().splitlines()))]

    def close(self):
        for g in (self.fenced, self.unfenced):
            if g:
                g.close()
        self.moto.close()
        self.dir.close()


def need(tool):
    if not shutil.which(tool):
        raise AssertionError("%s is not installed (deploy/install-deps.sh test)" % tool)


def files(d, names, tag):
    """Writes d/name for each name (contents derived from name and tag)."""
    os.makedirs(d, exist_ok=True)
    for n in names:
        p = os.path.join(d, n)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(("%s %s\n" % (tag, n)).encode() * 200)


def content(n, tag):
    return ("%s %s\n" % (tag, n)).encode() * 200


# ---- AWS CLI ----------------------------------------------------------------

MIB = 1024 * 1024


def aws(s, g, *args, ok=True):
    env = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
               AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE=os.devnull,
               AWS_SHARED_CREDENTIALS_FILE=os.devnull)
    env.pop("AWS_ENDPOINT_URL", None)
    r = run(["aws", "--endpoint-url", g.url] + list(args), env=env, timeout=120)
    if ok:
        assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


def t_aws_cli_unfenced(s):
    need("aws")
    g, tmp = s.unfenced, tempfile.mkdtemp(dir=s.dir.path)
    big = os.urandom(9 * MIB)
    src = os.path.join(tmp, "big.bin")
    with open(src, "wb") as f:
        f.write(big)
    aws(s, g, "s3", "cp", src, "s3://%s/cli/up/big.bin" % UBUCKET)
    assert s.body(UBUCKET, "cli/up/big.bin") == big
    etag = s.moto.client().head_object(Bucket=UBUCKET, Key="cli/up/big.bin")["ETag"]
    assert etag.endswith('-2"'), etag  # 8 MiB + 1 MiB parts: it was multipart
    tree = os.path.join(tmp, "tree")
    files(tree, ["a.txt", "sub/b.txt", "sub/c.txt"], "cli")
    aws(s, g, "s3", "sync", tree, "s3://%s/cli/tree" % UBUCKET)
    assert s.keys(UBUCKET, "cli/tree/") == ["cli/tree/a.txt", "cli/tree/sub/b.txt",
                                            "cli/tree/sub/c.txt"]
    os.remove(os.path.join(tree, "sub", "c.txt"))
    with open(os.path.join(tree, "a.txt"), "wb") as f:
        f.write(b"changed")
    aws(s, g, "s3", "sync", "--delete", tree, "s3://%s/cli/tree" % UBUCKET)
    assert s.keys(UBUCKET, "cli/tree/") == ["cli/tree/a.txt", "cli/tree/sub/b.txt"]
    assert s.body(UBUCKET, "cli/tree/a.txt") == b"changed"
    aws(s, g, "s3", "mv", "s3://%s/cli/tree/a.txt" % UBUCKET, "s3://%s/cli/moved/a.txt" % UBUCKET)
    assert s.body(UBUCKET, "cli/tree/a.txt") is None
    assert s.body(UBUCKET, "cli/moved/a.txt") == b"changed"
    aws(s, g, "s3", "mv", "s3://%s/cli/up/big.bin" % UBUCKET, "s3://%s/cli/moved/big.bin" % UBUCKET)
    assert s.body(UBUCKET, "cli/moved/big.bin") == big
    # the stamp is hidden on a round trip through the unfenced proxy too
    assert "fencing-epoch" not in s.meta(UBUCKET, "cli/moved/a.txt")
    aws(s, g, "s3", "rm", "--recursive", "s3://%s/cli/" % UBUCKET)
    assert s.keys(UBUCKET, "cli/") == []


def t_aws_cli_fenced(s):
    """The token as metadata, all an unmodified CLI can send."""
    need("aws")
    g, tmp = s.fenced, tempfile.mkdtemp(dir=s.dir.path)
    tok = "fencing-token=%d" % s.epoch
    small = os.path.join(tmp, "small.txt")
    with open(small, "wb") as f:
        f.write(b"fenced by metadata")
    aws(s, g, "s3", "cp", small, "s3://%s/cli/k.txt" % FBUCKET, "--metadata", tok)
    assert s.body(FBUCKET, "cli/k.txt") == b"fenced by metadata"
    assert s.meta(FBUCKET, "cli/k.txt").get("fencing-epoch") == str(s.epoch)
    r = aws(s, g, "s3", "cp", small, "s3://%s/cli/no.txt" % FBUCKET, ok=False)
    assert r.returncode != 0 and "FencingTokenMissing" in r.stdout + r.stderr, (r.stdout, r.stderr)
    # a token below the lock's epoch (0 is below every epoch)
    r = aws(s, g, "s3", "cp", small, "s3://%s/cli/stale.txt" % FBUCKET, "--metadata",
            "fencing-token=%d" % (s.epoch - 1), ok=False)
    assert r.returncode != 0 and ("FencingTokenStale" in r.stdout + r.stderr or
                                  "FencingTokenInvalid" in r.stdout + r.stderr), (r.stdout, r.stderr)
    assert s.body(FBUCKET, "cli/no.txt") is None and s.body(FBUCKET, "cli/stale.txt") is None
    big = os.path.join(tmp, "big.bin")
    data = os.urandom(9 * MIB)
    with open(big, "wb") as f:
        f.write(data)
    aws(s, g, "s3", "cp", big, "s3://%s/cli/big.bin" % FBUCKET, "--metadata", tok)
    assert s.body(FBUCKET, "cli/big.bin") == data
    assert s.meta(FBUCKET, "cli/big.bin").get("fencing-epoch") == str(s.epoch)
    # a copy inside the bucket with the token: stamped with the writer's epoch
    aws(s, g, "s3", "cp", "s3://%s/cli/k.txt" % FBUCKET, "s3://%s/cli/k2.txt" % FBUCKET,
        "--metadata", tok)
    assert s.body(FBUCKET, "cli/k2.txt") == b"fenced by metadata"
    assert s.meta(FBUCKET, "cli/k2.txt").get("fencing-epoch") == str(s.epoch)


# ---- boto3 upload_file ------------------------------------------------------

def t_boto3_upload_file(s):
    """boto3's managed transfer (multipart above the threshold, parts in
    parallel) through both proxies: fenced by the token in ExtraArgs'
    Metadata (on the create; the parts follow the upload's epoch), and
    unfenced; read back from moto."""
    import boto3
    from boto3.s3.transfer import TransferConfig
    from botocore.config import Config
    tmp = tempfile.mkdtemp(dir=s.dir.path)
    data = os.urandom(11 * MIB)
    src = os.path.join(tmp, "multi.bin")
    with open(src, "wb") as f:
        f.write(data)
    cfg = TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB,
                         max_concurrency=3)
    for g, bucket, meta in ((s.fenced, FBUCKET, {"fencing-token": str(s.epoch), "x": "1"}),
                            (s.unfenced, UBUCKET, {"x": "1"})):
        c = boto3.client("s3", endpoint_url=g.url, region_name="us-east-1",
                         aws_access_key_id="test", aws_secret_access_key="test",
                         config=Config(s3={"addressing_style": "path"},
                                       retries={"max_attempts": 1}))
        c.upload_file(src, bucket, "boto/multi.bin", Config=cfg, ExtraArgs={"Metadata": meta})
        assert s.body(bucket, "boto/multi.bin") == data, bucket
        h = s.moto.client().head_object(Bucket=bucket, Key="boto/multi.bin")
        assert h["ETag"].endswith('-3"'), h["ETag"]
        if bucket == FBUCKET:
            assert h["Metadata"].get("fencing-epoch") == str(s.epoch), h["Metadata"]
        assert h["Metadata"].get("x") == "1", h["Metadata"]
    # without the token the fenced proxy refuses the upload; nothing lands
    c = boto3.client("s3", endpoint_url=s.fenced.url, region_name="us-east-1",
                     aws_access_key_id="test", aws_secret_access_key="test",
                     config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    try:
        c.upload_file(src, FBUCKET, "boto/no-token.bin", Config=cfg)
        raise AssertionError("an upload without a token was accepted")
    except Exception as e:  # noqa: BLE001 - boto3 wraps it in S3UploadFailedError
        assert "FencingTokenMissing" in str(e), e
    assert s.body(FBUCKET, "boto/no-token.bin") is None


# ---- s3cmd ------------------------------------------------------------------

def s3cmd(s, g, *args):
    cfg = s3cmd_config(os.path.join(s.dir.path, "s3cfg-%d" % g.port), ("test", "test"), g.port)
    return run(["s3cmd", "-c", cfg, "--no-check-md5", "--no-mime-magic"] + list(args),
               timeout=120)


def t_s3cmd_fenced(s):
    need("s3cmd")
    g, tok = s.fenced, "--add-header=X-Fencing-Token:%d" % s.epoch
    src = os.path.join(s.dir.path, "s3cmd-in.txt")
    files(s.dir.path, ["s3cmd-in.txt"], "put")
    r = s3cmd(s, g, "put", tok, src, "s3://%s/s3cmd/a.txt" % FBUCKET)
    assert r.returncode == 0, r.stdout + r.stderr
    assert s.body(FBUCKET, "s3cmd/a.txt") == content("s3cmd-in.txt", "put")
    assert s.meta(FBUCKET, "s3cmd/a.txt").get("fencing-epoch") == str(s.epoch)
    out = os.path.join(s.dir.path, "s3cmd-out.txt")
    r = s3cmd(s, g, "get", "--force", "s3://%s/s3cmd/a.txt" % FBUCKET, out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert open(out, "rb").read() == content("s3cmd-in.txt", "put")
    r = s3cmd(s, g, "ls", "s3://%s/s3cmd/" % FBUCKET)
    assert r.returncode == 0 and "s3cmd/a.txt" in r.stdout, r.stdout + r.stderr
    # a token of an epoch nobody took: refused, the object keeps its content
    files(s.dir.path, ["s3cmd-zombie.txt"], "zombie")
    r = s3cmd(s, g, "put", "--add-header=X-Fencing-Token:%d" % (s.epoch + 5),
              os.path.join(s.dir.path, "s3cmd-zombie.txt"), "s3://%s/s3cmd/a.txt" % FBUCKET)
    assert r.returncode != 0 and "FencingToken" in r.stdout + r.stderr, r.stdout + r.stderr
    assert s.body(FBUCKET, "s3cmd/a.txt") == content("s3cmd-in.txt", "put")
    # sync uploads a tree with the token (s3cmd sends --add-header on uploads)
    tree = os.path.join(s.dir.path, "s3cmd-tree")
    names = ["one.txt", "sub/two.txt", "sub/deep/three.txt"]
    files(tree, names, "sync")
    r = s3cmd(s, g, "sync", tok, tree + "/", "s3://%s/s3cmd-sync/" % FBUCKET)
    assert r.returncode == 0, r.stdout + r.stderr
    assert s.keys(FBUCKET, "s3cmd-sync/") == sorted("s3cmd-sync/" + n for n in names)
    for n in names:
        assert s.body(FBUCKET, "s3cmd-sync/" + n) == content(n, "sync"), n
        assert s.meta(FBUCKET, "s3cmd-sync/" + n).get("fencing-epoch") == str(s.epoch), n
    # s3cmd's DELETE carries no --add-header: fenced (428), nothing deleted
    r = s3cmd(s, g, "del", tok, "s3://%s/s3cmd/a.txt" % FBUCKET)
    assert r.returncode != 0 and "FencingTokenMissing" in r.stdout + r.stderr, \
        r.stdout + r.stderr
    assert s.body(FBUCKET, "s3cmd/a.txt") is not None
    # nor can it touch a lock file
    r = s3cmd(s, g, "put", tok, src, "s3://%s/%s" % (FBUCKET, s.lock_key(s.epoch + 1)))
    assert r.returncode != 0, r.stdout + r.stderr
    assert s.body(FBUCKET, s.lock_key(s.epoch + 1)) is None


def t_s3cmd_unfenced(s):
    need("s3cmd")
    g = s.unfenced
    tree = os.path.join(s.dir.path, "s3cmd-utree")
    names = ["a.txt", "b.txt", "d/c.txt"]
    files(tree, names, "u1")
    r = s3cmd(s, g, "sync", tree + "/", "s3://%s/sync/" % UBUCKET)
    assert r.returncode == 0, r.stdout + r.stderr
    assert s.keys(UBUCKET, "sync/") == sorted("sync/" + n for n in names)
    # change one (another size: --no-check-md5), remove one: sync
    # --delete-removed follows
    files(tree, ["a.txt"], "u2-changed")
    os.remove(os.path.join(tree, "b.txt"))
    r = s3cmd(s, g, "sync", "--delete-removed", tree + "/", "s3://%s/sync/" % UBUCKET)
    assert r.returncode == 0, r.stdout + r.stderr
    assert s.keys(UBUCKET, "sync/") == ["sync/a.txt", "sync/d/c.txt"], s.keys(UBUCKET, "sync/")
    assert s.body(UBUCKET, "sync/a.txt") == content("a.txt", "u2-changed")
    r = s3cmd(s, g, "ls", "--recursive", "s3://%s/sync/" % UBUCKET)
    assert r.returncode == 0 and "sync/d/c.txt" in r.stdout, r.stdout + r.stderr
    r = s3cmd(s, g, "del", "s3://%s/sync/d/c.txt" % UBUCKET)
    assert r.returncode == 0, r.stdout + r.stderr
    assert s.keys(UBUCKET, "sync/") == ["sync/a.txt"]
    out = os.path.join(s.dir.path, "s3cmd-uout.txt")
    r = s3cmd(s, g, "get", "--force", "s3://%s/sync/a.txt" % UBUCKET, out)
    assert r.returncode == 0 and open(out, "rb").read() == content("a.txt", "u2-changed"), \
        r.stderr


# ---- rclone -----------------------------------------------------------------

def rclone(s, *args):
    conf = os.path.join(s.dir.path, "rclone.conf")
    with open(conf, "w") as f:
        for name, g in (("fenced", s.fenced), ("unfenced", s.unfenced)):
            f.write("[%s]\ntype = s3\nprovider = Other\naccess_key_id = test\n"
                    "secret_access_key = test\nendpoint = %s\nregion = us-east-1\n"
                    "force_path_style = true\n\n" % (name, g.url))
    env = dict(os.environ, RCLONE_CONFIG=conf)
    env.pop("AWS_CA_BUNDLE", None)  # rclone fails whenever it is set
    return run(["rclone", "--s3-no-check-bucket", "--retries", "1", "--low-level-retries", "1"]
               + list(args), env=env, timeout=120)


def t_rclone_fenced(s):
    need("rclone")
    hdr = "X-Fencing-Token: %d" % s.epoch
    tree = os.path.join(s.dir.path, "rclone-tree")
    names = ["r1.bin", "r2.bin", "dir/r3.bin"]
    files(tree, names, "rc")
    # copy: the token as (signed) metadata on uploads
    r = rclone(s, "copy", "--header-upload", "X-Amz-Meta-Fencing-Token: %d" % s.epoch,
               tree, "fenced:%s/rc/" % FBUCKET)
    assert r.returncode == 0, r.stdout + r.stderr
    assert s.keys(FBUCKET, "rc/") == sorted("rc/" + n for n in names)
    for n in names:
        assert s.meta(FBUCKET, "rc/" + n).get("fencing-epoch") == str(s.epoch), n
    r = rclone(s, "lsf", "-R", "fenced:%s/rc/" % FBUCKET)
    assert r.returncode == 0 and sorted(r.stdout.split()) == sorted(["dir/", "dir/r3.bin",
                                                                      "r1.bin", "r2.bin"]), \
        r.stdout + r.stderr
    # without a token nothing is written
    files(tree, ["r4.bin"], "rc")
    r = rclone(s, "copy", tree, "fenced:%s/rc/" % FBUCKET)
    assert r.returncode != 0, r.stdout + r.stderr
    assert "rc/r4.bin" not in s.keys(FBUCKET, "rc/")
    # sync: uploads and deletes, the token on every request (--header; with
    # authentication off nothing has to be signed)
    os.remove(os.path.join(tree, "r1.bin"))
    r = rclone(s, "sync", "--header", hdr, tree, "fenced:%s/rc/" % FBUCKET)
    assert r.returncode == 0, r.stdout + r.stderr
    assert s.keys(FBUCKET, "rc/") == ["rc/dir/r3.bin", "rc/r2.bin", "rc/r4.bin"], \
        s.keys(FBUCKET, "rc/")
    # purge without the token: refused, everything stays
    before = len(s.requests())
    r = rclone(s, "purge", "fenced:%s/rc/" % FBUCKET)
    assert r.returncode != 0, r.stdout + r.stderr
    assert len(s.keys(FBUCKET, "rc/")) == 3
    # with the token of an epoch nobody took: refused too
    r = rclone(s, "purge", "--header", "X-Fencing-Token: %d" % (s.epoch + 7),
               "fenced:%s/rc/" % FBUCKET)
    assert r.returncode != 0, r.stdout + r.stderr
    assert len(s.keys(FBUCKET, "rc/")) == 3
    # with the token: gone, and the lock's files stay
    r = rclone(s, "purge", "--header", hdr, "fenced:%s/rc/" % FBUCKET)
    assert r.returncode == 0, r.stdout + r.stderr
    assert s.keys(FBUCKET, "rc/") == []
    # rclone 1.60 purges one DELETE per key (never DeleteObjects, whatever
    # the provider or --fast-list), each fenced: 428, 409, then 204
    writes = [(m, st) for m, q, st in s.requests()[before:] if m not in ("GET", "HEAD")]
    assert writes == [("DELETE", 428)] * 3 + [("DELETE", 409)] * 3 + [("DELETE", 204)] * 3, \
        writes
    assert s.body(FBUCKET, s.lock_key()) is not None


def t_rclone_unfenced(s):
    need("rclone")
    tree = os.path.join(s.dir.path, "rclone-utree")
    names = ["u1.bin", "x/u2.bin"]
    files(tree, names, "ru")
    r = rclone(s, "copy", tree, "unfenced:%s/ru/" % UBUCKET)
    assert r.returncode == 0, r.stdout + r.stderr
    assert s.keys(UBUCKET, "ru/") == ["ru/u1.bin", "ru/x/u2.bin"]
    assert "fencing-epoch" not in s.meta(UBUCKET, "ru/u1.bin")   # not fenced: no stamp
    os.remove(os.path.join(tree, "u1.bin"))
    r = rclone(s, "sync", tree, "unfenced:%s/ru/" % UBUCKET)
    assert r.returncode == 0, r.stdout + r.stderr
    assert s.keys(UBUCKET, "ru/") == ["ru/x/u2.bin"]
    r = rclone(s, "lsf", "-R", "unfenced:%s/ru/" % UBUCKET)
    assert r.returncode == 0 and "x/u2.bin" in r.stdout.split(), r.stdout + r.stderr
    r = rclone(s, "purge", "unfenced:%s/ru/" % UBUCKET)
    assert r.returncode == 0, r.stdout + r.stderr
    assert s.keys(UBUCKET, "ru/") == []


# ---- boto3 delete_objects ---------------------------------------------------

def boto3_client(g, token=None, meta_token=None):
    import boto3
    from botocore.config import Config
    c = boto3.client("s3", endpoint_url=g.url, region_name="us-east-1",
                     aws_access_key_id="test", aws_secret_access_key="test",
                     config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))

    def add(request, **kw):
        if token is not None:
            request.headers["X-Fencing-Token"] = str(token)
        if meta_token is not None:
            request.headers["x-amz-meta-fencing-token"] = str(meta_token)
    c.meta.events.register("before-sign.s3.*", add)
    return c


def t_boto3_delete_objects(s):
    from botocore.exceptions import ClientError
    g = s.fenced
    writer = boto3_client(g, meta_token=s.epoch)
    keys = ["del/%d.txt" % i for i in range(5)]
    for k in keys:
        writer.put_object(Bucket=FBUCKET, Key=k, Body=k.encode())
    assert s.keys(FBUCKET, "del/") == keys
    lock = s.lock_key()
    objects = {"Objects": [{"Key": k} for k in keys[:2]] + [{"Key": lock}]}
    # no token, the token of an epoch nobody took: nothing deleted
    for c, code in ((boto3_client(g), "FencingTokenMissing"),
                    (boto3_client(g, token=s.epoch + 9), "FencingTokenUnknown")):
        try:
            c.delete_objects(Bucket=FBUCKET, Delete=objects)
            raise AssertionError("delete_objects accepted without a valid token")
        except ClientError as e:
            assert e.response["Error"]["Code"] == code, e.response["Error"]
    assert s.keys(FBUCKET, "del/") == keys
    # the token as X-Fencing-Token: the data keys go, the lock file is refused
    res = boto3_client(g, token=s.epoch).delete_objects(Bucket=FBUCKET, Delete=objects)
    assert sorted(d["Key"] for d in res.get("Deleted", [])) == keys[:2], res
    errs = res.get("Errors", [])
    assert [(e["Key"], e["Code"]) for e in errs] == [(lock, "AccessDenied")], errs
    assert s.keys(FBUCKET, "del/") == keys[2:]
    assert s.body(FBUCKET, lock) is not None
    # the token as x-amz-meta-fencing-token, Quiet: only errors come back
    res = boto3_client(g, meta_token=s.epoch).delete_objects(
        Bucket=FBUCKET, Delete={"Objects": [{"Key": k} for k in keys[2:]] + [{"Key": lock}],
                                "Quiet": True})
    assert res.get("Deleted", []) == [], res
    assert [e["Key"] for e in res.get("Errors", [])] == [lock], res
    assert s.keys(FBUCKET, "del/") == []
    assert s.body(FBUCKET, lock) is not None
    # unfenced (unrouted_writes allow): no token needed; a lock-file-like key
    # of a bucket without locks is just data there
    u = boto3_client(s.unfenced)
    for k in keys:
        u.put_object(Bucket=UBUCKET, Key=k, Body=b"u")
    res = u.delete_objects(Bucket=UBUCKET, Delete={"Objects": [{"Key": k} for k in keys]})
    assert sorted(d["Key"] for d in res.get("Deleted", [])) == keys, res
    assert s.keys(UBUCKET, "del/") == []


JS = os.path.join(harness.ROOT, "tests", "js", "s3client.mjs")


def js(g, op, **args):
    """One S3 call through @aws-sdk/client-s3 (tests/js/s3client.mjs)."""
    env = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
               AWS_REGION="us-east-1")
    env.pop("AWS_ENDPOINT_URL", None)
    p = run(["node", JS, g.url, op, json.dumps(args)], env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def t_js_sdk(s):
    need("node")
    g, tok = s.fenced, {"X-Fencing-Token": str(s.epoch)}
    # fenced: a put by header and by metadata; without a token nothing lands
    r = js(g, "put", bucket=FBUCKET, key="js/a.txt", body="js-a", headers=tok)
    assert r["ok"], r
    r = js(g, "put", bucket=FBUCKET, key="js/b.txt", body="js-b",
           metadata={"fencing-token": str(s.epoch), "k": "v"})
    assert r["ok"], r
    r = js(g, "put", bucket=FBUCKET, key="js/c.txt", body="no token")
    assert not r["ok"] and r["status"] == 428, r
    assert s.body(FBUCKET, "js/c.txt") is None
    assert s.meta(FBUCKET, "js/b.txt") == {"k": "v", "fencing-epoch": str(s.epoch),
                                           "fencing-lock": FBUCKET}
    r = js(g, "head", bucket=FBUCKET, key="js/b.txt")
    assert r["ok"] and r["metadata"] == {"k": "v"}, r  # the stamp is the proxy's
    # lib-storage Upload: a 6 MiB body goes multipart, fenced by the upload
    big = os.path.join(s.dir.path, "big.bin")
    with open(big, "wb") as f:
        f.write(os.urandom(6 * 1024 * 1024))
    r = js(g, "upload", bucket=FBUCKET, key="js/big.bin", file=big, headers=tok)
    assert r["ok"] and r["etag"].strip('"').endswith("-2"), r
    with open(big, "rb") as f:
        assert s.body(FBUCKET, "js/big.bin") == f.read()
    # CopyObject with the SDK's default directive (COPY)
    r = js(g, "copy", bucket=FBUCKET, key="js/copy.txt", source="js/b.txt", headers=tok)
    assert r["ok"], r
    assert s.meta(FBUCKET, "js/copy.txt") == {"k": "v", "fencing-epoch": str(s.epoch),
                                              "fencing-lock": FBUCKET}
    # list and delete; DeleteObjects with the lock file among the keys
    r = js(g, "list", bucket=FBUCKET, prefix="js/")
    assert r["ok"] and r["keys"] == ["js/a.txt", "js/b.txt", "js/big.bin", "js/copy.txt"], r
    r = js(g, "delete", bucket=FBUCKET, key="js/a.txt", headers=tok)
    assert r["ok"] and s.body(FBUCKET, "js/a.txt") is None, r
    r = js(g, "delete_many", bucket=FBUCKET, keys=["js/b.txt", s.lock_key()], headers=tok)
    assert r["ok"] and r["deleted"] == ["js/b.txt"] and \
        r["errors"] == [{"key": s.lock_key(), "code": "AccessDenied"}], r
    assert s.body(FBUCKET, s.lock_key()) is not None
    # unfenced: no token needed
    u = s.unfenced
    assert js(u, "put", bucket=UBUCKET, key="js/u.txt", body="u")["ok"]
    assert js(u, "copy", bucket=UBUCKET, key="js/u2.txt", source="js/u.txt")["ok"]
    assert s.body(UBUCKET, "js/u2.txt") == b"u"
    assert js(u, "delete_many", bucket=UBUCKET, keys=["js/u.txt", "js/u2.txt"])["ok"]
    assert s.keys(UBUCKET, "js/") == []


def main():
    r = harness.Runner("e2e clients-s3")
    s = Setup()
    try:
        for label, fn in [
            ("aws cli unfenced: cp multipart, sync, sync --delete, mv, rm --recursive",
             t_aws_cli_unfenced),
            ("aws cli fenced by metadata: cp, multipart, missing and stale refused, copy",
             t_aws_cli_fenced),
            ("boto3 upload_file multipart: fenced by metadata, unfenced, no token refused",
             t_boto3_upload_file),
            ("s3cmd fenced: put/get/ls, stale refused, sync with the token, del 428",
             t_s3cmd_fenced),
            ("s3cmd unfenced: sync, sync --delete-removed, ls, del, get", t_s3cmd_unfenced),
            ("rclone fenced: copy with metadata token, lsf, sync, purge (DELETE per key)",
             t_rclone_fenced),
            ("rclone unfenced: copy, sync, lsf, purge", t_rclone_unfenced),
            ("boto3 delete_objects: fenced by header or metadata, lock key refused per key; "
             "unfenced", t_boto3_delete_objects),
            ("@aws-sdk/client-s3: put (header, metadata), lib-storage multipart, default "
             "copy, list, delete, DeleteObjects; unfenced", t_js_sdk),
        ]:
            r.check(label, fn, s)
    finally:
        s.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
