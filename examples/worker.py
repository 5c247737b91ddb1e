#!/usr/bin/env python3
"""worker.py — a read-modify-write worker with boto3: the lock from
fencegate's lock HTTP API, the object through fencegate's S3 API with the
token as object metadata (any S3 client can send that), a renewal, a
release. A write whose epoch is no longer current gets 409 from the proxy
and is never stored.

    FENCEGATE=http://127.0.0.1:8080 examples/worker.py BUCKET KEY

It adds 1 to the number stored at BUCKET/KEY and prints the new value;
exit 3 when another worker holds the lock."""
import json
import os
import sys
import urllib.error
import urllib.request

import boto3
from botocore.config import Config

GATE = os.environ.get("FENCEGATE", "http://127.0.0.1:8080")


def lock_api(lock, op, body):
    req = urllib.request.Request("%s/_fence/locks/%s/%s" % (GATE, lock, op),
                                 data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def main():
    bucket, key = sys.argv[1], sys.argv[2]
    st, grant = lock_api(bucket, "acquire", {"ttlMs": 30000, "holder": "worker.py"})
    if st == 409:
        print("held by %s" % grant.get("holder"), file=sys.stderr)
        return 3
    if st != 200:
        print("acquire: %s %s" % (st, grant), file=sys.stderr)
        return 1
    epoch = grant["epoch"]
    s3 = boto3.client("s3", endpoint_url=GATE, region_name="us-east-1",
                      aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "worker"),
                      aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "worker"),
                      config=Config(s3={"addressing_style": "path"}))
    try:
        old = int(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    except s3.exceptions.NoSuchKey:
        old = 0
    s3.put_object(Bucket=bucket, Key=key, Body=str(old + 1).encode(),
                  Metadata={"fencing-token": str(epoch)})
    lock_api(bucket, "renew", {"epoch": epoch})
    lock_api(bucket, "release", {"epoch": epoch})
    print(old + 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
