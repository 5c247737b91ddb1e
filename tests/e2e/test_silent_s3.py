#!/usr/bin/env python3
"""S3 that accepts connections and never answers (issue 23): every wait of
the proxy has a deadline.

A relay between fencegate and moto can turn silent: it accepts and reads
but answers nothing. While it is silent an unfenced GET gets 504 within the
upstream timeout, a fenced write of a small body to a key the proxy has
not seen (sent at once with If-None-Match "*", the unread create) gets 504
within the upstream timeout, and one whose object must be read first (a
body beyond the held window, --replay-bytes) gets 503 within
FENCING_STORE_CALL_MS (5 s) plus slack, before the longer upstream
timeout, and nothing reaches moto; once S3 answers again both work (the lock
kept fresh there, --lock-refresh 3600s, so that the object call's own
deadline is measured). A write whose lock must be loaded again (1 s
refresh) gets 503 within the interval plus LOCKREG_OP_MS (5 s). With
--check-bucket, /_fence/ready turns 503 within the probe's period and
timeout (5 + 2 s) while /_fence/live stays 200, and ready comes back. moto is stopped by its PID; the relay is a thread
bounded by the test. Prints 'N passed, N failed'."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from relay import Relay  # noqa: E402
from test_fencing import Gate, acquire, expect, moto_body, req  # noqa: E402

UPSTREAM_TIMEOUT_S = 9  # longer than CALL_DEADLINE_S + SLACK_S: the object call's own bound shows
HELD_BYTES = 1024       # --replay-bytes: a larger body is read-first (HEAD)
CALL_DEADLINE_S = 5     # FENCING_STORE_CALL_MS
SLACK_S = 3
READY_BOUND_S = 5 + 2 + SLACK_S  # UPSTREAM_PROBE_MS + its timeout (lockapi_int.h)


def timed(fn):
    t0 = time.monotonic()
    out = fn()
    return out, time.monotonic() - t0


def test_silent_s3(moto):
    b = "silent-s3"
    moto.create_bucket(b)
    relay = Relay(moto.port)
    g = Gate("--upstream", relay.url, "--access-log", "off", "--workers", "1",
             "--lock-refresh", "3600s", "--upstream-timeout", "%ds" % UPSTREAM_TIMEOUT_S,
             "--check-bucket", b, "--replay-bytes", str(HELD_BYTES))
    big = b"v2" * HELD_BYTES
    try:
        harness.wait_for("ready", lambda: req(g.port, "GET", "/_fence/ready")[0] == 200, 30)
        e = acquire(g.port, b, "w")
        t = {"X-Fencing-Token": str(e)}
        st, _, d = req(g.port, "PUT", "/%s/seen" % b, b"v1", t)
        expect(st == 200, "first write: %s %s" % (st, d))
        relay.silent = True
        (st, _, d), took = timed(lambda: req(g.port, "GET", "/%s/seen" % b, timeout=30))
        expect(st == 504 and took < UPSTREAM_TIMEOUT_S + SLACK_S,
               "GET while S3 is silent: %s after %.1fs" % (st, took))
        (st, _, d), took = timed(lambda: req(g.port, "PUT", "/%s/unread" % b, b"v2", t,
                                             timeout=60))
        expect(st == 504 and took < UPSTREAM_TIMEOUT_S + SLACK_S,
               "fenced small write of an unseen key while S3 is silent: %s after %.1fs %s" %
               (st, took, d[:200]))
        (st, _, d), took = timed(lambda: req(g.port, "PUT", "/%s/unseen" % b, big, t,
                                             timeout=60))
        expect(st == 503 and took < CALL_DEADLINE_S + SLACK_S and
               b"cannot read the object" in d,
               "fenced write of an unseen key, read first, while S3 is silent: %s after "
               "%.1fs %s" % (st, took, d[:200]))
        # readiness follows the storage, liveness the process: an outage
        # takes the replica out of a load balancer and restarts nothing
        (st, _, d), took = timed(lambda: harness.wait_for(
            "not ready", lambda: (lambda r: r if r[0] == 503 else None)(
                req(g.port, "GET", "/_fence/ready")), READY_BOUND_S))
        expect(b"upstream_unreachable" in d, "unready, saying why: %s" % d)
        st, _, d = req(g.port, "GET", "/_fence/live")
        expect(st == 200 and b'"ready":false' in d, "alive: %s %s" % (st, d))
        relay.loud()
        harness.wait_for("ready again", lambda: req(g.port, "GET", "/_fence/ready")[0] == 200,
                         READY_BOUND_S)
        expect(moto_body(moto, b, "unseen")[0] is None and
               moto_body(moto, b, "unread")[0] is None, "nothing reached moto")
        st, _, d = req(g.port, "PUT", "/%s/unseen" % b, big, t)
        expect(st == 200, "S3 answers again: the write goes through: %s %s" % (st, d))
        st, _, d = req(g.port, "GET", "/%s/seen" % b)
        expect(st == 200 and d == b"v1", "and reads: %s" % st)
        expect(moto_body(moto, b, "unseen")[0] == big, "moto holds it")
    finally:
        g.close()
        relay.close()


def test_silent_lock_store(moto):
    """The lock's knowledge ages past the refresh interval while S3 is
    silent: the write waits for a load, which fails at its deadline
    (LOCKREG_OP_MS, 5 s): 503 within the interval plus that, never longer."""
    b = "silent-locks"
    moto.create_bucket(b)
    relay = Relay(moto.port)
    g = Gate("--upstream", relay.url, "--access-log", "off", "--workers", "1",
             "--lock-refresh", "1s")
    try:
        e = acquire(g.port, b, "w")
        t = {"X-Fencing-Token": str(e)}
        st, _, d = req(g.port, "PUT", "/%s/k" % b, b"v1", t)
        expect(st == 200, "first write: %s %s" % (st, d))
        relay.silent = True
        time.sleep(1.2)
        (st, _, d), took = timed(lambda: req(g.port, "PUT", "/%s/k" % b, b"v2", t, timeout=90))
        expect(st == 503 and took < 1 + CALL_DEADLINE_S + SLACK_S,
               "a write needing a load while S3 is silent: %s after %.1fs %s" %
               (st, took, d[:160]))
        relay.loud()
        expect(moto_body(moto, b, "k")[0] == b"v1", "nothing reached moto")
        st, _, d = req(g.port, "PUT", "/%s/k" % b, b"v3", t)
        expect(st == 200, "S3 answers again: %s %s" % (st, d))
        expect(moto_body(moto, b, "k")[0] == b"v3", "moto holds it")
    finally:
        g.close()
        relay.close()


def main():
    r = harness.Runner("e2e silent s3")
    moto = harness.Moto()
    try:
        r.check("S3 silent: GET 504 and a fenced write 503 within their deadlines",
                test_silent_s3, moto)
        r.check("S3 silent: a write that needs a lock load gets 503 within its deadline",
                test_silent_lock_store, moto)
    finally:
        moto.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
