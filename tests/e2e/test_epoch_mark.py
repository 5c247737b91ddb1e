#!/usr/bin/env python3
"""Epochs never go backwards, even when the lock files are gone. Epochs 1-3
are taken through the lock API and an object is written under epoch 3; then
the lock files are deleted out of band (directly in moto with boto3, or in
the embedded store's data directory), the proxy is restarted, and the next
acquire must return an epoch above 3 whose holder can overwrite the object
stamped 3 (asserted on what moto / the data directory holds), while token 3
is stale. The epoch mark itself cannot be written or deleted through the
proxy's S3 API. Prints 'N passed, N failed'."""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from localgate import acquire, client, error_of, lockapi  # noqa: E402

BUCKET = "mark-bucket"
MARK_KEY = "fencing-marks/%s/high-water.json" % BUCKET


def take_three(g):
    """Epochs 1, 2, 3 through the lock API; object "obj" written under 3."""
    for want in (1, 2, 3):
        e = acquire(g, BUCKET, holder="w%d" % want)
        assert e == want, (e, want)
        client(g.url, token=e).put_object(Bucket=BUCKET, Key="obj", Body=b"epoch%d" % e)
        if want < 3:
            st, body = lockapi(g, BUCKET, "release", epoch=e)
            assert st == 200, (st, body)
    st, body = lockapi(g, BUCKET, "release", epoch=3)
    assert st == 200, (st, body)


def after_restart(g, stamp_of, body_of):
    """The next acquire is above 3, its holder overwrites the object stamped
    3 (stamp_of(key) reads the stamp where the data lives, None where it
    cannot; body_of(key) its bytes), token 3 is stale."""
    e = acquire(g, BUCKET, holder="after")
    assert e >= 4, "epoch restarted: %d" % e
    assert stamp_of("obj") in ("3", None), stamp_of("obj")
    assert body_of("obj") == b"epoch3"
    client(g.url, token=e).put_object(Bucket=BUCKET, Key="obj", Body=b"new holder")
    assert stamp_of("obj") in (str(e), None), stamp_of("obj")
    assert body_of("obj") == b"new holder"
    code, status = error_of(lambda: client(g.url, token=3).put_object(
        Bucket=BUCKET, Key="obj", Body=b"zombie 3"))
    assert status == 409 and code == "FencingTokenStale", (code, status)
    assert body_of("obj") == b"new holder"
    # the mark is the proxy's: clients through the S3 API only read it
    c = client(g.url, token=e)
    mark = json.loads(c.get_object(Bucket=BUCKET, Key=MARK_KEY)["Body"].read())
    assert mark["epoch"] == e, mark
    code, status = error_of(lambda: c.put_object(Bucket=BUCKET, Key=MARK_KEY,
                                                 Body=b'{"epoch":9999999999}'))
    assert status == 403 and code == "EpochMarkReserved", (code, status)
    code, status = error_of(lambda: c.delete_object(Bucket=BUCKET, Key=MARK_KEY))
    assert status == 403 and code == "EpochMarkReserved", (code, status)
    res = c.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": MARK_KEY}]})
    assert not res.get("Deleted"), res
    mark = json.loads(c.get_object(Bucket=BUCKET, Key=MARK_KEY)["Body"].read())
    assert mark["epoch"] == e, mark
    return e


def test_embedded():
    tmp = harness.TempDir()
    data = os.path.join(tmp.path, "data")
    os.mkdir(data)
    g = None
    try:
        g = harness.Fencegate("--data", data, "--access-log", "off", data=False)
        client(g.url).create_bucket(Bucket=BUCKET)
        take_three(g)
        # the object is stamped 3: an older token cannot overwrite it
        code, status = error_of(lambda: client(g.url, token=2).put_object(
            Bucket=BUCKET, Key="obj", Body=b"zombie 2"))
        assert status == 409, (code, status)
        g.close()
        g = None
        with open(os.path.join(data, BUCKET, MARK_KEY)) as f:
            assert json.load(f)["epoch"] == 3
        shutil.rmtree(os.path.join(data, BUCKET, "locks"))
        g = harness.Fencegate("--data", data, "--access-log", "off", data=False)

        def body_of(key):
            with open(os.path.join(data, BUCKET, key), "rb") as f:
                return f.read()
        # the embedded store keeps its stamps in its own sidecars
        e = after_restart(g, lambda key: None, body_of)
        with open(os.path.join(data, BUCKET, MARK_KEY)) as f:
            assert json.load(f)["epoch"] == e
        assert g.alive()
    finally:
        if g:
            g.close()
        tmp.close()


def test_moto():
    moto = harness.Moto()
    g = None
    try:
        moto.create_bucket(BUCKET)
        s3 = moto.client()
        g = harness.Fencegate("--upstream", moto.url, "--access-log", "off", data=False)
        take_three(g)
        g.close()
        g = None
        assert json.loads(s3.get_object(Bucket=BUCKET, Key=MARK_KEY)["Body"].read())["epoch"] == 3
        # out of band, straight on the bucket: every lock file gone
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="locks/")["Contents"]]
        assert len(keys) == 3, keys
        s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": k} for k in keys]})
        assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET, Prefix="locks/")
        g = harness.Fencegate("--upstream", moto.url, "--access-log", "off", data=False)

        def stamp_of(key):
            return s3.head_object(Bucket=BUCKET, Key=key)["Metadata"].get("fencing-epoch")

        def body_of(key):
            return s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        e = after_restart(g, stamp_of, body_of)
        assert json.loads(s3.get_object(Bucket=BUCKET, Key=MARK_KEY)["Body"].read())["epoch"] == e
        assert s3.get_object(Bucket=BUCKET, Key="obj")["Body"].read() == b"new holder"
        # the files gone once more, and fencectl through the proxy's S3 API:
        # the lock-file guard counts the mark, so mark + 1 is the next epoch
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="locks/")["Contents"]]
        s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": k} for k in keys]})
        env = dict(os.environ, **harness.CREDS)
        p = harness.run([os.path.join(harness.BIN, "fencectl"), "--store", "s3://" + BUCKET,
                         "--endpoint", g.url, "acquire", BUCKET, "--holder", "ctl"], env=env)
        assert p.returncode == 0 and int(p.stdout.split()[-1]) == e + 1, (e, p.stdout, p.stderr)
        assert g.alive()
    finally:
        if g:
            g.close()
        moto.close()


def test_fencectl_direct():
    """The library itself, no proxy: fencectl on moto and on a directory."""
    moto, tmp = harness.Moto(), harness.TempDir()
    try:
        moto.create_bucket("ctl-mark")
        s3 = moto.client()
        env = dict(os.environ, **harness.CREDS)
        stores = [(["--store", "s3://ctl-mark", "--endpoint", moto.url],
                   lambda: [o["Key"] for o in s3.list_objects_v2(
                       Bucket="ctl-mark", Prefix="locks/").get("Contents", [])],
                   lambda keys: s3.delete_objects(Bucket="ctl-mark", Delete={
                       "Objects": [{"Key": k} for k in keys]})),
                  (["--store", "file://" + tmp.path],
                   lambda: sorted(os.listdir(os.path.join(tmp.path, "locks", "jobs"))),
                   lambda keys: shutil.rmtree(os.path.join(tmp.path, "locks")))]
        ctl = os.path.join(harness.BIN, "fencectl")
        for args, files, delete in stores:
            for want in (1, 2, 3):
                p = harness.run([ctl] + args + ["acquire", "jobs", "--holder", "h"], env=env)
                assert p.returncode == 0 and int(p.stdout.split()[-1]) == want, (p.stdout,
                                                                                 p.stderr)
                p = harness.run([ctl] + args + ["release", "jobs", str(want)], env=env)
                assert p.returncode == 0, p.stderr
            keys = files()
            assert len(keys) == 3, keys
            delete(keys)
            p = harness.run([ctl] + args + ["acquire", "jobs", "--holder", "h"], env=env)
            assert p.returncode == 0, p.stderr
            assert int(p.stdout.split()[-1]) == 4, (args, p.stdout)
    finally:
        moto.close()
        tmp.close()


def main():
    r = harness.Runner("e2e epoch mark")
    r.check("fencectl, no proxy (moto, a directory): files deleted, next epoch 4",
            test_fencectl_direct)
    r.check("embedded store: lock files deleted, restart, next epoch above 3", test_embedded)
    r.check("moto: lock files deleted with boto3, restart, next epoch above 3", test_moto)
    r.finish()
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
