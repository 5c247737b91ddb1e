#!/usr/bin/env python3
"""aws-chunked uploads through a proxy with client authentication off, in
front of a server that checks what it is sent (radosgw here; AWS would
too). The proxy decodes the body and forwards it plain under its own
signature (proxy/s3/authz.c); before, it forwarded the client's chunk
framing and signatures under a request it re-signed, and radosgw refused
it (400 XAmzContentSHA256Mismatch). moto never checks, so only a real
server shows it.

Each case sends one fenced PUT with a STREAMING-UNSIGNED-PAYLOAD-TRAILER
body (CRC32 trailer), as boto3 and the AWS CLI do over https, and asserts
what radosgw holds (read directly). Prints 'N passed, N failed'."""
import base64
import datetime
import hashlib
import hmac
import http.client
import os
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import radosgw  # noqa: E402
from test_fencing import Gate, acquire, expect, moto_body  # noqa: E402
from test_radosgw import wait_healthy  # noqa: E402


def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def signed_put(port, path, headers, body, access="test", secret="test", region="us-east-1"):
    """A SigV4-signed PUT whose x-amz-content-sha256 is already in headers."""
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    h = {k.lower(): v for k, v in headers.items()}
    h["host"] = "127.0.0.1:%d" % port
    h["x-amz-date"] = amz_date
    names = sorted(h)
    canonical = "\n".join(["PUT", path, ""] + ["%s:%s" % (n, h[n].strip()) for n in names] +
                          ["", ";".join(names), h["x-amz-content-sha256"]])
    scope = "%s/%s/s3/aws4_request" % (day, region)
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    k = _hmac(("AWS4" + secret).encode(), day)
    for part in (region, "s3", "aws4_request"):
        k = _hmac(k, part)
    sig = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    h["authorization"] = ("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s"
                          % (access, scope, ";".join(names), sig))
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    c.request("PUT", path, body=body, headers=h)
    r = c.getresponse()
    out = (r.status, r.read())
    c.close()
    return out


def unsigned_trailer_body(data):
    crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    return (b"%x\r\n" % len(data) + data + b"\r\n0\r\n" +
            ("x-amz-checksum-crc32:%s\r\n\r\n" % crc).encode())


def test_unsigned_trailer(rgw, gate):
    b = "rgw-chunked"
    rgw.create_bucket(b)
    e = acquire(gate.port, b, "c")
    data = b"hello aws-chunked through an auth-off proxy\n"
    st, d = signed_put(gate.port, "/%s/obj" % b, {
        "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
        "content-encoding": "aws-chunked",
        "x-amz-decoded-content-length": str(len(data)),
        "x-amz-trailer": "x-amz-checksum-crc32",
        "x-fencing-token": str(e),
        "content-type": "application/octet-stream",
    }, unsigned_trailer_body(data))
    expect(st == 200, "aws-chunked PUT through an auth-off proxy: %s %s" % (st, d[:300]))
    body, meta = moto_body(rgw, b, "obj")
    expect(body == data, "radosgw holds the decoded bytes: %r" % body)


def main():
    r = harness.Runner("e2e aws-chunked on radosgw")
    rgw = radosgw.Radosgw()
    try:
        rgw.create_bucket("rgw-health")
        gate = Gate("--upstream", rgw.url, "--check-bucket", "rgw-health", "--access-log", "off")
        try:
            wait_healthy(gate)
            r.check("STREAMING-UNSIGNED-PAYLOAD-TRAILER", test_unsigned_trailer, rgw, gate)
        finally:
            gate.close()
    finally:
        rgw.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
