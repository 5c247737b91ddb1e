#!/usr/bin/env python3
"""worker.py — a fenced read-modify-write step with boto3 and the fencegate
package (pip install ./lock/python): the lock is taken, renewed on a thread
and released by `with`; lock.attach puts its token on the client's writes
and refuses them once the lease is lost. Adds 1 to the number at
BUCKET/KEY and prints it; exit 3 when another worker holds the lock.
Credentials come from the AWS chain, as for any boto3 program (with the
proxy's authentication off, any key will do).

    FENCEGATE=http://127.0.0.1:8080 examples/worker.py BUCKET KEY"""
import os
import sys

import boto3
import fencegate

gate, (bucket, key) = os.environ.get("FENCEGATE", "http://127.0.0.1:8080"), sys.argv[1:3]
try:
    with fencegate.Lock(gate, bucket, ttl=30) as lock:
        s3 = lock.attach(boto3.client("s3", endpoint_url=gate))
        try:
            n = int(s3.get_object(Bucket=bucket, Key=key)["Body"].read()) + 1
        except s3.exceptions.NoSuchKey:
            n = 1
        s3.put_object(Bucket=bucket, Key=key, Body=str(n).encode())
except fencegate.LockHeld as e:
    print("held by %s" % e.holder, file=sys.stderr)
    sys.exit(3)
print(n)
