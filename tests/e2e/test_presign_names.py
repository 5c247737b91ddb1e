#!/usr/bin/env python3
"""Presigned URLs whose authentication parameter names are percent-encoded
(X-Amz-%53ignature, %58-Amz-Credential, ...): the proxy decodes parameter
names to classify and verify them, so such a URL is accepted as presigned;
what it forwards must then carry none of the client's presign parameters,
in any spelling, since the proxy re-signs with its own credentials. A TCP
relay between fencegate and moto records the request line that reaches
storage. Expected to FAIL on 503ef99 (issue 21: the forwarder compares
the names raw when it strips them) until proxy_forward.c strips by decoded
name. Prints 'N passed, N failed'."""
import json
import os
import socket
import subprocess
import sys
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from test_fencing_ops import CountingProxy  # noqa: E402

BUCKET = "presign-names"
KEY = ("AKIDPRESIGN0001", "presign-secret-0001")
AUTH_PARAMS = ("x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-expires",
               "x-amz-signedheaders", "x-amz-signature", "x-amz-security-token")


def raw_get(port, target):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n"
                   % (target, port)).encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


def encode_name(query, name, encoded):
    """query with parameter name (exact, as botocore writes it) respelled."""
    parts = query.split("&")
    out = [encoded + p[len(name):] if p.startswith(name + "=") else p for p in parts]
    assert out != parts, (name, query)
    return "&".join(out)


def forwarded_auth_params(line):
    """The presign parameters (decoded, lowercased names) in a request line."""
    target = line.split(" ")[1]
    query = target.split("?", 1)[1] if "?" in target else ""
    names = [urllib.parse.unquote(p.split("=", 1)[0]).lower() for p in query.split("&") if p]
    return [n for n in names if n in AUTH_PARAMS]


def main():
    r = harness.Runner("e2e presign names")
    moto = harness.Moto()
    relay = CountingProxy(moto.port)
    tmp = harness.TempDir()
    proc = None
    try:
        moto.create_bucket(BUCKET)
        moto.client().put_object(Bucket=BUCKET, Key="obj", Body=b"presigned body")
        port = harness.free_port()
        cfg = {"listen": ["127.0.0.1:%d" % port],
               "upstream": {"endpoint": relay.url, "region": "us-east-1"},
               "unrouted_writes": "bucket_lock",
               "clients": [{"access_key": KEY[0], "secret_env": "GW_PRESIGN_SECRET",
                            "allow": [{"prefix": "/%s" % BUCKET,
                                       "actions": ["read", "write", "lock"]}]}]}
        path = os.path.join(tmp.path, "fencegate.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        env = dict(os.environ, **harness.CREDS)
        env["GW_PRESIGN_SECRET"] = KEY[1]
        log = open(os.path.join(tmp.path, "fencegate.log"), "w+")
        proc = subprocess.Popen([os.path.join(harness.BIN, "fencegate"), "-c", path,
                                 "--access-log", "off"], stdout=log, stderr=subprocess.STDOUT,
                                env=env)
        harness.wait_port(port, proc)
        import boto3
        from botocore.config import Config
        s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % port,
                          region_name="us-east-1", aws_access_key_id=KEY[0],
                          aws_secret_access_key=KEY[1],
                          config=Config(s3={"addressing_style": "path"},
                                        signature_version="s3v4"))

        def presigned():
            u = urllib.parse.urlsplit(s3.generate_presigned_url(
                "get_object", Params={"Bucket": BUCKET, "Key": "obj"}, ExpiresIn=300))
            return u.path, u.query

        def check(respell):
            p, q = presigned()
            for name, encoded in respell:
                q = encode_name(q, name, encoded)
            relay.reset()
            st, body = raw_get(port, p + "?" + q)
            lines = relay.to_path("/%s/obj" % BUCKET)
            if st != 200:
                # refused is also safe, provided nothing reached storage
                assert lines == [], (st, body, lines)
                return
            assert body == b"presigned body", (st, body)
            assert len(lines) == 1, lines
            leaked = forwarded_auth_params(lines[0])
            assert leaked == [], "forwarded to storage: %s in %s" % (leaked, lines[0])

        r.check("plain presigned GET: no presign parameter reaches storage",
                check, [])
        r.check("X-Amz-%53ignature: accepted, and stripped before storage",
                check, [("X-Amz-Signature", "X-Amz-%53ignature")])
        r.check("%58-Amz-Credential and X-Amz-%44ate: stripped before storage",
                check, [("X-Amz-Credential", "%58-Amz-Credential"),
                        ("X-Amz-Date", "X-Amz-%44ate")])
        r.check("X-Amz-%53igned%48eaders: stripped before storage",
                check, [("X-Amz-SignedHeaders", "X-Amz-%53igned%48eaders")])
    finally:
        if proc:
            harness.stop(proc)
        relay.close()
        moto.close()
        tmp.close()
    r.finish()
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
