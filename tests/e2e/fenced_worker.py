#!/usr/bin/env python3
"""A worker for the client SIGSTOP tests (test_client_python.py): takes lock
BUCKET with the installed fencegate package, then writes NAME:i to
BUCKET/KEY every 50 ms (at most 400 times), printing "wrote i" after each.
Mode "attach" uses lock.attach (the client refuses writes past the
deadline); mode "raw" only puts the token on (so the proxy must refuse).
It prints and exits: "lost-client" 3 (LeaseLost), "refused-proxy CODE" 4
(an S3 error), "done" 0. Credentials and region come from the environment."""
import sys
import time

import boto3
from botocore.config import Config

import fencegate


def main():
    url, bucket, key, name, ttl, mode = sys.argv[1:7]
    s3 = boto3.client("s3", endpoint_url=url, config=Config(
        s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    lock = fencegate.Lock(url, bucket, ttl=float(ttl), holder=name)
    try:
        with lock:
            print("epoch %d" % lock.epoch, flush=True)
            if mode == "attach":
                lock.attach(s3)
            else:
                def token(params, model, **_):
                    if model.name == "PutObject":
                        params["headers"]["X-Fencing-Token"] = str(lock.epoch)
                s3.meta.events.register("before-call.s3", token)
            for i in range(1, 401):
                s3.put_object(Bucket=bucket, Key=key, Body=("%s:%d" % (name, i)).encode())
                print("wrote %d" % i, flush=True)
                time.sleep(0.05)
    except fencegate.LeaseLost as e:
        print("lost-client %s" % e, flush=True)
        return 3
    except s3.exceptions.ClientError as e:
        print("refused-proxy %s %s" % (e.response["Error"]["Code"],
                                       e.response["ResponseMetadata"]["HTTPStatusCode"]), flush=True)
        return 4
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
