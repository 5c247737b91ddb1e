#!/usr/bin/env python3
"""End-to-end: DeleteObjects naming versions (<VersionId>) through
fencegate's S3 mode in front of moto, on versioned buckets.

Two proxies on one moto_server, as test_clients_s3.py has them: FENCED is
fencegate --upstream (no config: every write under /BUCKET/ fenced by lock
BUCKET), UNFENCED is -c with unrouted_writes "allow". Each versioned entry
of a DeleteObjects is treated as a single DELETE ?versionId= would be:
fenced at lock level (the request's token), forwarded where unfenced.
Driven by the version-aware cleanups real clients run: boto3's
bucket.object_versions.delete() and `aws s3api delete-objects` fed by
`list-object-versions`. Every outcome is read back from moto directly
(list_object_versions), not from the proxy's answer alone. It does not
test the embedded store (test_local_clients2.py does: version "null").
Prints 'N passed, N failed'."""
import json
import os
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import run  # noqa: E402
from test_clients_s3 import boto3_client as client  # noqa: E402

FBUCKET = "versions-fenced"
UBUCKET = "versions-unfenced"


def lock_api(g, name, op, body):
    req = urllib.request.Request(
        g.url + "/_fence/locks/%s/%s" % (name, op), method="POST",
        data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def acquire(g, name):
    st, j = lock_api(g, name, "acquire", {"ttlMs": 600000, "holder": "versions-test"})
    assert st == 200, (st, j)
    return j["epoch"]


class Setup:
    def __init__(self):
        self.moto = harness.Moto()
        self.fenced = self.unfenced = None
        try:
            m = self.moto.client()
            for b in (FBUCKET, UBUCKET):
                m.create_bucket(Bucket=b)
                m.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
            self.fenced = harness.Fencegate("--upstream", self.moto.url, data=False)
            self.unfenced = harness.Fencegate(data=False, config={
                "upstream": {"endpoint": self.moto.url, "region": "us-east-1"},
                "unrouted_writes": "allow"})
        except BaseException:
            self.close()
            raise

    def versions(self, bucket, prefix):
        """Sorted (key, version id, is a delete marker) of everything moto
        holds under prefix, read from moto itself."""
        out, kw = [], {"Bucket": bucket, "Prefix": prefix}
        m = self.moto.client()
        while True:
            page = m.list_object_versions(**kw)
            out += [(v["Key"], v["VersionId"], False) for v in page.get("Versions", [])]
            out += [(v["Key"], v["VersionId"], True) for v in page.get("DeleteMarkers", [])]
            if not page.get("IsTruncated"):
                return sorted(out)
            kw["KeyMarker"] = page["NextKeyMarker"]
            kw["VersionIdMarker"] = page["NextVersionIdMarker"]

    def seed(self, bucket, prefix, token=None, n=3):
        """n keys of two versions each and a delete marker on the first,
        written through the proxy; returns what moto then holds."""
        g = self.fenced if token is not None else self.unfenced
        c = client(g, token)
        for i in range(n):
            for v in (1, 2):
                c.put_object(Bucket=bucket, Key="%s%d" % (prefix, i),
                             Body=("%d v%d" % (i, v)).encode())
        c.delete_object(Bucket=bucket, Key=prefix + "0")
        held = self.versions(bucket, prefix)
        assert len(held) == 2 * n + 1 and sum(m for _, _, m in held) == 1, held
        return held

    def close(self):
        for g in (self.fenced, self.unfenced):
            if g:
                g.close()
        self.moto.close()


def t_boto3_unfenced(s):
    """bucket.object_versions.delete() (list_object_versions, then
    DeleteObjects naming every version and delete marker) empties the
    prefix on moto through the unfenced proxy."""
    import boto3
    from botocore.config import Config
    s.seed(UBUCKET, "boto/")
    r = boto3.resource("s3", endpoint_url=s.unfenced.url, region_name="us-east-1",
                       aws_access_key_id="test", aws_secret_access_key="test",
                       config=Config(s3={"addressing_style": "path"}))
    res = r.Bucket(UBUCKET).object_versions.filter(Prefix="boto/").delete()
    errors = [e for page in res for e in page.get("Errors", [])]
    deleted = [d for page in res for d in page.get("Deleted", [])]
    assert not errors and len(deleted) == 7, res
    assert s.versions(UBUCKET, "boto/") == []


def t_aws_cli_unfenced(s):
    """`aws s3api list-object-versions` then `aws s3api delete-objects` with
    what it listed, both through the unfenced proxy: moto holds nothing."""
    held = s.seed(UBUCKET, "cli/")
    env = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
               AWS_DEFAULT_REGION="us-east-1", AWS_MAX_ATTEMPTS="1")
    ep = ["--endpoint-url", s.unfenced.url]
    p = run(["aws", "s3api", "list-object-versions", "--bucket", UBUCKET, "--prefix", "cli/",
             "--output", "json"] + ep, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    listed = json.loads(p.stdout)
    objects = [{"Key": v["Key"], "VersionId": v["VersionId"]}
               for v in listed.get("Versions", []) + listed.get("DeleteMarkers", [])]
    assert sorted((o["Key"], o["VersionId"]) for o in objects) == \
        sorted((k, v) for k, v, _ in held)
    p = run(["aws", "s3api", "delete-objects", "--bucket", UBUCKET, "--output", "json",
             "--delete", json.dumps({"Objects": objects})] + ep, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    out = json.loads(p.stdout)
    assert not out.get("Errors") and len(out.get("Deleted", [])) == len(objects), out
    assert s.versions(UBUCKET, "cli/") == []


def t_fenced(s):
    """On a fenced bucket: a stale token deletes no version (moto keeps
    every one); the current token deletes each version named, a key
    without a version as a fenced DELETE does (a delete marker), and
    refuses a lock file's version per key (it stays)."""
    from botocore.exceptions import ClientError
    g = s.fenced
    e1 = acquire(g, FBUCKET)
    held = s.seed(FBUCKET, "f/", token=e1)
    named = {"Objects": [{"Key": k, "VersionId": v} for k, v, _ in held]}
    st, j = lock_api(g, FBUCKET, "release", {"epoch": e1})
    assert st == 200, (st, j)
    e2 = acquire(g, FBUCKET)
    assert e2 > e1
    # the stale token: refused before any version is touched
    try:
        client(g, e1).delete_objects(Bucket=FBUCKET, Delete=named)
        raise AssertionError("a stale token deleted versions")
    except ClientError as e:
        assert e.response["Error"]["Code"] == "FencingTokenStale", e.response["Error"]
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 409
    assert s.versions(FBUCKET, "f/") == held
    # no token at all: the same, refused whole
    try:
        client(g).delete_objects(Bucket=FBUCKET, Delete=named)
        raise AssertionError("no token deleted versions")
    except ClientError as e:
        assert e.response["Error"]["Code"] == "FencingTokenMissing", e.response["Error"]
    assert s.versions(FBUCKET, "f/") == held
    # the current token: every version named goes; the lock file's version
    # is refused per key
    lock = "locks/%s/lock-%010d.json" % (FBUCKET, e2)
    lock_versions = s.versions(FBUCKET, lock)
    assert lock_versions, "the lock file is on moto"
    batch = named["Objects"] + [{"Key": lock, "VersionId": lock_versions[0][1]}]
    res = client(g, e2).delete_objects(Bucket=FBUCKET, Delete={"Objects": batch})
    assert sorted((d["Key"], d["VersionId"]) for d in res.get("Deleted", [])) == \
        sorted((k, v) for k, v, _ in held), res
    assert [(x["Key"], x["Code"]) for x in res.get("Errors", [])] == [(lock, "AccessDenied")], res
    assert s.versions(FBUCKET, "f/") == []
    assert s.versions(FBUCKET, lock) == lock_versions
    # a key without a version beside a versioned one, current token: the
    # first is deleted as a fenced DELETE is (moto adds a delete marker),
    # the second version is gone
    c = client(g, e2)
    c.put_object(Bucket=FBUCKET, Key="f/a", Body=b"a")
    c.put_object(Bucket=FBUCKET, Key="f/b", Body=b"b1")
    c.put_object(Bucket=FBUCKET, Key="f/b", Body=b"b2")
    b_versions = [v for k, v, _ in s.versions(FBUCKET, "f/b")]
    res = c.delete_objects(Bucket=FBUCKET, Delete={"Objects": [
        {"Key": "f/a"}, {"Key": "f/b", "VersionId": b_versions[0]}]})
    assert not res.get("Errors") and len(res.get("Deleted", [])) == 2, res
    after = s.versions(FBUCKET, "f/")
    assert sorted(m for k, _, m in after if k == "f/a") == [False, True], after
    assert [v for k, v, _ in after if k == "f/b"] == b_versions[1:], after


def main():
    r = harness.Runner("e2e delete-versions")
    s = Setup()
    try:
        for label, fn in [
            ("boto3 object_versions.delete() through the unfenced proxy empties moto",
             t_boto3_unfenced),
            ("aws s3api delete-objects fed by list-object-versions, unfenced", t_aws_cli_unfenced),
            ("fenced: stale and missing tokens delete no version; the current token "
             "deletes each, a lock file's version refused per key", t_fenced),
        ]:
            r.check(label, fn, s)
    finally:
        s.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
