#!/usr/bin/env python3
"""End-to-end tests of what the embedded store (no --upstream) answers
beyond GET/PUT, with boto3: CopyObject under both metadata directives (a
fenced copy is stamped with the writer's epoch; under COPY it keeps the
source's metadata, not the source's stamp), ListObjectVersions of an unversioned bucket, GetObjectAcl and
GetBucketAcl, Owner in listings, and the representation headers
(Cache-Control, Expires, Content-Disposition, Content-Encoding,
Content-Language) kept with an object. Asserts on the data directory too.
Servers on 127.0.0.1 at run-time ports, stopped by PID. Prints 'N passed,
N failed'."""
import datetime
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import localgate  # noqa: E402
from localgate import client, error_of, lockapi, on_disk  # noqa: E402


def lock(g, bucket, op, **body):
    st, answer = lockapi(g, bucket, op, **body)
    assert st == 200, (st, answer)
    return answer


def t_fenced_copy(g):
    client(g.url).create_bucket(Bucket="cp-bucket")
    e1 = lock(g, "cp-bucket", "acquire", ttlMs=600000, holder="a")["epoch"]
    c = client(g.url, e1)
    c.put_object(Bucket="cp-bucket", Key="src", Body=b"source bytes", Metadata={"m": "1"},
                 ContentType="text/plain")
    r = c.copy_object(Bucket="cp-bucket", Key="dst/copy", MetadataDirective="REPLACE",
                      CopySource={"Bucket": "cp-bucket", "Key": "src"},
                      Metadata={"m": "2"}, ContentType="text/x-copy")
    h = c.head_object(Bucket="cp-bucket", Key="dst/copy")
    assert r["CopyObjectResult"]["ETag"] == h["ETag"]
    assert h["Metadata"] == {"m": "2"} and h["ContentType"] == "text/x-copy", h
    assert h["ResponseMetadata"]["HTTPHeaders"]["x-fencing-object-epoch"] == str(e1)
    assert on_disk(g, "cp-bucket", "dst/copy") == b"source bytes"
    # COPY (the default, what `aws s3 cp s3://… s3://…` sends): the
    # source's metadata and type, the writer's stamp
    c.copy_object(Bucket="cp-bucket", Key="dst/2", CopySource={"Bucket": "cp-bucket", "Key": "src"})
    h = c.head_object(Bucket="cp-bucket", Key="dst/2")
    assert h["Metadata"] == {"m": "1"} and h["ContentType"] == "text/plain", h
    assert h["ResponseMetadata"]["HTTPHeaders"]["x-fencing-object-epoch"] == str(e1), h
    assert on_disk(g, "cp-bucket", "dst/2") == b"source bytes"
    # a zombie's copy never lands, under either directive
    lock(g, "cp-bucket", "release", epoch=e1)
    e2 = lock(g, "cp-bucket", "acquire", ttlMs=600000, holder="b")["epoch"]
    c2 = client(g.url, e2)
    c2.put_object(Bucket="cp-bucket", Key="dst/copy", Body=b"epoch two")
    for directive in ("REPLACE", "COPY"):
        assert error_of(lambda: c.copy_object(Bucket="cp-bucket", Key="dst/copy",
                                              MetadataDirective=directive,
                                              CopySource={"Bucket": "cp-bucket", "Key": "src"})) == \
            ("FencingTokenStale", 409), directive
    assert on_disk(g, "cp-bucket", "dst/copy") == b"epoch two"
    # a COPY by the new holder of a source stamped with the old epoch is
    # stamped with the new one (the source's stamp is never copied)
    c2.copy_object(Bucket="cp-bucket", Key="dst/3", CopySource={"Bucket": "cp-bucket", "Key": "src"})
    h = c2.head_object(Bucket="cp-bucket", Key="dst/3")
    assert h["ResponseMetadata"]["HTTPHeaders"]["x-fencing-object-epoch"] == str(e2), h
    assert h["Metadata"] == {"m": "1"}, h
    assert error_of(lambda: c.copy_object(Bucket="cp-bucket", Key="dst/4",
                                          CopySource={"Bucket": "cp-bucket", "Key": "src"})) == \
        ("FencingTokenStale", 409)
    assert on_disk(g, "cp-bucket", "dst/4") is None
    assert error_of(lambda: client(g.url, e2).copy_object(
        Bucket="cp-bucket", Key="x", MetadataDirective="REPLACE",
        CopySource={"Bucket": "cp-bucket", "Key": "missing"})) == ("NoSuchKey", 404)


def t_versions_acl_owner(g):
    client(g.url).create_bucket(Bucket="va-bucket")
    e = lock(g, "va-bucket", "acquire", ttlMs=600000, holder="a")["epoch"]
    c = client(g.url, e)
    for k in ("a/1", "a/2", "b"):
        c.put_object(Bucket="va-bucket", Key=k, Body=k.encode())
    v = c.list_object_versions(Bucket="va-bucket", Prefix="", Delimiter="/")
    assert [(x["Key"], x["VersionId"], x["IsLatest"]) for x in v["Versions"]] == \
        [("b", "null", True)], v
    assert [p["Prefix"] for p in v["CommonPrefixes"]] == ["a/", "fencing-marks/", "locks/"], v
    v = c.list_object_versions(Bucket="va-bucket", Prefix="a/", MaxKeys=1)
    assert [x["Key"] for x in v["Versions"]] == ["a/1"] and v["IsTruncated"], v
    v = c.list_object_versions(Bucket="va-bucket", Prefix="a/", KeyMarker=v["NextKeyMarker"])
    assert [x["Key"] for x in v["Versions"]] == ["a/2"], v
    acl = c.get_object_acl(Bucket="va-bucket", Key="b")
    assert acl["Owner"]["ID"] == "fencegate", acl
    assert [(x["Grantee"]["ID"], x["Permission"]) for x in acl["Grants"]] == \
        [("fencegate", "FULL_CONTROL")], acl
    assert error_of(lambda: c.get_object_acl(Bucket="va-bucket", Key="nope")) == \
        ("NoSuchKey", 404)
    assert c.get_bucket_acl(Bucket="va-bucket")["Grants"][0]["Permission"] == "FULL_CONTROL"
    assert error_of(lambda: c.put_object_acl(Bucket="va-bucket", Key="b", ACL="private")) == \
        ("NotImplemented", 501)
    l2 = c.list_objects_v2(Bucket="va-bucket", Prefix="a/")["Contents"]
    assert all("Owner" not in x for x in l2), l2
    l2 = c.list_objects_v2(Bucket="va-bucket", Prefix="a/", FetchOwner=True)["Contents"]
    assert all(x["Owner"]["ID"] == "fencegate" for x in l2), l2
    l1 = c.list_objects(Bucket="va-bucket", Prefix="a/")["Contents"]
    assert all(x["Owner"]["ID"] == "fencegate" for x in l1), l1


def t_representation_headers(g):
    client(g.url).create_bucket(Bucket="hdr-bucket")
    e = lock(g, "hdr-bucket", "acquire", ttlMs=600000, holder="a")["epoch"]
    c = client(g.url, e)
    when = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    c.put_object(Bucket="hdr-bucket", Key="h", Body=b"\x1f\x8b not really gzip",
                 CacheControl="max-age=300", ContentDisposition='attachment; filename="h.gz"',
                 ContentEncoding="gzip", ContentLanguage="de-CH", Expires=when)
    for r in (c.head_object(Bucket="hdr-bucket", Key="h"), c.get_object(Bucket="hdr-bucket", Key="h")):
        assert r["CacheControl"] == "max-age=300", r
        assert r["ContentDisposition"] == 'attachment; filename="h.gz"', r
        assert r["ContentEncoding"] == "gzip" and r["ContentLanguage"] == "de-CH", r
        assert r["Expires"] == when, r
    # response- overrides still win; a copy under COPY keeps them (unfenced
    # is in t_unfenced_copy), under REPLACE takes the request's
    r = c.get_object(Bucket="hdr-bucket", Key="h", ResponseCacheControl="no-store")
    assert r["CacheControl"] == "no-store", r
    c.copy_object(Bucket="hdr-bucket", Key="h2", MetadataDirective="REPLACE",
                  CopySource={"Bucket": "hdr-bucket", "Key": "h"}, ContentLanguage="fr")
    r = c.head_object(Bucket="hdr-bucket", Key="h2")
    assert r["ContentLanguage"] == "fr" and "CacheControl" not in r, r
    # an overwrite without them drops them, as S3
    c.put_object(Bucket="hdr-bucket", Key="h", Body=b"plain")
    r = c.head_object(Bucket="hdr-bucket", Key="h")
    assert "CacheControl" not in r and "ContentEncoding" not in r, r


def t_unfenced_copy():
    g = harness.Fencegate(config={"mode": "s3", "unrouted_writes": "allow"})
    try:
        c = client(g.url)
        c.create_bucket(Bucket="free-bucket")
        c.put_object(Bucket="free-bucket", Key="s", Body=b"bytes", Metadata={"k": "v"},
                     ContentType="text/x-s", CacheControl="no-cache")
        c.copy_object(Bucket="free-bucket", Key="d", CopySource={"Bucket": "free-bucket", "Key": "s"})
        h = c.head_object(Bucket="free-bucket", Key="d")
        assert h["Metadata"] == {"k": "v"} and h["ContentType"] == "text/x-s", h
        assert h["CacheControl"] == "no-cache", h
        assert on_disk(g, "free-bucket", "d") == b"bytes"
        assert error_of(lambda: c.copy_object(Bucket="free-bucket", Key="s",
                                              CopySource={"Bucket": "free-bucket", "Key": "s"})) \
            == ("InvalidRequest", 400)
        c.copy_object(Bucket="free-bucket", Key="s", MetadataDirective="REPLACE",
                      CopySource={"Bucket": "free-bucket", "Key": "s"}, Metadata={"k": "w"})
        assert c.head_object(Bucket="free-bucket", Key="s")["Metadata"] == {"k": "w"}
    finally:
        g.close()


def t_checksums(g):
    """x-amz-checksum-*: verified on PUT (a wrong one is 400 BadDigest and
    stores nothing), kept, returned with x-amz-checksum-mode: ENABLED on
    whole-object reads (never on a range), kept by a copy; boto3 computes
    and validates them itself."""
    import base64
    import hashlib
    import http.client
    import zlib
    client(g.url).create_bucket(Bucket="sum-bucket")
    e = lock(g, "sum-bucket", "acquire", ttlMs=600000, holder="a")["epoch"]
    c = client(g.url, e)
    data = b"checksummed bytes " * 100
    sha = base64.b64encode(hashlib.sha256(data).digest()).decode()
    r = c.put_object(Bucket="sum-bucket", Key="s", Body=data, ChecksumAlgorithm="SHA256")
    assert r.get("ChecksumSHA256") == sha, r
    h = c.head_object(Bucket="sum-bucket", Key="s", ChecksumMode="ENABLED")
    assert h.get("ChecksumSHA256") == sha, h
    got = c.get_object(Bucket="sum-bucket", Key="s", ChecksumMode="ENABLED")
    assert got["Body"].read() == data and got.get("ChecksumSHA256") == sha, got
    part = c.get_object(Bucket="sum-bucket", Key="s", Range="bytes=0-9", ChecksumMode="ENABLED")
    assert part["Body"].read() == data[:10] and "ChecksumSHA256" not in part, part
    # without asking, no checksum header (as S3)
    assert "ChecksumSHA256" not in c.head_object(Bucket="sum-bucket", Key="s")
    c.copy_object(Bucket="sum-bucket", Key="s2", CopySource={"Bucket": "sum-bucket", "Key": "s"})
    assert c.head_object(Bucket="sum-bucket", Key="s2", ChecksumMode="ENABLED").get(
        "ChecksumSHA256") == sha
    # raw requests: a wrong value, two algorithms, a malformed value
    crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    bad = base64.b64encode((zlib.crc32(data) ^ 1).to_bytes(4, "big")).decode()
    for key, hdrs, want in (
            ("ok", {"x-amz-checksum-crc32": crc}, 200),
            ("bad", {"x-amz-checksum-crc32": bad}, 400),
            ("two", {"x-amz-checksum-crc32": crc, "x-amz-checksum-sha256": sha}, 400),
            ("junk", {"x-amz-checksum-crc32": "not base64!"}, 400)):
        conn = http.client.HTTPConnection("127.0.0.1", g.port, timeout=30)
        try:
            conn.request("PUT", "/sum-bucket/" + key, body=data,
                         headers=dict(hdrs, **{"X-Fencing-Token": str(e)}))
            resp = conn.getresponse()
            body = resp.read()
            assert resp.status == want, (key, resp.status, body)
            if key == "ok":
                assert resp.getheader("x-amz-checksum-crc32") == crc
            if key == "bad":
                assert b"BadDigest" in body, body
        finally:
            conn.close()
    assert on_disk(g, "sum-bucket", "ok") == data
    for key in ("bad", "two", "junk"):
        assert on_disk(g, "sum-bucket", key) is None, key
    # a body large enough to go through the spool file (over 1 MiB)
    big = os.urandom(3 * 1024 * 1024 + 7)
    c32 = base64.b64encode(zlib.crc32(big).to_bytes(4, "big")).decode()
    w32 = base64.b64encode((zlib.crc32(big) ^ 4).to_bytes(4, "big")).decode()
    for key, value, want in (("big-bad", w32, 400), ("big", c32, 200)):
        conn = http.client.HTTPConnection("127.0.0.1", g.port, timeout=30)
        try:
            conn.request("PUT", "/sum-bucket/" + key, body=big,
                         headers={"x-amz-checksum-crc32": value, "X-Fencing-Token": str(e)})
            resp = conn.getresponse()
            assert resp.status == want, (key, resp.status, resp.read())
        finally:
            conn.close()
    assert on_disk(g, "sum-bucket", "big-bad") is None
    assert on_disk(g, "sum-bucket", "big") == big
    assert c.head_object(Bucket="sum-bucket", Key="big", ChecksumMode="ENABLED").get(
        "ChecksumCRC32") == c32


def t_large_copy(g):
    """Sources over the 64 MiB that used to be read into memory (501 then):
    CopyObject and UploadPartCopy read them from disk as they copy."""
    import hashlib
    client(g.url).create_bucket(Bucket="big-cp")
    e = lock(g, "big-cp", "acquire", ttlMs=600000, holder="a")["epoch"]
    c = client(g.url, e)
    mib = 1024 * 1024
    data = os.urandom(65 * mib)
    c.put_object(Bucket="big-cp", Key="src", Body=data, Metadata={"m": "big"})
    r = c.copy_object(Bucket="big-cp", Key="whole", CopySource={"Bucket": "big-cp", "Key": "src"})
    assert r["CopyObjectResult"]["ETag"] == '"%s"' % hashlib.md5(data).hexdigest(), r
    assert on_disk(g, "big-cp", "whole") == data
    assert c.head_object(Bucket="big-cp", Key="whole")["Metadata"] == {"m": "big"}
    up = c.create_multipart_upload(Bucket="big-cp", Key="parts")["UploadId"]
    parts = []
    for n, (a, b) in enumerate(((0, 40 * mib - 1), (40 * mib, 65 * mib - 1)), start=1):
        r = c.upload_part_copy(Bucket="big-cp", Key="parts", UploadId=up, PartNumber=n,
                               CopySource={"Bucket": "big-cp", "Key": "src"},
                               CopySourceRange="bytes=%d-%d" % (a, b))
        want = hashlib.md5(data[a:b + 1]).hexdigest()
        assert r["CopyPartResult"]["ETag"] == '"%s"' % want, (n, r)
        parts.append({"PartNumber": n, "ETag": r["CopyPartResult"]["ETag"]})
    c.complete_multipart_upload(Bucket="big-cp", Key="parts", UploadId=up,
                                MultipartUpload={"Parts": parts})
    assert on_disk(g, "big-cp", "parts") == data
    # a range past the source's end is S3's 400 InvalidRange, nothing written
    up = c.create_multipart_upload(Bucket="big-cp", Key="bad")["UploadId"]
    assert error_of(lambda: c.upload_part_copy(
        Bucket="big-cp", Key="bad", UploadId=up, PartNumber=1,
        CopySource={"Bucket": "big-cp", "Key": "src"},
        CopySourceRange="bytes=0-%d" % (65 * mib))) == ("InvalidRange", 400)


if __name__ == "__main__":
    sys.exit(localgate.main("test_local_copy",
                            (("fenced copy", t_fenced_copy),
                             ("versions, ACLs, owner", t_versions_acl_owner),
                             ("representation headers", t_representation_headers),
                             ("copies of a 65 MiB source, whole and by ranges", t_large_copy),
                             ("x-amz-checksum-*: verified, kept, returned", t_checksums)),
                            (("unfenced copy", t_unfenced_copy),)))
