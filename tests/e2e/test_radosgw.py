#!/usr/bin/env python3
"""End-to-end fencing in front of a real S3 server: Ceph's radosgw.

Starts a single-node Ceph cluster and radosgw (tests/radosgw.py, ~16 s),
and bin/fencegate in front of it. radosgw honours If-None-Match: * on PUT
and an If-Match with a bare ETag, answers 412 to a quoted If-Match that
matches, and ignores DELETE's If-Match and the If-None-Match of a copy
destination and of CompleteMultipartUpload. The proxy's self-test finds
that out; fencegate then serves PUT (spelling If-Match bare) and refuses
fenced DELETE, DeleteObjects and CompleteMultipartUpload with 501
NotImplemented naming the missing condition (CopyObject is reported as
unguarded and still forwarded: lock/store/dialect.h BACKEND_ENFORCED). Every assertion on
storage reads radosgw directly with boto3, never through the proxy.

The zombie trials (a replica that has not seen the newer epoch forwards
an old token) run on radosgw and on moto, and print per backend how many
were refused. A radosgw that cannot start is a failure, not a skip.
Prints 'N passed, N failed'."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import radosgw  # noqa: E402
from test_fencing import (Gate, acquire, api, boto_proxy, expect, moto_body,  # noqa: E402
                          release, req, s3code)

ZOMBIE_TRIALS = 10
REFUSED = {}  # backend -> (refused, trials)


def tok(e):
    return {"X-Fencing-Token": str(e)}


def wait_healthy(gate, timeout=30):
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st, j = api(gate.port, "GET", "/_fence/health")
        if st == 200:
            return j
        time.sleep(0.1)
    raise AssertionError("proxy not healthy: %s\n%s" % (j, gate.logtext()[-2000:]))


def complete(s3, bucket, key, upload_id, etag):
    """CompleteMultipartUpload of one part: (status, error code, message)."""
    try:
        s3.complete_multipart_upload(
            Bucket=bucket, Key=key, UploadId=upload_id,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
        return 200, "", ""
    except s3.exceptions.ClientError as err:
        return (err.response["ResponseMetadata"]["HTTPStatusCode"],
                err.response["Error"]["Code"], err.response["Error"].get("Message", ""))


def test_health(rgw, gate):
    j = wait_healthy(gate)
    caps = j.get("capabilities", {})
    expect(caps.get("put_if_none_match") is True and caps.get("race") is True and
           caps.get("date") is True, "PUT conditions, Date and the race hold: %s" % caps)
    expect(caps.get("put_if_match_quoted") is False and caps.get("put_if_match_bare") is True,
           "If-Match only bare: %s" % caps)
    expect(caps.get("delete_if_match") is False and caps.get("copy_if_none_match") is False
           and caps.get("complete_multipart_if_none_match") is False,
           "DELETE, copy and completion conditions ignored: %s" % caps)
    expect(j.get("if_match") == "bare", "the proxy spells If-Match bare: %s" % j)
    refused = j.get("refused_operations", {})
    expect(refused.get("delete") == "backend ignores If-Match on DELETE" and
           "complete_multipart" in refused and "put" not in refused and "lock" not in refused,
           "refused operations: %s" % refused)
    # copies are measured, reported, and (for now) forwarded: see dialect.h
    expect("copy" in j.get("unguarded_operations", {}) and "copy" not in refused,
           "copy reported as unguarded: %s" % j)
    log = gate.logtext()
    expect(log.count("backend capability delete_if_match: MISSING") == 1,
           "capabilities logged once per process (2 workers):\n%s" % log[-3000:])


def test_writes(rgw, gate):
    b = "rgw-writes"
    rgw.create_bucket(b)
    e1 = acquire(gate.port, b, "w1")
    st, h, d = req(gate.port, "PUT", "/%s/k" % b, b"v1", tok(e1))
    expect(st == 200, "first write: %s %s" % (st, d))
    body, meta = moto_body(rgw, b, "k")
    expect(body == b"v1" and meta.get("fencing-epoch") == str(e1), "stored: %r %s" % (body, meta))
    # the holder overwrites: a conditioned write (If-Match its ETag, bare)
    st, h, d = req(gate.port, "PUT", "/%s/k" % b, b"v2", tok(e1))
    expect(st == 200, "fenced overwrite by the holder: %s %s" % (st, d))
    expect(moto_body(rgw, b, "k")[0] == b"v2", "overwrite landed")
    # a SigV4 client through the proxy
    s3 = boto_proxy(gate.url)
    s3.put_object(Bucket=b, Key="k2", Body=b"sdk", Metadata={"fencing-token": str(e1)})
    expect(moto_body(rgw, b, "k2")[0] == b"sdk", "boto3 put_object landed")
    release(gate.port, b, e1)
    e2 = acquire(gate.port, b, "w2")
    st, h, d = req(gate.port, "PUT", "/%s/k" % b, b"stale", tok(e1))
    expect(st == 409 and s3code(d) == "FencingTokenStale", "stale write: %s %s" % (st, d))
    expect(moto_body(rgw, b, "k")[0] == b"v2", "the stale write never reached radosgw")
    st, h, d = req(gate.port, "PUT", "/%s/k" % b, b"v3", tok(e2))
    expect(st == 200, "write under the new epoch: %s %s" % (st, d))
    # DELETE: radosgw ignores its If-Match, so a fenced one is refused
    st, h, d = req(gate.port, "DELETE", "/%s/k" % b, b"", tok(e2))
    expect(st == 501 and s3code(d) == "NotImplemented" and
           b"backend ignores If-Match on DELETE" in d, "fenced DELETE refused: %s %s" % (st, d))
    expect(moto_body(rgw, b, "k")[0] == b"v3", "DELETE refused: the object is kept")
    s3.meta.events.register("before-sign.s3.DeleteObjects",
                            lambda request, **kw: request.headers.add_header(
                                "X-Fencing-Token", str(e2)))
    try:
        s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "k"}, {"Key": "k2"}]})
        raise AssertionError("DeleteObjects accepted")
    except s3.exceptions.ClientError as err:
        expect(err.response["Error"]["Code"] == "NotImplemented", str(err))
    expect(moto_body(rgw, b, "k2")[0] == b"sdk", "DeleteObjects refused: nothing deleted")
    # a batch of versions only needs no condition: each is deleted by its id
    # (version "null" of an unversioned bucket is the object)
    res = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "k2", "VersionId": "null"}]})
    expect(not res.get("Errors") and [d["Key"] for d in res.get("Deleted", [])] == ["k2"],
           "DeleteObjects of a version: %s" % res)
    expect(moto_body(rgw, b, "k2")[0] is None, "the version is gone from radosgw")
    s3.put_object(Bucket=b, Key="k2", Body=b"sdk", Metadata={"fencing-token": str(e2)})
    # CopyObject: radosgw ignores the destination's condition; the copy is
    # forwarded (not yet enforced, dialect.h) and stamped; a stale one refused
    s3.copy_object(Bucket=b, Key="copy", CopySource={"Bucket": b, "Key": "k"},
                   Metadata={"fencing-token": str(e2)}, MetadataDirective="REPLACE")
    body, meta = moto_body(rgw, b, "copy")
    expect(body == b"v3" and meta.get("fencing-epoch") == str(e2), "copy: %r %s" % (body, meta))
    try:
        s3.copy_object(Bucket=b, Key="copy2", CopySource={"Bucket": b, "Key": "k"},
                       Metadata={"fencing-token": str(e1)}, MetadataDirective="REPLACE")
        raise AssertionError("stale copy accepted")
    except s3.exceptions.ClientError as err:
        expect(err.response["Error"]["Code"] == "FencingTokenStale", str(err.response))
    expect(moto_body(rgw, b, "copy2")[0] is None, "the stale copy never landed")
    # reads pass through
    expect(s3.get_object(Bucket=b, Key="k")["Body"].read() == b"v3", "GET through the proxy")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=b).get("Contents", [])]
    expect("k" in keys and "k2" in keys, "ListObjectsV2 through the proxy: %s" % keys)


def test_uncached_existing(rgw, gate):
    """Keys written straight to radosgw, never through the proxy: the
    proxy's unread create gets radosgw's 412, its HEAD (on the event loop's
    upstream client, to the write's own path) reads the object, and the
    write lands with If-Match in radosgw's spelling, or is refused when the
    object carries a newer epoch. Checked on what radosgw holds."""
    b = "rgw-uncached"
    rgw.create_bucket(b)
    direct = rgw.client()
    e = acquire(gate.port, b, "w")
    direct.put_object(Bucket=b, Key="plain", Body=b"direct")
    st, h, d = req(gate.port, "PUT", "/%s/plain" % b, b"through", tok(e))
    expect(st == 200, "uncached existing key: %s %s" % (st, d))
    body, meta = moto_body(rgw, b, "plain")
    expect(body == b"through" and meta.get("fencing-epoch") == str(e),
           "replaced and stamped: %r %s" % (body, meta))
    direct.put_object(Bucket=b, Key="newer", Body=b"newer",
                      Metadata={"fencing-epoch": str(e + 3)})
    st, h, d = req(gate.port, "PUT", "/%s/newer" % b, b"zombie", tok(e))
    expect(st == 409 and s3code(d) == "FencingTokenStale", "newer-stamped key: %s %s" % (st, d))
    expect(moto_body(rgw, b, "newer")[0] == b"newer", "the newer body stays on radosgw")
    key = "dir/sp ace+\u00fc"
    direct.put_object(Bucket=b, Key=key, Body=b"direct")
    boto_proxy(gate.url).put_object(Bucket=b, Key=key, Body=b"sdk",
                                    Metadata={"fencing-token": str(e)})
    body, meta = moto_body(rgw, b, key)
    expect(body == b"sdk" and meta.get("fencing-epoch") == str(e),
           "a key that needs encoding: %r %s" % (body, meta))
    release(gate.port, b, e)


def test_multipart_epoch_change(rgw, gate):
    """An upload created under epoch e, completed after e+1 was taken: the
    completion never lands. And on radosgw a completion is refused even
    under the current epoch: its If-None-Match is ignored there."""
    b = "rgw-mpu"
    rgw.create_bucket(b)
    s3 = boto_proxy(gate.url)
    e = acquire(gate.port, b, "mp")
    up = s3.create_multipart_upload(Bucket=b, Key="big", Metadata={"fencing-token": str(e)})
    p1 = s3.upload_part(Bucket=b, Key="big", UploadId=up["UploadId"], PartNumber=1, Body=b"z")
    release(gate.port, b, e)
    acquire(gate.port, b, "new-leader")
    st, code, msg = complete(s3, b, "big", up["UploadId"], p1["ETag"])
    expect(st >= 400 and code in ("FencingTokenStale", "NotImplemented"),
           "stale completion refused: %s %s %s" % (st, code, msg))
    expect(moto_body(rgw, b, "big")[0] is None, "the zombie's upload never landed")
    e2 = e + 1
    up = s3.create_multipart_upload(Bucket=b, Key="big", Metadata={"fencing-token": str(e2)})
    p1 = s3.upload_part(Bucket=b, Key="big", UploadId=up["UploadId"], PartNumber=1, Body=b"y")
    st, code, msg = complete(s3, b, "big", up["UploadId"], p1["ETag"])
    expect(st == 501 and code == "NotImplemented" and "CompleteMultipartUpload" in msg,
           "completion refused on a backend that ignores its condition: %s %s %s"
           % (st, code, msg))
    expect(moto_body(rgw, b, "big")[0] is None, "nothing completed")
    s3.abort_multipart_upload(Bucket=b, Key="big", UploadId=up["UploadId"])


def zombie_trials(store, name):
    """ZOMBIE_TRIALS keys: lagging replicas (C stuck at e1) forward the
    zombie's PUT, DELETE and multipart completion under e1 after A's
    leader wrote under e2. On the first half (replica B) the PUT goes
    first: its lost condition makes B reload the lock, and what follows is
    stale at the lock. On the second half (replica C) DELETE and completion
    go first, while C still believes e1 is current: they meet the backend's
    conditions (or, where it lacks them, the proxy's refusal). Counts the
    trials in which storage kept the leader's bytes; every one must."""
    b = "zombie-" + name
    store.create_bucket(b)
    half = ZOMBIE_TRIALS // 2
    ga = Gate("--upstream", store.url, "--access-log", "off", "--workers", "1")
    lagging = [Gate("--upstream", store.url, "--access-log", "off", "--workers", "1",
                    "--lock-refresh", "3600s") for _ in range(2)]
    try:
        for g in [ga] + lagging:
            wait_healthy(g)
        e1 = acquire(ga.port, b, "zombie")
        uploads = []
        for i in range(ZOMBIE_TRIALS):
            g = lagging[i >= half]
            if i % 2 == 0 or i == half:  # the replica caches this key's ETag under e1
                st, h, d = req(g.port, "PUT", "/%s/z%d" % (b, i), b"old", tok(e1))
                expect(st == 200, "replica writes under e1: %s %s" % (st, d))
            s3 = boto_proxy(g.url)
            up = s3.create_multipart_upload(Bucket=b, Key="m%d" % i,
                                            Metadata={"fencing-token": str(e1)})
            part = s3.upload_part(Bucket=b, Key="m%d" % i, UploadId=up["UploadId"],
                                  PartNumber=1, Body=b"zombie part")
            uploads.append((up["UploadId"], part["ETag"]))
        release(ga.port, b, e1)
        e2 = acquire(ga.port, b, "leader")
        for i in range(ZOMBIE_TRIALS):
            for key in ("z%d" % i, "m%d" % i):
                st, h, d = req(ga.port, "PUT", "/%s/%s" % (b, key), b"leader", tok(e2))
                expect(st == 200, "leader writes %s: %s %s" % (key, st, d))
        got = {}  # (trial, what) -> status

        def put(i):
            got[i, "PUT"] = req(lagging[i >= half].port, "PUT", "/%s/z%d" % (b, i),
                                b"zombie", tok(e1))[0]

        def delete(i):
            got[i, "DELETE"] = req(lagging[i >= half].port, "DELETE", "/%s/z%d" % (b, i),
                                   b"", tok(e1))[0]

        def finish(i):
            got[i, "complete"] = complete(boto_proxy(lagging[i >= half].url), b, "m%d" % i,
                                          uploads[i][0], uploads[i][1])[0]
        for i in range(half):
            put(i), delete(i), finish(i)
        for i in range(half, ZOMBIE_TRIALS):
            delete(i), finish(i)
        for i in range(half, ZOMBIE_TRIALS):
            put(i)
        statuses = {}
        for (i, what), st in got.items():
            statuses["%s %d" % (what, st)] = statuses.get("%s %d" % (what, st), 0) + 1
        for i in range(ZOMBIE_TRIALS):
            expect(moto_body(store, b, "z%d" % i)[0] == b"leader" and
                   moto_body(store, b, "m%d" % i)[0] == b"leader",
                   "trial %d on %s: storage lost the leader's bytes: %s" % (
                       i, name, {w: s for (j, w), s in got.items() if j == i}))
        refused = sum(1 for st in got.values() if st >= 400)
        REFUSED[name] = (refused, len(got))
        print("zombie trials on %s: %d of %d refused (PUT, DELETE, CompleteMultipartUpload "
              "x %d keys): %s" % (name, refused, len(got), ZOMBIE_TRIALS,
                                  ", ".join("%s: %d" % kv for kv in sorted(statuses.items()))))
        expect(refused == len(got), "every zombie refused on %s" % name)
    finally:
        ga.close()
        for g in lagging:
            g.close()


def main():
    r = harness.Runner("e2e radosgw")
    rgw = radosgw.start_checked(r)
    if rgw is not None:
        try:
            rgw.create_bucket("rgw-health")
            gate = Gate("--upstream", rgw.url, "--check-bucket", "rgw-health",
                        "--access-log", "off", "--workers", "2")
            try:
                r.check("self-test: capabilities on /_fence/health, logged once",
                        test_health, rgw, gate)
                r.check("writes, stale refusals, DELETE refused, copy forwarded, reads", test_writes,
                        rgw, gate)
                r.check("existing keys the proxy never saw: 412, HEAD, If-Match",
                        test_uncached_existing, rgw, gate)
                r.check("multipart across an epoch change", test_multipart_epoch_change,
                        rgw, gate)
            finally:
                gate.close()
            r.check("zombie trials through a lagging replica on radosgw", zombie_trials,
                    rgw, "radosgw")
        finally:
            rgw.close()
    moto = harness.Moto()
    try:
        r.check("zombie trials through a lagging replica on moto", zombie_trials, moto, "moto")
    finally:
        moto.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
