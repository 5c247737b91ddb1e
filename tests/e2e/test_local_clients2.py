#!/usr/bin/env python3
"""Real S3 clients on fencegate's embedded default, part two (part one:
test_local_clients.py): what test_clients_s3.py and test_sigv2.py check in
front of moto, here with no --upstream. @aws-sdk/client-s3
(tests/js/s3client.mjs): put with the token as header and as metadata,
the default copy (COPY), list, delete, DeleteObjects, and unfenced. boto3
delete_objects fenced by header or by metadata (a lock file among the keys
is refused per key) and unfenced; copy_object with the default directive
and the token as metadata; list_object_versions and get_object_acl. With
authentication on (clients in a config): boto3's default presigned URLs
(SigV2 query form) opened with urllib and curl, a GET and a PUT fenced by
the token in the presigned metadata, expired and tampered ones 403; and
s3cmd --signature-v2. Every check reads the data directory (bytes on
disk, files gone), and every refusal must leave it as it was. Servers on
127.0.0.1 at run-time ports, stopped by PID. Prints 'N passed, N failed'."""
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import harness  # noqa: E402
from localgate import (acquire, client, disk_keys, disk_state, error_of, lock_key,  # noqa: E402
                       main_gates, on_disk)
from test_auth import raw, s3_code, s3cmd_config  # noqa: E402
from test_local_clients import env, js, need, write_file  # noqa: E402

WRITER = ("AKIDLOCALWRITER1", "local-writer-secret-1")
READER = ("AKIDLOCALREADER1", "local-reader-secret-1")
AUTH_BUCKET = "v2-bucket"


def object_epoch(c, bucket, key):
    """The X-Fencing-Object-Epoch a HEAD shows, None when unstamped."""
    h = c.head_object(Bucket=bucket, Key=key)["ResponseMetadata"]["HTTPHeaders"]
    return h.get("x-fencing-object-epoch")


# ---- @aws-sdk/client-s3 ----------------------------------------------------

def t_js_presigned(g, tmp):
    """@aws-sdk/s3-request-presigner: a presigned PUT (its query carries
    X-Amz-Content-Sha256=UNSIGNED-PAYLOAD) with the token as a header, then
    a presigned GET."""
    need("node")
    b = "js-presign"
    client(g.url).create_bucket(Bucket=b)
    e = acquire(g, b)
    r = js(g, "presign", bucket=b, key="p.txt", method="put")
    assert r["ok"] and "X-Amz-Content-Sha256=UNSIGNED-PAYLOAD" in r["url"], r
    put = urllib.request.Request(r["url"], data=b"presigned", method="PUT",
                                 headers={"X-Fencing-Token": str(e),
                                          "Content-Type": "application/octet-stream"})
    with urllib.request.urlopen(put, timeout=15) as resp:
        assert resp.status == 200, resp.status
    assert on_disk(g, b, "p.txt") == b"presigned"
    r = js(g, "presign", bucket=b, key="p.txt", method="get")
    assert r["ok"], r
    with urllib.request.urlopen(r["url"], timeout=15) as resp:
        assert resp.read() == b"presigned"
    # without the token the presigned PUT is refused, and nothing changes
    r = js(g, "presign", bucket=b, key="p.txt", method="put")
    try:
        urllib.request.urlopen(urllib.request.Request(r["url"], data=b"other", method="PUT"),
                               timeout=15)
        raise AssertionError("a tokenless presigned PUT was accepted")
    except urllib.error.HTTPError as err:
        assert err.code == 428, err.code
    assert on_disk(g, b, "p.txt") == b"presigned"


def t_js_sdk_fenced(g, tmp):
    need("node")
    b = "js-sdk"
    client(g.url).create_bucket(Bucket=b)
    e = acquire(g, b)
    tok, meta_tok = {"X-Fencing-Token": str(e)}, {"x-amz-meta-fencing-token": str(e)}
    assert js(g, "put", bucket=b, key="js/a.txt", body="js-a", headers=tok)["ok"]
    r = js(g, "put", bucket=b, key="js/b.txt", body="js-b",
           metadata={"fencing-token": str(e), "k": "v"})
    assert r["ok"], r
    assert on_disk(g, b, "js/a.txt") == b"js-a" and on_disk(g, b, "js/b.txt") == b"js-b"
    r = js(g, "head", bucket=b, key="js/b.txt")
    assert r["ok"] and r["metadata"] == {"k": "v"}, r  # the token is read, not stored
    before = disk_state(g, b)
    r = js(g, "put", bucket=b, key="js/c.txt", body="no token")
    assert not r["ok"] and r["status"] == 428, r
    r = js(g, "copy", bucket=b, key="js/c.txt", source="js/b.txt")
    assert not r["ok"] and r["status"] == 428, r
    assert disk_state(g, b) == before
    # CopyObject with the SDK's default directive (COPY): the source's
    # metadata, the writer's stamp
    r = js(g, "copy", bucket=b, key="js/copy.txt", source="js/b.txt", headers=tok)
    assert r["ok"], r
    assert on_disk(g, b, "js/copy.txt") == b"js-b"
    assert js(g, "head", bucket=b, key="js/copy.txt")["metadata"] == {"k": "v"}
    assert object_epoch(client(g.url), b, "js/copy.txt") == str(e)
    r = js(g, "list", bucket=b, prefix="js/")
    assert r["ok"] and r["keys"] == ["js/a.txt", "js/b.txt", "js/copy.txt"], r
    # deletes: without a token nothing goes; by header; DeleteObjects with
    # the lock file among the keys, by header and by metadata
    r = js(g, "delete", bucket=b, key="js/a.txt")
    assert not r["ok"] and r["status"] == 428, r
    assert on_disk(g, b, "js/a.txt") == b"js-a"
    assert js(g, "delete", bucket=b, key="js/a.txt", headers=tok)["ok"]
    assert on_disk(g, b, "js/a.txt") is None
    lock = lock_key(b, e)
    for key, headers in (("js/b.txt", tok), ("js/copy.txt", meta_tok)):
        r = js(g, "delete_many", bucket=b, keys=[key, lock], headers=headers)
        assert r["ok"] and r["deleted"] == [key] and \
            r["errors"] == [{"key": lock, "code": "AccessDenied"}], r
        assert on_disk(g, b, key) is None and on_disk(g, b, lock) is not None
    assert disk_keys(g, b) == []


def t_js_sdk_unfenced(g, tmp):
    need("node")
    b = "js-free"
    assert js(g, "create_bucket", bucket=b)["ok"]
    assert js(g, "put", bucket=b, key="js/u.txt", body="u", metadata={"k": "v"})["ok"]
    assert js(g, "copy", bucket=b, key="js/u2.txt", source="js/u.txt")["ok"]
    assert on_disk(g, b, "js/u2.txt") == b"u"
    assert js(g, "head", bucket=b, key="js/u2.txt")["metadata"] == {"k": "v"}
    assert object_epoch(client(g.url), b, "js/u2.txt") is None
    assert js(g, "put", bucket=b, key="js/u3.txt", body="u3")["ok"]
    assert js(g, "list", bucket=b, prefix="js/")["keys"] == ["js/u.txt", "js/u2.txt", "js/u3.txt"]
    assert js(g, "delete", bucket=b, key="js/u3.txt")["ok"]
    assert disk_keys(g, b) == ["js/u.txt", "js/u2.txt"]
    r = js(g, "delete_many", bucket=b, keys=["js/u.txt", "js/u2.txt"])
    assert r["ok"] and sorted(r["deleted"]) == ["js/u.txt", "js/u2.txt"], r
    assert disk_keys(g, b) == []


# ---- boto3 -----------------------------------------------------------------

def t_boto3_delete_objects(g, tmp):
    b = "boto-del"
    client(g.url).create_bucket(Bucket=b)
    e = acquire(g, b)
    keys = ["del/%d.txt" % i for i in range(5)]
    for k in keys:
        client(g.url, meta_token=e).put_object(Bucket=b, Key=k, Body=k.encode())
    assert disk_keys(g, b) == keys
    lock = lock_key(b, e)
    objects = {"Objects": [{"Key": k} for k in keys[:2]] + [{"Key": lock}]}
    before = disk_state(g, b)
    for c, code in ((client(g.url), ("FencingTokenMissing", 428)),
                    (client(g.url, e + 9), ("FencingTokenUnknown", 409)),
                    (client(g.url, meta_token=e + 9), ("FencingTokenUnknown", 409))):
        assert error_of(lambda: c.delete_objects(Bucket=b, Delete=objects)) == code
        assert disk_state(g, b) == before
    # by X-Fencing-Token: the data keys go, the lock file is refused
    res = client(g.url, e).delete_objects(Bucket=b, Delete=objects)
    assert sorted(d["Key"] for d in res.get("Deleted", [])) == keys[:2], res
    assert [(x["Key"], x["Code"]) for x in res.get("Errors", [])] == [(lock, "AccessDenied")], res
    assert disk_keys(g, b) == keys[2:] and on_disk(g, b, lock) == before[lock]
    # by x-amz-meta-fencing-token, Quiet: only the errors come back
    res = client(g.url, meta_token=e).delete_objects(
        Bucket=b, Delete={"Objects": [{"Key": k} for k in keys[2:]] + [{"Key": lock}],
                          "Quiet": True})
    assert res.get("Deleted", []) == [] and [x["Key"] for x in res["Errors"]] == [lock], res
    assert disk_keys(g, b) == [] and on_disk(g, b, lock) == before[lock]


def t_boto3_delete_versions(g, tmp):
    """A version-aware cleanup (list_object_versions, then delete_objects
    naming each VersionId "null", as public conformance suites do at every
    teardown) empties a bucket of the embedded store, where "null" is the
    object; another version id is refused per key, the object kept."""
    b = "boto-del-versions"
    client(g.url).create_bucket(Bucket=b)
    e = acquire(g, b)
    keys = ["v/%d.txt" % i for i in range(3)]
    for k in keys:
        client(g.url, e).put_object(Bucket=b, Key=k, Body=k.encode())
    c = client(g.url, e)
    res = c.delete_objects(Bucket=b, Delete={"Objects": [{"Key": keys[0], "VersionId": "3HL4"}]})
    assert [(x["Key"], x["Code"]) for x in res.get("Errors", [])] == [(keys[0], "NotImplemented")], \
        res
    assert disk_keys(g, b) == keys
    versions = c.list_object_versions(Bucket=b, Prefix="v/").get("Versions", [])
    assert sorted((v["Key"], v["VersionId"]) for v in versions) == [(k, "null") for k in keys]
    res = c.delete_objects(Bucket=b, Delete={"Objects": [{"Key": v["Key"], "VersionId": v["VersionId"]}
                                                         for v in versions]})
    assert sorted((d["Key"], d.get("VersionId")) for d in res.get("Deleted", [])) == \
        [(k, "null") for k in keys] and not res.get("Errors"), res
    assert disk_keys(g, b) == []
    # without the token the same request is refused whole
    client(g.url, e).put_object(Bucket=b, Key="again", Body=b"x")
    assert error_of(lambda: client(g.url).delete_objects(
        Bucket=b, Delete={"Objects": [{"Key": "again", "VersionId": "null"}]})) == \
        ("FencingTokenMissing", 428)
    assert disk_keys(g, b) == ["again"]


def t_boto3_delete_objects_unfenced(g, tmp):
    b = "boto-del-free"
    c = client(g.url)
    c.create_bucket(Bucket=b)
    keys = ["del/%d.txt" % i for i in range(5)]
    lock = lock_key(b, 1)
    for k in keys + [lock]:
        c.put_object(Bucket=b, Key=k, Body=b"u")
    assert sorted(disk_state(g, b)) == keys + [lock]
    res = c.delete_objects(Bucket=b, Delete={"Objects": [{"Key": k} for k in keys + [lock]]})
    assert sorted(d["Key"] for d in res.get("Deleted", [])) == keys, res
    # a key in the bucket lock's layout is refused per key even unfenced
    # (DeleteObjects never deletes lock files); a DELETE of its own may
    assert [(x["Key"], x["Code"]) for x in res.get("Errors", [])] == [(lock, "AccessDenied")], res
    assert disk_state(g, b) == {lock: b"u"}
    c.delete_object(Bucket=b, Key=lock)
    assert disk_state(g, b) == {}


def t_boto3_copy_versions_acl(g, tmp):
    """copy_object with the default directive, the token as metadata (read
    as the token, not copied, the source's metadata kept); a stale one
    writes nothing; list_object_versions and get_object_acl."""
    b = "boto-copy"
    client(g.url).create_bucket(Bucket=b)
    e = acquire(g, b)
    c = client(g.url, meta_token=e)
    c.put_object(Bucket=b, Key="src.txt", Body=b"source", Metadata={"m": "1"},
                 ContentType="text/x-src")
    c.copy_object(Bucket=b, Key="dst/copy.txt", CopySource={"Bucket": b, "Key": "src.txt"})
    assert on_disk(g, b, "dst/copy.txt") == b"source"
    h = c.head_object(Bucket=b, Key="dst/copy.txt")
    assert h["Metadata"] == {"m": "1"} and h["ContentType"] == "text/x-src", h
    assert object_epoch(c, b, "dst/copy.txt") == str(e)
    before = disk_state(g, b)
    assert error_of(lambda: client(g.url).copy_object(
        Bucket=b, Key="dst/none.txt", CopySource={"Bucket": b, "Key": "src.txt"})) == \
        ("FencingTokenMissing", 428)
    assert error_of(lambda: client(g.url, meta_token=e - 1).copy_object(
        Bucket=b, Key="dst/copy.txt", CopySource={"Bucket": b, "Key": "src.txt"}))[1] in \
        (400, 409)
    assert disk_state(g, b) == before
    v = c.list_object_versions(Bucket=b, Prefix="dst/")
    assert [(x["Key"], x["VersionId"], x["IsLatest"]) for x in v["Versions"]] == \
        [("dst/copy.txt", "null", True)], v
    assert v["Versions"][0]["ETag"] == h["ETag"], v
    acl = c.get_object_acl(Bucket=b, Key="dst/copy.txt")
    assert [x["Permission"] for x in acl["Grants"]] == ["FULL_CONTROL"], acl
    assert acl["Grants"][0]["Grantee"]["ID"] == acl["Owner"]["ID"], acl


# ---- authentication on: SigV2 ----------------------------------------------

def auth_gate():
    """The embedded store with clients: WRITER may read, write and lock
    AUTH_BUCKET, READER only read; the bucket made and its lock taken."""
    cfg = {"mode": "s3", "unrouted_writes": "bucket_lock", "clients": [
        {"access_key": WRITER[0], "secret_env": "LOCAL_WRITER_SECRET",
         "allow": [{"prefix": "/" + AUTH_BUCKET, "actions": ["read", "write", "lock"]}]},
        {"access_key": READER[0], "secret_env": "LOCAL_READER_SECRET",
         "allow": [{"prefix": "/" + AUTH_BUCKET, "actions": ["read"]}]}]}
    g = harness.Fencegate("--access-log", "off", config=cfg, env=dict(
        os.environ, LOCAL_WRITER_SECRET=WRITER[1], LOCAL_READER_SECRET=READER[1]))
    try:
        client(g.url, creds=WRITER).create_bucket(Bucket=AUTH_BUCKET)
        g.epoch = acquire(g, AUTH_BUCKET, creds=WRITER)
    except BaseException:
        g.close()
        raise
    return g


def presign(creds, g, op, expires=300, **params):
    """boto3 as a user makes it (no signature_version): SigV2 query auth
    against a custom endpoint."""
    url = client(g.url, creds=creds).generate_presigned_url(
        op, Params=dict(params, Bucket=AUTH_BUCKET), ExpiresIn=expires)
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    assert {"AWSAccessKeyId", "Signature", "Expires"} <= set(q), url
    return url


def urlopen(url, method="GET", data=None, headers=None):
    req = urllib.request.Request(url, method=method, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def curl(url, *args):
    """(status, body) of curl on url."""
    need("curl")
    r = subprocess.run(["curl", "-s", "-o", "-", "-w", "\n%{http_code}"] + list(args) + [url],
                       stdout=subprocess.PIPE, timeout=30)
    out, code = r.stdout.rsplit(b"\n", 1)
    return int(code), out


OCTETS = {"Content-Type": "application/octet-stream"}


def presigned_put(creds, g, key, token, **meta):
    """A presigned PUT with the token (when not None) in its metadata; the
    content type is signed (SigV2 signs it), so the opener sends OCTETS."""
    if token is not None:
        meta["fencing-token"] = str(token)
    return presign(creds, g, "put_object", Key=key, Metadata=meta,
                   ContentType=OCTETS["Content-Type"])


def t_presigned_get_put(g, tmp):
    body = os.urandom(100000)
    client(g.url, meta_token=g.epoch, creds=WRITER).put_object(Bucket=AUTH_BUCKET, Key="pre/get",
                                                                Body=body)
    for creds in (WRITER, READER):
        url = presign(creds, g, "get_object", Key="pre/get")
        assert urlopen(url) == (200, body)
        assert curl(url) == (200, body)
    # fenced PUTs: the token in the presigned metadata, read as the token
    url = presigned_put(WRITER, g, "pre/urllib", g.epoch, note="n")
    assert "x-amz-meta-fencing-token=" in url, url
    assert urlopen(url, "PUT", b"by urllib", OCTETS)[0] == 200
    assert on_disk(g, AUTH_BUCKET, "pre/urllib") == b"by urllib"
    h = client(g.url, creds=WRITER).head_object(Bucket=AUTH_BUCKET, Key="pre/urllib")
    assert h["Metadata"] == {"note": "n"} and h["ContentType"] == OCTETS["Content-Type"], h
    assert object_epoch(client(g.url, creds=WRITER), AUTH_BUCKET, "pre/urllib") == str(g.epoch)
    # botocore moved the signed Content-Type into the query (content-type=):
    # read as the header, like x-amz-*, so a client that sends none works
    url = presigned_put(WRITER, g, "pre/untyped", g.epoch)
    assert "content-type=application%2Foctet-stream" in url, url
    u = urllib.parse.urlsplit(url)
    assert raw(g.port, "PUT", u.path + "?" + u.query, b"no type sent")[0] == 200
    assert on_disk(g, AUTH_BUCKET, "pre/untyped") == b"no type sent"
    src = write_file(os.path.join(tmp, "curl-put.bin"), os.urandom(3000))
    url = presigned_put(WRITER, g, "pre/curl", g.epoch)
    assert curl(url, "-X", "PUT", "--data-binary", "@" + src, "-H",
                "Content-Type: application/octet-stream")[0] == 200
    with open(src, "rb") as f:
        assert on_disk(g, AUTH_BUCKET, "pre/curl") == f.read()
    # refusals: no token, a stale token, a reader's URL; nothing lands
    before = disk_state(g, AUTH_BUCKET)
    for creds, token, status, code in ((WRITER, None, 428, "FencingTokenMissing"),
                                       (WRITER, 0, 400, "FencingTokenInvalid"),
                                       (READER, g.epoch, 403, "AccessDenied")):
        url = presigned_put(creds, g, "pre/refused", token)
        st, out = urlopen(url, "PUT", b"refused", OCTETS)
        assert (st, s3_code(out)) == (status, code), (st, out)
        assert curl(url, "-X", "PUT", "--data-binary", "refused", "-H",
                    "Content-Type: application/octet-stream")[0] == status
    assert disk_state(g, AUTH_BUCKET) == before


def t_presigned_expired_tampered(g, tmp):
    body = b"expires"
    client(g.url, meta_token=g.epoch, creds=WRITER).put_object(Bucket=AUTH_BUCKET, Key="pre/exp",
                                                                Body=body)
    get = presign(WRITER, g, "get_object", expires=1, Key="pre/exp")
    put = presign(WRITER, g, "put_object", expires=1, Key="pre/exp-put", ContentType=OCTETS[
        "Content-Type"], Metadata={"fencing-token": str(g.epoch)})
    time.sleep(2.2)
    before = disk_state(g, AUTH_BUCKET)
    for url, method, data in ((get, "GET", None), (put, "PUT", b"late")):
        st, out = urlopen(url, method, data, OCTETS if data else None)
        assert st == 403 and s3_code(out) == "AccessDenied" and b"expired" in out, (st, out)
        assert curl(url, "-X", method, *(("--data-binary", "late", "-H",
                                          "Content-Type: application/octet-stream")
                                         if data else ()))[0] == 403
    # tampered: another key, a later expiry, another token, one character
    get = presign(WRITER, g, "get_object", Key="pre/exp")
    put = presigned_put(WRITER, g, "pre/exp-put", g.epoch)
    u = urllib.parse.urlsplit(put)
    q = urllib.parse.parse_qs(u.query)
    later = dict(q, Expires=[str(int(q["Expires"][0]) + 60)])
    sig = q["Signature"][0]
    onechar = dict(q, Signature=[("A" if sig[0] != "A" else "B") + sig[1:]])
    for url, method in ((get.replace("pre/exp", "pre/get"), "GET"),
                        (put.replace("pre/exp-put", "pre/other"), "PUT"),
                        (put.replace("fencing-token=%d" % g.epoch,
                                     "fencing-token=%d" % (g.epoch + 1)), "PUT"),
                        (u._replace(query=urllib.parse.urlencode(later, doseq=True)).geturl(),
                         "PUT"),
                        (u._replace(query=urllib.parse.urlencode(onechar, doseq=True)).geturl(),
                         "PUT")):
        assert url not in (get, put)
        st, out = urlopen(url, method, b"tampered" if method == "PUT" else None,
                          OCTETS if method == "PUT" else None)
        assert st == 403 and s3_code(out) == "SignatureDoesNotMatch", (url, st, out)
    assert disk_state(g, AUTH_BUCKET) == before


def t_s3cmd_v2(g, tmp):
    need("s3cmd")
    cfg = s3cmd_config(os.path.join(tmp, "s3cfg-v2"), WRITER, g.port, signature_v2=True)
    base = ["s3cmd", "-c", cfg, "--signature-v2", "--no-check-md5"]

    def s3cmd(*args, ok=True):
        r = harness.run(base + list(args), env=env(), timeout=120)
        assert (r.returncode == 0) == ok, (args, r.stdout, r.stderr)
        return r.stdout + r.stderr
    data = os.urandom(200000)
    src = write_file(os.path.join(tmp, "v2.bin"), data)
    s3cmd("put", "--add-header=x-amz-meta-fencing-token:%d" % g.epoch, src,
          "s3://%s/s3cmdv2/in.bin" % AUTH_BUCKET)
    assert on_disk(g, AUTH_BUCKET, "s3cmdv2/in.bin") == data
    assert object_epoch(client(g.url, creds=WRITER), AUTH_BUCKET, "s3cmdv2/in.bin") == \
        str(g.epoch)
    out = os.path.join(tmp, "v2.back")
    s3cmd("get", "--force", "s3://%s/s3cmdv2/in.bin" % AUTH_BUCKET, out)
    with open(out, "rb") as f:
        assert f.read() == data
    assert "s3cmdv2/in.bin" in s3cmd("ls", "s3://%s/s3cmdv2/" % AUTH_BUCKET)
    before = disk_state(g, AUTH_BUCKET)
    # X-Fencing-Token cannot be signed with SigV2: 403; no token: 428;
    # s3cmd's DELETE carries no --add-header: 428, the object stays
    assert "AccessDenied" in s3cmd("put", "--add-header=X-Fencing-Token:%d" % g.epoch, src,
                                   "s3://%s/s3cmdv2/hdr.bin" % AUTH_BUCKET, ok=False)
    assert "FencingTokenMissing" in s3cmd("put", src, "s3://%s/s3cmdv2/none.bin" % AUTH_BUCKET,
                                          ok=False)
    assert "FencingTokenMissing" in s3cmd("del", "s3://%s/s3cmdv2/in.bin" % AUTH_BUCKET,
                                          ok=False)
    assert disk_state(g, AUTH_BUCKET) == before


CASES = (("@aws-sdk/client-s3 fenced: put (header, metadata), default copy, list, delete, "
          "DeleteObjects (header, metadata; lock file refused)", t_js_sdk_fenced, "fenced"),
         ("@aws-sdk/client-s3 unfenced: put, copy, list, delete, DeleteObjects",
          t_js_sdk_unfenced, "free"),
         ("@aws-sdk/s3-request-presigner: presigned PUT (token header) and GET",
          t_js_presigned, "fenced"),
         ("boto3 delete_objects fenced by header or metadata, lock file refused",
          t_boto3_delete_objects, "fenced"),
         ("boto3 delete_objects unfenced", t_boto3_delete_objects_unfenced, "free"),
         ("boto3 version-aware cleanup: delete_objects with VersionId null",
          t_boto3_delete_versions, "fenced"),
         ("boto3 copy_object default directive, token as metadata; versions, ACL",
          t_boto3_copy_versions_acl, "fenced"),
         ("auth on: boto3 presigned SigV2 GET and fenced PUT via urllib and curl",
          t_presigned_get_put, "auth"),
         ("auth on: presigned SigV2 expired and tampered 403, nothing written",
          t_presigned_expired_tampered, "auth"),
         ("auth on: s3cmd --signature-v2 put (metadata token), get, ls; refusals", t_s3cmd_v2,
          "auth"))


if __name__ == "__main__":
    sys.exit(main_gates("test_local_clients2", CASES, lambda: {"auth": auth_gate()}))
