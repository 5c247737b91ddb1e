#!/usr/bin/env python3
"""How reachable the identical-bytes window is (README, "Not guaranteed"):
a measurement, not a test (it asserts nothing; `make bench` does not run it
either: run it by hand, it takes about a minute).

Two replicas A and B in front of moto. A trial, on a fresh key:
  1. the zombie takes epoch e and writes X through B (B lists the lock);
  2. it releases; a new holder takes e+1 through A and rewrites the very
     same bytes X through A (the ETag stays as it was);
  3. after DELAY, the zombie writes Y through B with token e.
The zombie's write lands when B still decides on its listing from step 1
(younger than B's --lock-refresh) and B's If-Match on X's ETag holds. The
table gives the landed count per refresh interval and delay, and for a
strict route (a listing before every write). Prints one line per row."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import harness  # noqa: E402
from test_workers import request as req  # noqa: E402

TRIALS = int(os.environ.get("ABA_TRIALS", "10"))


def lockcall(port, lock, op, **body):
    st, d = req(port, "POST", "/_fence/locks/%s/%s" % (lock, op), json.dumps(body).encode(),
                {"Content-Type": "application/json"})
    assert st == 200, (op, st, d)
    return json.loads(d)


def run(moto, bucket, refresh, delay, strict=False):
    config = None
    extra = ["--lock-refresh", refresh]
    if strict:
        config = {"upstream": {"endpoint": moto.url, "region": "us-east-1"},
                  "unrouted_writes": "reject", "limits": {"refresh_interval_ms": 1000},
                  "locks": [{"name": bucket, "store": "s3://" + bucket,
                             "prefix": "locks/%s/lock-" % bucket}],
                  "routes": [{"prefix": "/%s/" % bucket, "lock": bucket, "strict": True}]}
        extra = []
    a = harness.Fencegate(*([] if config else ["--upstream", moto.url]), "--access-log", "off",
                          "--workers", "1", *extra, data=False, config=config)
    b = harness.Fencegate(*([] if config else ["--upstream", moto.url]), "--access-log", "off",
                          "--workers", "1", *extra, data=False, config=config)
    landed = 0
    try:
        for i in range(TRIALS):
            key = "/%s/k-%s-%g-%d-%d" % (bucket, refresh, delay, strict, i)
            e = lockcall(a.port, bucket, "acquire", ttlMs=60000, holder="zombie")["epoch"]
            st, _ = req(b.port, "PUT", key, b"X", {"X-Fencing-Token": str(e)})
            assert st == 200, st
            lockcall(a.port, bucket, "release", epoch=e)
            e2 = lockcall(a.port, bucket, "acquire", ttlMs=60000, holder="new")["epoch"]
            st, _ = req(a.port, "PUT", key, b"X", {"X-Fencing-Token": str(e2)})
            assert st == 200, st
            time.sleep(delay)
            st, _ = req(b.port, "PUT", key, b"Y", {"X-Fencing-Token": str(e)})
            if st == 200:
                landed += 1
            lockcall(a.port, bucket, "release", epoch=e2)
    finally:
        a.close()
        b.close()
    return landed


def main():
    moto = harness.Moto()
    try:
        n = 0
        for refresh, delays in (("1s", (0, 0.5, 1.2)), ("250ms", (0, 0.3))):
            for delay in delays:
                n += 1
                bucket = "aba-%d" % n
                moto.create_bucket(bucket)
                landed = run(moto, bucket, refresh, delay)
                print("refresh %-6s zombie %4d ms after the rewrite: %d of %d landed" %
                      (refresh, delay * 1000, landed, TRIALS))
                sys.stdout.flush()
        moto.create_bucket("aba-strict")
        landed = run(moto, "aba-strict", "1s", 0, strict=True)
        print("strict route   zombie    0 ms after the rewrite: %d of %d landed" %
              (landed, TRIALS))
    finally:
        moto.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
