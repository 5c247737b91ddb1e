#!/usr/bin/env python3
"""Real S3 clients against fencegate's embedded default (what `make run`
serves: no --upstream, a data directory, writes to /BUCKET/... fenced by
lock BUCKET), and unfenced (a config with unrouted_writes: allow): the
AWS CLI (s3 cp of a 9 MiB file, which is multipart; s3 sync with --delete;
s3 mv; s3 rm --recursive), boto3 upload_file multipart, s3cmd and rclone
(their multipart too; s3cmd fenced by header and by metadata; rclone
copy, sync, lsf, purge unfenced), and @aws-sdk/lib-storage's Upload
(tests/js). The token goes as X-Fencing-Token or as fencing-token
metadata. The other clients and operations: test_local_clients2.py. Every check
looks at the data directory: the bytes on disk, files gone after deletes.
A client that is missing is a failure (deploy/install-deps.sh test
installs them). Servers on 127.0.0.1 at run-time ports, stopped by PID.
Prints 'N passed, N failed'."""
import hashlib
import json
import os
import shutil
import sys
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import harness  # noqa: E402
from localgate import (acquire, client, disk_keys, disk_state, lockapi, main_gates,  # noqa: E402
                       on_disk)

from boto3.s3.transfer import TransferConfig  # noqa: E402

MIB = 1024 * 1024
JS = os.path.join(harness.ROOT, "tests", "js")


def env():
    e = dict(os.environ, **harness.CREDS)
    e.pop("AWS_CA_BUNDLE", None)  # rclone fails whenever it is set
    e["AWS_CONFIG_FILE"] = os.devnull
    e["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
    return e


def disk(g, bucket, key):
    return on_disk(g, bucket, key)


def write_file(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def aws(g, *args):
    r = harness.run(["aws", "--endpoint-url", g.url] + list(args), env=env(), timeout=120)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


def need(tool):
    assert shutil.which(tool), "%s is not installed (make deps-test installs it)" % tool


# ---- AWS CLI ----------------------------------------------------------------

def t_aws_cli_unfenced(g, tmp):
    need("aws")
    client(g.url).create_bucket(Bucket="cli-bucket")
    big = os.urandom(9 * MIB)
    src = write_file(os.path.join(tmp, "big.bin"), big)
    aws(g, "s3", "cp", src, "s3://cli-bucket/up/big.bin")
    assert disk(g, "cli-bucket", "up/big.bin") == big
    etag = client(g.url).head_object(Bucket="cli-bucket", Key="up/big.bin")["ETag"]
    assert etag.endswith('-2"'), etag  # 8 MiB + 1 MiB parts
    out = os.path.join(tmp, "back.bin")
    aws(g, "s3", "cp", "s3://cli-bucket/up/big.bin", out)
    with open(out, "rb") as f:
        assert f.read() == big
    # sync up, then --delete removes what the source no longer has
    tree = os.path.join(tmp, "tree")
    os.makedirs(os.path.join(tree, "sub"))
    for name in ("a.txt", "sub/b.txt", "sub/c.txt"):
        write_file(os.path.join(tree, name), name.encode() * 10)
    aws(g, "s3", "sync", tree, "s3://cli-bucket/tree")
    assert disk_keys(g, "cli-bucket") == ["tree/a.txt", "tree/sub/b.txt", "tree/sub/c.txt",
                                          "up/big.bin"]
    os.remove(os.path.join(tree, "sub", "c.txt"))
    write_file(os.path.join(tree, "a.txt"), b"changed")
    aws(g, "s3", "sync", "--delete", tree, "s3://cli-bucket/tree")
    assert disk(g, "cli-bucket", "tree/sub/c.txt") is None
    assert disk(g, "cli-bucket", "tree/a.txt") == b"changed"
    # and down again
    down = os.path.join(tmp, "down")
    aws(g, "s3", "sync", "s3://cli-bucket/tree", down)
    assert sorted(os.listdir(os.path.join(down, "sub"))) == ["b.txt"]
    # mv inside the bucket: copy, then delete
    aws(g, "s3", "mv", "s3://cli-bucket/tree/a.txt", "s3://cli-bucket/moved/a.txt")
    assert disk(g, "cli-bucket", "tree/a.txt") is None
    assert disk(g, "cli-bucket", "moved/a.txt") == b"changed"
    aws(g, "s3", "mv", "s3://cli-bucket/up/big.bin", "s3://cli-bucket/moved/big.bin")
    assert disk(g, "cli-bucket", "moved/big.bin") == big
    aws(g, "s3", "rm", "--recursive", "s3://cli-bucket/")
    assert disk_keys(g, "cli-bucket") == []


def t_aws_cli_fenced(g, tmp):
    """The token as metadata (all an unmodified CLI can send): single-part
    writes are fenced; a stale one never reaches the disk."""
    need("aws")
    client(g.url).create_bucket(Bucket="clif-bucket")
    e = acquire(g, "clif-bucket")
    src = write_file(os.path.join(tmp, "small.txt"), b"fenced by metadata")
    aws(g, "s3", "cp", src, "s3://clif-bucket/k.txt", "--metadata", "fencing-token=%d" % e)
    assert disk(g, "clif-bucket", "k.txt") == b"fenced by metadata"
    aws(g, "s3api", "put-object", "--bucket", "clif-bucket", "--key", "api.txt", "--body", src,
        "--metadata", "fencing-token=%d" % e)
    assert disk(g, "clif-bucket", "api.txt") == b"fenced by metadata"
    r = harness.run(["aws", "--endpoint-url", g.url, "s3", "cp", src, "s3://clif-bucket/no.txt"],
                    env=env(), timeout=60)
    assert r.returncode != 0 and "FencingTokenMissing" in r.stderr + r.stdout, (r.stdout, r.stderr)
    assert disk(g, "clif-bucket", "no.txt") is None
    # a file over 8 MiB goes multipart and the CLI puts the metadata on the
    # create only: its parts are fenced by the upload's epoch
    big = write_file(os.path.join(tmp, "big.bin"), os.urandom(9 * MIB))
    aws(g, "s3", "cp", big, "s3://clif-bucket/big.bin", "--metadata", "fencing-token=%d" % e)
    with open(big, "rb") as f:
        assert disk(g, "clif-bucket", "big.bin") == f.read()


def t_lock_files_and_tools(g, tmp):
    """Lock files in the default layout (BUCKET/locks/BUCKET/), as README's
    "Lock files and data tools" says: listed and synced down like any key;
    a recursive rm deletes old epoch files (gc) but never the latest (409
    LockFileIsLatest), and fenced data not at all without a token (the CLI
    cannot send one on DELETE), so it exits 1 and the lock stays held."""
    need("aws")
    b = "tools-bucket"
    client(g.url).create_bucket(Bucket=b)
    for epoch in (1, 2):
        assert acquire(g, b) == epoch
        st, body = lockapi(g, b, "release", epoch=epoch)
        assert st == 200, (st, body)
    assert acquire(g, b) == 3
    latest = "locks/%s/lock-0000000003.json" % b
    for k in ("data/a.txt", "data/b.txt"):
        client(g.url, 3).put_object(Bucket=b, Key=k, Body=k.encode())
    listed = aws(g, "s3", "ls", "--recursive", "s3://%s/" % b)
    assert latest in listed and "data/a.txt" in listed, listed
    down = os.path.join(tmp, "tools-down")
    aws(g, "s3", "sync", "s3://%s" % b, down)
    assert os.path.isfile(os.path.join(down, latest)), os.listdir(down)
    r = harness.run(["aws", "--endpoint-url", g.url, "s3", "rm", "--recursive", "s3://%s/" % b],
                    env=env(), timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "LockFileIsLatest" in out and "FencingTokenMissing" in out, out
    assert disk(g, b, latest) is not None
    assert disk(g, b, "locks/%s/lock-0000000001.json" % b) is None  # gc of an old epoch
    assert disk(g, b, "data/a.txt") == b"data/a.txt"
    with urllib.request.urlopen("%s/_fence/locks/%s" % (g.url, b), timeout=10) as resp:
        body = json.loads(resp.read())
    assert body["epoch"] == 3 and body["state"] == "held", body


# ---- boto3 ----------------------------------------------------------------

def t_boto3_upload_file(g, tmp, fenced):
    bucket = "boto-f-bucket" if fenced else "boto-u-bucket"
    client(g.url).create_bucket(Bucket=bucket)
    c = client(g.url, acquire(g, bucket) if fenced else None)
    data = os.urandom(11 * MIB)
    src = write_file(os.path.join(tmp, bucket + ".bin"), data)
    cfg = TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB, max_concurrency=3)
    c.upload_file(src, bucket, "multi/part.bin", Config=cfg, ExtraArgs={"Metadata": {"x": "1"}})
    assert disk(g, bucket, "multi/part.bin") == data
    h = c.head_object(Bucket=bucket, Key="multi/part.bin")
    assert h["ETag"].endswith('-3"') and h["Metadata"] == {"x": "1"}, h
    dst = os.path.join(tmp, bucket + ".back")
    c.download_file(bucket, "multi/part.bin", dst, Config=cfg)
    with open(dst, "rb") as f:
        assert f.read() == data
    assert not os.listdir(os.path.join(g.data, bucket, ".fencegate", "uploads"))


# ---- s3cmd ----------------------------------------------------------------

def s3cmd(g, tmp, *args):
    cfg = os.path.join(tmp, "s3cfg")
    host = "127.0.0.1:%d" % g.port
    with open(cfg, "w") as f:
        f.write("[default]\naccess_key = test\nsecret_key = test\nhost_base = %s\n"
                "host_bucket = %s\nuse_https = False\nbucket_location = us-east-1\n"
                "signature_v2 = False\n" % (host, host))
    r = harness.run(["s3cmd", "-c", cfg] + list(args), env=env(), timeout=120)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


def t_s3cmd_fenced(g, tmp):
    """s3cmd sends --add-header on PUT and on CreateMultipartUpload, not on
    UploadPart or DELETE; in embedded mode a part without the token is refused (the
    proxy learns upload ids only from an upstream's answer), so fenced
    uploads here are single-part."""
    need("s3cmd")
    s3cmd(g, tmp, "mb", "s3://s3cmd-bucket")
    e = acquire(g, "s3cmd-bucket")
    tok = "--add-header=X-Fencing-Token:%d" % e
    data = os.urandom(7 * MIB)
    src = write_file(os.path.join(tmp, "s3cmd.bin"), data)
    s3cmd(g, tmp, tok, "--disable-multipart", "put", src, "s3://s3cmd-bucket/dir/big.bin")
    assert disk(g, "s3cmd-bucket", "dir/big.bin") == data
    small = write_file(os.path.join(tmp, "s3cmd.txt"), b"small")
    s3cmd(g, tmp, tok, "put", small, "s3://s3cmd-bucket/dir/small.txt")
    assert "dir/small.txt" in s3cmd(g, tmp, "ls", "--recursive", "s3://s3cmd-bucket/")
    out = os.path.join(tmp, "s3cmd.back")
    s3cmd(g, tmp, "get", "--force", "s3://s3cmd-bucket/dir/big.bin", out)
    with open(out, "rb") as f:
        assert f.read() == data
    # (s3cmd del sends no --add-header: deletes are unfenced-only with it)
    # without the token: refused, nothing written
    r = harness.run(["s3cmd", "-c", os.path.join(tmp, "s3cfg"), "put", small,
                     "s3://s3cmd-bucket/dir/no.txt"], env=env(), timeout=60)
    assert r.returncode != 0, r.stdout
    assert disk(g, "s3cmd-bucket", "dir/no.txt") is None


def t_s3cmd_fenced_by_metadata(g, tmp):
    """--add-header=x-amz-meta-fencing-token:N (signed like any x-amz-meta-)
    fences put and sync; the token is read, not stored; the holder's old
    token, once the lock moved on, changes nothing."""
    need("s3cmd")
    b = "s3cmd-meta"
    s3cmd(g, tmp, "mb", "s3://" + b)
    e = acquire(g, b)
    data = os.urandom(300 * 1024)
    src = write_file(os.path.join(tmp, "s3cmd-meta.bin"), data)
    s3cmd(g, tmp, "--add-header=x-amz-meta-fencing-token:%d" % e, "put", src, "s3://%s/m/a.bin" % b)
    assert disk(g, b, "m/a.bin") == data
    h = client(g.url).head_object(Bucket=b, Key="m/a.bin")
    assert "fencing-token" not in h["Metadata"], h["Metadata"]
    assert h["ResponseMetadata"]["HTTPHeaders"]["x-fencing-object-epoch"] == str(e), h
    tree = os.path.join(tmp, "s3cmd-meta-tree")
    os.makedirs(os.path.join(tree, "d"))
    for n in ("one.txt", "d/two.txt"):
        write_file(os.path.join(tree, n), n.encode() * 20)
    s3cmd(g, tmp, "--add-header=x-amz-meta-fencing-token:%d" % e, "sync", tree + "/",
          "s3://%s/sync/" % b)
    assert disk(g, b, "sync/one.txt") == b"one.txt" * 20
    assert disk(g, b, "sync/d/two.txt") == b"d/two.txt" * 20
    # the lock moves on: the old token is stale, the new one writes
    st, body = lockapi(g, b, "release", epoch=e)
    assert st == 200, (st, body)
    e2 = acquire(g, b)
    before = disk_state(g, b)
    small = write_file(os.path.join(tmp, "s3cmd-meta.txt"), b"zombie")
    r = harness.run(["s3cmd", "-c", os.path.join(tmp, "s3cfg"),
                     "--add-header=x-amz-meta-fencing-token:%d" % e, "put", small,
                     "s3://%s/m/a.bin" % b], env=env(), timeout=60)
    assert r.returncode != 0 and "FencingTokenStale" in r.stdout + r.stderr, (r.stdout, r.stderr)
    assert disk_state(g, b) == before
    s3cmd(g, tmp, "--add-header=x-amz-meta-fencing-token:%d" % e2, "put", small,
          "s3://%s/m/a.bin" % b)
    assert disk(g, b, "m/a.bin") == b"zombie"


def t_s3cmd_multipart(g, tmp):
    need("s3cmd")
    s3cmd(g, tmp, "mb", "s3://s3cmd-free")
    data = os.urandom(12 * MIB)
    src = write_file(os.path.join(tmp, "s3cmd-mp.bin"), data)
    s3cmd(g, tmp, "--multipart-chunk-size-mb=5", "put", src, "s3://s3cmd-free/mp.bin")
    assert disk(g, "s3cmd-free", "mp.bin") == data
    h = client(g.url).head_object(Bucket="s3cmd-free", Key="mp.bin")
    assert h["ETag"].endswith('-3"'), h
    s3cmd(g, tmp, "del", "s3://s3cmd-free/mp.bin")
    assert disk(g, "s3cmd-free", "mp.bin") is None


# ---- rclone ---------------------------------------------------------------

def rclone(g, *args):
    e = env()
    e.update({"RCLONE_CONFIG_FG_TYPE": "s3", "RCLONE_CONFIG_FG_PROVIDER": "Other",
              "RCLONE_CONFIG_FG_ENDPOINT": g.url, "RCLONE_CONFIG_FG_ACCESS_KEY_ID": "test",
              "RCLONE_CONFIG_FG_SECRET_ACCESS_KEY": "test", "RCLONE_CONFIG_FG_REGION": "us-east-1",
              "RCLONE_CONFIG": os.devnull})
    r = harness.run(["rclone", "--s3-no-check-bucket", "--retries", "1", "--low-level-retries",
                     "1"] + list(args), env=e, timeout=120)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


def t_rclone(g, tmp):
    need("rclone")
    client(g.url).create_bucket(Bucket="rclone-bucket")
    e = acquire(g, "rclone-bucket")
    hdr = ["--header", "X-Fencing-Token: %d" % e]
    data = os.urandom(12 * MIB)
    src = write_file(os.path.join(tmp, "rclone.bin"), data)
    rclone(g, *hdr, "--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M", "copyto", src,
           "fg:rclone-bucket/r/big.bin")
    assert disk(g, "rclone-bucket", "r/big.bin") == data
    assert hashlib.md5(data).hexdigest() in rclone(g, "md5sum", "fg:rclone-bucket/r/") or \
        "big.bin" in rclone(g, "ls", "fg:rclone-bucket/r/")
    tree = os.path.join(tmp, "rtree")
    os.makedirs(tree)
    for n in ("x.txt", "y.txt"):
        write_file(os.path.join(tree, n), n.encode())
    rclone(g, *hdr, "sync", tree, "fg:rclone-bucket/tree")
    assert disk(g, "rclone-bucket", "tree/x.txt") == b"x.txt"
    os.remove(os.path.join(tree, "x.txt"))
    rclone(g, *hdr, "sync", tree, "fg:rclone-bucket/tree")
    assert disk(g, "rclone-bucket", "tree/x.txt") is None
    assert disk(g, "rclone-bucket", "tree/y.txt") == b"y.txt"
    rclone(g, *hdr, "delete", "fg:rclone-bucket/r")
    assert disk(g, "rclone-bucket", "r/big.bin") is None


def t_rclone_unfenced(g, tmp):
    """copy, sync, lsf and purge with no token (unrouted_writes allow);
    nothing is stamped."""
    need("rclone")
    b = "rclone-free"
    client(g.url).create_bucket(Bucket=b)
    tree = os.path.join(tmp, "rutree")
    os.makedirs(os.path.join(tree, "x"))
    for n in ("u1.bin", "x/u2.bin"):
        write_file(os.path.join(tree, n), n.encode() * 100)
    rclone(g, "copy", tree, "fg:%s/ru" % b)
    assert disk_keys(g, b) == ["ru/u1.bin", "ru/x/u2.bin"]
    assert disk(g, b, "ru/x/u2.bin") == b"x/u2.bin" * 100
    h = client(g.url).head_object(Bucket=b, Key="ru/u1.bin")
    assert "x-fencing-object-epoch" not in h["ResponseMetadata"]["HTTPHeaders"], h
    os.remove(os.path.join(tree, "u1.bin"))
    rclone(g, "sync", tree, "fg:%s/ru" % b)
    assert disk_keys(g, b) == ["ru/x/u2.bin"]
    assert sorted(rclone(g, "lsf", "-R", "fg:%s/ru" % b).split()) == ["x/", "x/u2.bin"]
    rclone(g, "purge", "fg:%s/ru" % b)
    assert disk_keys(g, b) == []


# ---- @aws-sdk/lib-storage -------------------------------------------------

def js(g, op, **args):
    r = harness.run(["node", os.path.join(JS, "s3client.mjs"), g.url, op, json.dumps(args)],
                    env=env(), timeout=120)
    assert r.returncode == 0, (r.stdout, r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def t_lib_storage(g, tmp):
    need("node")
    assert os.path.isdir(os.path.join(JS, "node_modules", "@aws-sdk", "lib-storage")), \
        "tests/js/node_modules is missing (make deps-test installs it)"
    client(g.url).create_bucket(Bucket="js-bucket")
    e = acquire(g, "js-bucket")
    data = os.urandom(11 * MIB)
    src = write_file(os.path.join(tmp, "js.bin"), data)
    r = js(g, "upload", bucket="js-bucket", key="lib/storage.bin", file=src,
           headers={"X-Fencing-Token": str(e)}, metadata={"via": "lib-storage"})
    assert r["ok"], r
    assert disk(g, "js-bucket", "lib/storage.bin") == data
    h = client(g.url).head_object(Bucket="js-bucket", Key="lib/storage.bin")
    assert h["ETag"].endswith('-3"') and h["Metadata"] == {"via": "lib-storage"}, h
    r = js(g, "upload", bucket="js-bucket", key="lib/nope.bin", file=src)
    assert not r["ok"] and r["status"] == 428, r
    assert disk(g, "js-bucket", "lib/nope.bin") is None


CASES = (("aws cli unfenced: cp multipart, sync --delete, mv, rm", t_aws_cli_unfenced, "free"),
         ("aws cli fenced by metadata", t_aws_cli_fenced, "fenced"),
         ("lock files and data tools: ls, sync, rm --recursive", t_lock_files_and_tools,
          "fenced"),
         ("boto3 upload_file multipart, fenced", lambda g, t: t_boto3_upload_file(g, t, True),
          "fenced"),
         ("boto3 upload_file multipart, unfenced",
          lambda g, t: t_boto3_upload_file(g, t, False), "free"),
         ("s3cmd fenced by header", t_s3cmd_fenced, "fenced"),
         ("s3cmd fenced by metadata: put, sync, stale refused", t_s3cmd_fenced_by_metadata,
          "fenced"),
         ("s3cmd multipart, unfenced", t_s3cmd_multipart, "free"),
         ("rclone fenced by header, multipart, sync", t_rclone, "fenced"),
         ("rclone unfenced: copy, sync, lsf, purge", t_rclone_unfenced, "free"),
         ("lib-storage Upload, fenced", t_lib_storage, "fenced"))


if __name__ == "__main__":
    sys.exit(main_gates("test_local_clients", CASES))
