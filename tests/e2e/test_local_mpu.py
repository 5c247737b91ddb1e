#!/usr/bin/env python3
"""End-to-end tests of multipart uploads on fencegate's embedded store (no
--upstream), with boto3 and raw HTTP: create, parts (and UploadPartCopy
with a range), ListParts, ListMultipartUploads, complete (S3's
md5-of-md5s-N ETag, part checks), abort; the parts on disk while the upload
lasts and gone after; and fencing: a completion under an epoch that is no
longer the lock's, or over an object a newer epoch wrote, never lands.
Unfenced too (a config with unrouted_writes: allow). Asserts on the data
directory, not only on status codes. Servers on 127.0.0.1 at run-time
ports, stopped by PID. Prints 'N passed, N failed'."""
import hashlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import localgate  # noqa: E402
from localgate import acquire, client, error_of, lockapi, on_disk  # noqa: E402

from botocore.exceptions import ClientError  # noqa: E402

MIB = 1024 * 1024


def mpu_etag(*parts):
    return '"%s-%d"' % (hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest(),
                        len(parts))


def uploads_dir(g, bucket):
    return os.path.join(g.data, bucket, ".fencegate", "uploads")


def t_round_trip(g):
    """Create, two parts, list, complete: the file on disk is the parts'
    bytes, the ETag is S3's, metadata of the create is the object's."""
    client(g.url).create_bucket(Bucket="mpu-bucket")
    c = client(g.url, acquire(g, "mpu-bucket"))
    up = c.create_multipart_upload(Bucket="mpu-bucket", Key="dir/big.bin",
                                   ContentType="application/x-big", Metadata={"note": "n1"},
                                   CacheControl="max-age=60")
    uid = up["UploadId"]
    p1, p2 = os.urandom(5 * MIB), os.urandom(1000)
    e1 = c.upload_part(Bucket="mpu-bucket", Key="dir/big.bin", UploadId=uid, PartNumber=1,
                       Body=p1)["ETag"]
    e2 = c.upload_part(Bucket="mpu-bucket", Key="dir/big.bin", UploadId=uid, PartNumber=2,
                       Body=p2)["ETag"]
    assert e1 == '"%s"' % hashlib.md5(p1).hexdigest(), e1
    parts = c.list_parts(Bucket="mpu-bucket", Key="dir/big.bin", UploadId=uid)["Parts"]
    assert [(p["PartNumber"], p["ETag"], p["Size"]) for p in parts] == \
        [(1, e1, len(p1)), (2, e2, len(p2))], parts
    ups = c.list_multipart_uploads(Bucket="mpu-bucket")["Uploads"]
    assert [(u["Key"], u["UploadId"]) for u in ups] == [("dir/big.bin", uid)], ups
    # the parts are files of the upload, not objects
    files = sorted(os.listdir(os.path.join(uploads_dir(g, "mpu-bucket"), uid)))
    assert files == ["p00001." + e1.strip('"'), "p00002." + e2.strip('"'), "upload.json"], files
    assert on_disk(g, "mpu-bucket", "dir/big.bin") is None
    assert "Contents" not in c.list_objects_v2(Bucket="mpu-bucket", Prefix="dir/")
    done = c.complete_multipart_upload(
        Bucket="mpu-bucket", Key="dir/big.bin", UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    assert done["ETag"] == mpu_etag(p1, p2), done
    assert on_disk(g, "mpu-bucket", "dir/big.bin") == p1 + p2
    assert not os.path.exists(os.path.join(uploads_dir(g, "mpu-bucket"), uid))
    o = c.get_object(Bucket="mpu-bucket", Key="dir/big.bin")
    assert o["Body"].read() == p1 + p2
    assert o["ETag"] == done["ETag"] and o["ContentType"] == "application/x-big", o
    assert o["Metadata"] == {"note": "n1"} and o["CacheControl"] == "max-age=60", o
    assert c.list_multipart_uploads(Bucket="mpu-bucket").get("Uploads") is None


def t_part_checks(g):
    """S3's part rules: ETags must match, numbers ascend, every part but the
    last has 5 MiB; unknown or aborted uploads are NoSuchUpload; a part
    uploaded again replaces the first."""
    client(g.url).create_bucket(Bucket="parts-bucket")
    c = client(g.url, acquire(g, "parts-bucket"))
    uid = c.create_multipart_upload(Bucket="parts-bucket", Key="k")["UploadId"]
    small = b"x" * 100
    e1 = c.upload_part(Bucket="parts-bucket", Key="k", UploadId=uid, PartNumber=1,
                       Body=small)["ETag"]
    e2 = c.upload_part(Bucket="parts-bucket", Key="k", UploadId=uid, PartNumber=2,
                       Body=small)["ETag"]

    def complete(parts):
        return lambda: c.complete_multipart_upload(
            Bucket="parts-bucket", Key="k", UploadId=uid, MultipartUpload={"Parts": parts})
    assert error_of(complete([{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}])) == \
        ("EntityTooSmall", 400)
    assert error_of(complete([{"PartNumber": 1, "ETag": '"%s"' % ("0" * 32)}])) == \
        ("InvalidPart", 400)
    assert error_of(complete([{"PartNumber": 2, "ETag": e2}, {"PartNumber": 1, "ETag": e1}])) == \
        ("InvalidPartOrder", 400)
    assert error_of(complete([{"PartNumber": 3, "ETag": e1}])) == ("InvalidPart", 400)
    big = os.urandom(5 * MIB)
    e1 = c.upload_part(Bucket="parts-bucket", Key="k", UploadId=uid, PartNumber=1,
                       Body=big)["ETag"]
    files = sorted(os.listdir(os.path.join(uploads_dir(g, "parts-bucket"), uid)))
    assert len([f for f in files if f.startswith("p00001.")]) == 1, files
    c.complete_multipart_upload(Bucket="parts-bucket", Key="k", UploadId=uid,
                                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1},
                                                           {"PartNumber": 2, "ETag": e2}]})
    assert on_disk(g, "parts-bucket", "k") == big + small
    # the upload is gone once completed; another key's id is no upload
    assert error_of(complete([{"PartNumber": 1, "ETag": e1}])) == ("NoSuchUpload", 404)
    uid2 = c.create_multipart_upload(Bucket="parts-bucket", Key="other")["UploadId"]
    assert error_of(lambda: c.upload_part(Bucket="parts-bucket", Key="k", UploadId=uid2,
                                          PartNumber=1, Body=b"x")) == ("NoSuchUpload", 404)
    assert error_of(lambda: c.upload_part(Bucket="parts-bucket", Key="k", UploadId="nope",
                                          PartNumber=1, Body=b"x")) == ("NoSuchUpload", 404)
    c.abort_multipart_upload(Bucket="parts-bucket", Key="other", UploadId=uid2)
    assert not os.path.exists(os.path.join(uploads_dir(g, "parts-bucket"), uid2))
    assert error_of(lambda: c.list_parts(Bucket="parts-bucket", Key="other",
                                         UploadId=uid2)) == ("NoSuchUpload", 404)
    assert on_disk(g, "parts-bucket", "other") is None


def t_part_copy(g):
    """UploadPartCopy with a source range, from another bucket."""
    client(g.url).create_bucket(Bucket="pc-src")
    client(g.url).create_bucket(Bucket="pc-dst")
    src = os.urandom(6 * MIB)
    client(g.url, acquire(g, "pc-src")).put_object(Bucket="pc-src", Key="s", Body=src)
    c = client(g.url, acquire(g, "pc-dst"))
    uid = c.create_multipart_upload(Bucket="pc-dst", Key="d")["UploadId"]
    r1 = c.upload_part_copy(Bucket="pc-dst", Key="d", UploadId=uid, PartNumber=1,
                            CopySource={"Bucket": "pc-src", "Key": "s"},
                            CopySourceRange="bytes=0-%d" % (5 * MIB - 1))
    r2 = c.upload_part_copy(Bucket="pc-dst", Key="d", UploadId=uid, PartNumber=2,
                            CopySource={"Bucket": "pc-src", "Key": "s"},
                            CopySourceRange="bytes=%d-%d" % (5 * MIB, len(src) - 1))
    c.complete_multipart_upload(
        Bucket="pc-dst", Key="d", UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": r1["CopyPartResult"]["ETag"]},
                                   {"PartNumber": 2, "ETag": r2["CopyPartResult"]["ETag"]}]})
    assert on_disk(g, "pc-dst", "d") == src
    assert error_of(lambda: c.upload_part_copy(
        Bucket="pc-dst", Key="d2", UploadId=uid, PartNumber=1,
        CopySource={"Bucket": "pc-src", "Key": "missing"})) == ("NoSuchKey", 404)


def t_fenced_complete(g):
    """An upload created under epoch E completes only while E is the lock's
    epoch and no newer epoch wrote the key; a zombie's completion never
    changes the file."""
    client(g.url).create_bucket(Bucket="fz-bucket")
    e1 = acquire(g, "fz-bucket")
    old = client(g.url, e1)
    uid = old.create_multipart_upload(Bucket="fz-bucket", Key="k")["UploadId"]
    p = os.urandom(5 * MIB)
    et = old.upload_part(Bucket="fz-bucket", Key="k", UploadId=uid, PartNumber=1, Body=p)["ETag"]
    parts = {"Parts": [{"PartNumber": 1, "ETag": et}]}
    # the lock moves on; the new holder writes the key
    assert lockapi(g, "fz-bucket", "release", epoch=e1)[0] == 200
    e2 = acquire(g, "fz-bucket")
    new = client(g.url, e2)
    new.put_object(Bucket="fz-bucket", Key="k", Body=b"new holder")
    # the zombie, with its own token: stale at the lock
    assert error_of(lambda: old.complete_multipart_upload(
        Bucket="fz-bucket", Key="k", UploadId=uid, MultipartUpload=parts)) == \
        ("FencingTokenStale", 409)
    # the same upload completed with the current token: the upload's epoch
    # is not the lock's any more
    try:
        new.complete_multipart_upload(Bucket="fz-bucket", Key="k", UploadId=uid,
                                      MultipartUpload=parts)
        raise AssertionError("completed")
    except ClientError as e:
        assert e.response["Error"]["Code"] == "FencingTokenStale", e.response
        assert e.response["ResponseMetadata"]["HTTPHeaders"]["x-fencing-epoch"] == str(e2)
    assert on_disk(g, "fz-bucket", "k") == b"new holder"
    # an upload of the current epoch completes
    uid = new.create_multipart_upload(Bucket="fz-bucket", Key="k")["UploadId"]
    et = new.upload_part(Bucket="fz-bucket", Key="k", UploadId=uid, PartNumber=1, Body=p)["ETag"]
    new.complete_multipart_upload(Bucket="fz-bucket", Key="k", UploadId=uid,
                                  MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": et}]})
    assert on_disk(g, "fz-bucket", "k") == p
    h = new.head_object(Bucket="fz-bucket", Key="k")
    assert h["ResponseMetadata"]["HTTPHeaders"]["x-fencing-object-epoch"] == str(e2), h


def t_unfenced():
    """unrouted_writes: allow — multipart with a plain client."""
    g = harness.Fencegate(config={"mode": "s3", "unrouted_writes": "allow"})
    try:
        c = client(g.url)
        c.create_bucket(Bucket="free-bucket")
        uid = c.create_multipart_upload(Bucket="free-bucket", Key="a/b")["UploadId"]
        p1, p2 = os.urandom(5 * MIB), b"end"
        e1 = c.upload_part(Bucket="free-bucket", Key="a/b", UploadId=uid, PartNumber=1,
                           Body=p1)["ETag"]
        e2 = c.upload_part(Bucket="free-bucket", Key="a/b", UploadId=uid, PartNumber=2,
                           Body=p2)["ETag"]
        r = c.complete_multipart_upload(
            Bucket="free-bucket", Key="a/b", UploadId=uid,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1},
                                       {"PartNumber": 2, "ETag": e2}]})
        assert r["ETag"] == mpu_etag(p1, p2)
        assert on_disk(g, "free-bucket", "a/b") == p1 + p2
    finally:
        g.close()


if __name__ == "__main__":
    sys.exit(localgate.main("test_local_mpu",
                            (("round trip", t_round_trip), ("part checks", t_part_checks),
                             ("upload part copy", t_part_copy),
                             ("fenced completion", t_fenced_complete)),
                            (("unfenced", t_unfenced),)))
