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
(list_object_versions), not from the proxy's answer alone. A third proxy,
behind a relay that slows its upstream, shows a versioned batch refused
key by key once its epoch is superseded while it runs. It does not test
the embedded store (test_local_clients2.py does: version "null").
Prints 'N passed, N failed'."""
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import run  # noqa: E402
from relay import Relay  # noqa: E402
from test_clients_s3 import boto3_client as client  # noqa: E402

FBUCKET = "versions-fenced"
UBUCKET = "versions-unfenced"
RBUCKET = "versions-race"       # its own lock: t_fenced leaves FBUCKET's held
RACE_KEYS, RACE_VERSIONS = 60, 5  # 300 versions, one DeleteObjects (at most 1000)
RACE_DELAY_S = 0.005            # the relay's delay on every chunk it carries
RACE_STARTED = 20               # version deletes carried before the lock moves


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
            for b in (FBUCKET, UBUCKET, RBUCKET):
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


def carried(relay, methods, bucket, prefix, versioned):
    """The heads (method, target, fields) of the requests for keys under
    prefix whose method is one of methods that the relay carried (every
    request head it saw, in order, before the upstream did): with versioned
    those naming a version (versionId=), else those naming none."""
    with relay.lock:
        heads = list(relay.heads)
    path = "/%s/%s" % (bucket, prefix)
    return [h for h in heads if h[0] in methods and h[1].startswith(path)
            and ("versionId=" in h[1]) == versioned]


def version_deletes(relay, bucket, prefix):
    """How many DELETE ?versionId= of keys under prefix the relay carried."""
    return len(carried(relay, ("DELETE",), bucket, prefix, True))


def supersede_mid_batch(g, bucket, e1, batch, started, moved):
    """Sends one DeleteObjects naming batch under epoch e1 of bucket's lock,
    from a thread; once started() holds (polled while the batch runs), ends
    e1's lease (released by another party, as a break or a lapse would end
    it) and acquires E+1 through the lock API, which raises the proxy's
    high-water mark; then calls moved() and awaits the answer. Returns
    (E+1, whether the batch still ran when the acquire answered, the
    answer). Fails if the batch ends before started() holds, started()
    does not hold within 60 s or the batch answers nothing in 120 s."""
    out = {}

    def send():
        try:
            out["res"] = client(g, e1).delete_objects(Bucket=bucket, Delete={"Objects": batch})
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            out["exc"] = e

    worker = threading.Thread(target=send, daemon=True)
    t0 = time.monotonic()
    worker.start()
    while not started():
        assert worker.is_alive(), "the batch ended before the lock moved: %s" % out
        assert time.monotonic() - t0 < 60, "the batch did not start deleting"
        time.sleep(0.01)
    st, j = lock_api(g, bucket, "release", {"epoch": e1})
    assert st == 200, (st, j)
    e2 = acquire(g, bucket)
    running = worker.is_alive()
    moved()
    worker.join(120)
    assert not worker.is_alive(), "the batch did not answer in 120 s"
    assert e2 > e1, (e1, e2)
    assert "exc" not in out, out.get("exc")
    return e2, running, out["res"]


def superseded_answer(res, batch):
    """A superseded batch's answer as (deleted, refused): the batch indexes
    answered Deleted and those answered Error, each ascending. Every Error
    must be FencingTokenStale naming the supersession, and each entry of
    the batch (key, version) answered exactly once."""
    def entry(d):
        return d["Key"], d.get("VersionId")
    order = {entry(o): i for i, o in enumerate(batch)}
    errors = res.get("Errors", [])
    assert all(x["Code"] == "FencingTokenStale" and "superseded" in x["Message"]
               for x in errors), errors[:3]
    deleted = sorted(order[entry(d)] for d in res.get("Deleted", []))
    refused = sorted(order[entry(x)] for x in errors)
    assert sorted(deleted + refused) == list(range(len(batch))), \
        "each entry answered once: %d deleted, %d stale, %d named" % (
            len(deleted), len(refused), len(batch))
    return deleted, refused


def t_superseded_mid_batch(s):
    """A worker holding epoch E sends one DeleteObjects naming 300 versions;
    while it runs, E's lease is ended (released by another party, as a
    break or a lapse would end it) and E+1 acquired through the lock API,
    which raises the proxy's high-water mark. delete_version's superseded()
    must refuse every key it reaches after that, FencingTokenStale, rather
    than go on deleting under a token that is no longer the lock's.

    Timing, made deterministic rather than retried: a third proxy reaches
    moto through tests/relay.py delaying every chunk by RACE_DELAY_S, so
    each version delete costs tens of milliseconds and the batch seconds;
    and the lock moves only once the relay has carried RACE_STARTED of the
    batch's deletes. The release and acquire take a handful of store calls
    against ~280 deletes still to come, so the move lands mid-batch by
    construction; if it did not (the acquire answered after the batch) the
    test fails saying so instead of passing vacuously.

    Checked on moto itself (list_object_versions, not through a proxy):
    every version answered Deleted is gone, every one answered
    FencingTokenStale is still there, nothing else changed. Checked on the
    relay: exactly one upstream DELETE per Deleted version (none for a
    refused one), at most one sent after the acquire answered (a delete
    whose check passed just before the mark rose), and the refused keys
    are a suffix of the batch (the mark only rises). test_delete_plain.py
    does the same for keys named without a version."""
    m = s.moto.client()
    for i in range(RACE_KEYS):
        for v in range(RACE_VERSIONS):
            m.put_object(Bucket=RBUCKET, Key="race/%03d" % i, Body=b"%d v%d" % (i, v))
    held = s.versions(RBUCKET, "race/")
    assert len(held) >= RACE_KEYS * RACE_VERSIONS, len(held)
    batch = [{"Key": k, "VersionId": v} for k, v, _ in held]
    relay = Relay(s.moto.port)
    g = None
    try:
        g = harness.Fencegate("--upstream", relay.url, data=False)
        e1 = acquire(g, RBUCKET)
        seen = {}
        relay.delay = RACE_DELAY_S
        e2, batch_running, res = supersede_mid_batch(
            g, RBUCKET, e1, batch,
            lambda: version_deletes(relay, RBUCKET, "race/") >= RACE_STARTED,
            lambda: seen.update(learned=version_deletes(relay, RBUCKET, "race/")))
        sent = version_deletes(relay, RBUCKET, "race/")
        relay.delay = 0
        learned = seen["learned"]
        deleted, stale = superseded_answer(res, batch)
        print("     epoch %d superseded by %d after %d deletes; answer: %d deleted, "
              "%d FencingTokenStale; upstream deletes %d, %d after the acquire answered"
              % (e1, e2, learned, len(deleted), len(stale), sent, sent - learned))
        assert batch_running, "the acquire answered after the batch had ended"
        assert stale, "no key refused stale: the batch went on under a superseded epoch"
        assert len(deleted) >= RACE_STARTED, len(deleted)
        assert max(deleted) < min(stale), "a key deleted after one was refused"
        # on moto: the Deleted are gone, the refused still there, nothing else
        gone = {(batch[i]["Key"], batch[i]["VersionId"]) for i in deleted}
        assert s.versions(RBUCKET, "race/") == [h for h in held if h[:2] not in gone]
        # upstream: one DELETE per Deleted version, none once the move was
        # learned but the one whose check may have passed just before
        assert sent == len(deleted), (sent, len(deleted))
        assert sent - learned <= 1, "%d deletes sent after the acquire answered" % (
            sent - learned)
    finally:
        relay.delay = 0
        if g:
            g.close()
        relay.close()


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
            ("fenced: a versioned batch whose epoch is superseded while it runs deletes "
             "the versions before the move, refuses the rest FencingTokenStale (moto "
             "keeps them)", t_superseded_mid_batch),
        ]:
            r.check(label, fn, s)
    finally:
        s.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
