#!/usr/bin/env python3
"""The lock API's bodies are read strictly through a running fencegate (the
embedded store): a key given twice, a fractional, negative, exponent or
out-of-range integer is 400 with a message naming the key, and the lock
files on disk are exactly as before. The unit test of the parser
(tests/unit/fence/test_lockapi_args.c) covers the table; this checks the
wiring and that nothing reaches the store."""
import json
import os
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from localgate import acquire, client, disk_state, lock_key, main  # noqa: E402

BUCKET = "strict-bucket"


def post_raw(g, op, raw):
    """(status, JSON answer) of POST /_fence/locks/BUCKET/OP with raw bytes."""
    req = urllib.request.Request("%s/_fence/locks/%s/%s" % (g.url, BUCKET, op), data=raw,
                                 method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def test_refused_changes_nothing(g):
    client(g.url).create_bucket(Bucket=BUCKET)
    e1 = acquire(g, BUCKET, holder="strict-1")
    assert e1 == 1, e1
    st, body = post_raw(g, "release", json.dumps({"epoch": 1}).encode())
    assert st == 200, (st, body)
    e2 = acquire(g, BUCKET, holder="strict-2")
    assert e2 == 2, e2
    before = disk_state(g, BUCKET)
    assert lock_key(BUCKET, 2) in before, sorted(before)
    cases = [
        ("renew", b'{"epoch":1,"epoch":2}', "epoch"),
        ("renew", b'{"epoch":2,"epoch":1}', "epoch"),
        ("release", b'{"epoch":2,"epoch":2}', "epoch"),
        ("renew", b'{"epoch":2,"x":{"k":1,"k":2}}', "\"k\""),
        ("renew", b'{"epoch":2.0}', "epoch"),
        ("renew", b'{"epoch":2.5}', "epoch"),
        ("renew", b'{"epoch":2e0}', "epoch"),
        ("release", b'{"epoch":-2}', "epoch"),
        ("release", b'{"epoch":9223372036854775808}', "epoch"),
        ("release", b'{"epoch":18446744073709551618}', "epoch"),
        ("release", b'{"epoch":1e400}', "epoch"),
        ("acquire", b'{"ttlMs":1000,"ttlMs":600000}', "ttlMs"),
        ("acquire", b'{"ttlMs":30000.5}', "ttlMs"),
        ("acquire", b'{"holder":"a","holder":"b"}', "holder"),
        ("acquire", b'{"waitMs":-1}', "waitMs"),
    ]
    for op, raw, key in cases:
        st, body = post_raw(g, op, raw)
        assert st == 400, (op, raw, st, body)
        assert body.get("error") == "InvalidArgument", (raw, body)
        assert key in body.get("message", ""), (raw, body)
        assert disk_state(g, BUCKET) == before, (op, raw, "the store changed")
    # the same calls well formed do change the store: the check above can fail
    st, body = post_raw(g, "renew", b'{"epoch":2}')
    assert st == 200, (st, body)
    st, body = post_raw(g, "release", b'{"epoch":2}')
    assert st == 200, (st, body)
    after = disk_state(g, BUCKET)
    assert after[lock_key(BUCKET, 2)] != before[lock_key(BUCKET, 2)]
    assert json.loads(after[lock_key(BUCKET, 2)])["expired"] is True


if __name__ == "__main__":
    sys.exit(main("test_lockapi_strict", [
        ("malformed bodies are 400 and leave the lock files as they were",
         test_refused_changes_nothing),
    ]))
