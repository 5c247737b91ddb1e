#!/usr/bin/env python3
"""End-to-end: `fencectl --proxy URL run NAME -- CMD` against an
embedded-store fencegate with authentication on (the clients of
test_fencectl_auth.py; every lock call signed with the WORKER's key).

- A run longer than its lease: the child gets FENCING_TOKEN and FENCE_LOCK,
  another acquire past the ttl finds the lock held (the renewals through
  the API kept it), the child's write with the token lands, and at the end
  the lock is released (the next acquire is the next epoch, at once).
- Lease lost: fencectl is stopped (SIGSTOP) past its deadline while
  another holder takes the lock, then continued: it stops the child and
  exits 3 saying "lease lost"; the child's process is gone.
- Held by another: exit 3, the child never starts. Unsigned: exit 1, the
  403 said in one line, the child never starts.

Every wait is bounded; processes are stopped by PID. It does not test
TLS (test_fencectl_auth.py does, for the same calls)."""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from test_fencectl_auth import FENCECTL, WORKER, ctl, env_for, expect, gate, lock_file, \
    lock_files, s3  # noqa: E402

BUCKET = "jobs"


def start(g, out, *child, creds=WORKER, **env):
    """fencectl --proxy URL run BUCKET --ttl 2s -- child, in the background,
    signed with creds (None: unsigned), env added to its environment; its
    stderr in out.err."""
    err = open(out + ".err", "wb")
    p = subprocess.Popen([FENCECTL, "--proxy", g.url, "run", BUCKET, "--ttl", "2s",
                          "--holder", "runner", "--"] + list(child),
                         stdout=subprocess.DEVNULL, stderr=err, env=env_for(creds, **env))
    err.close()
    return p


def wait_file(path, proc, seconds=15):
    harness.wait_for("%s written" % path,
                     lambda: os.path.exists(path) and open(path).read().endswith("\n")
                     or proc.poll() is not None, timeout=seconds)
    assert os.path.exists(path), "the child never started:\n" + open(path + ".err").read()
    return open(path).read().split()


def finish(p, seconds):
    try:
        return p.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise AssertionError("fencectl run did not end within %ds" % seconds)


def t_run_renews_and_releases(g, tmp):
    out = os.path.join(tmp, "renew.out")
    write = ("import boto3, os; boto3.client('s3', endpoint_url=%r, region_name='us-east-1')"
             ".put_object(Bucket=%r, Key='run.txt', Body=b'by the runner', "
             "Metadata={'fencing-token': os.environ['FENCING_TOKEN']})" % (g.url, BUCKET))
    # the child outlives the 2 s lease three times over, then writes with its token
    p = start(g, out, "sh", "-c", 'echo "$FENCING_TOKEN $FENCE_LOCK" > %s; sleep 6; '
              'exec python3 -c "$W"' % out, W=write)
    try:
        token, lock = wait_file(out, p)
        assert lock == BUCKET, lock
        epoch = int(token)
        assert lock_files(g, BUCKET)[-1] == epoch
        assert lock_file(g, BUCKET, epoch)["leaderId"] == "runner"
        for _ in range(2):  # past the ttl, twice: still held, renewed through the API
            time.sleep(2.2)
            q = expect(ctl(g, "acquire", BUCKET, "--holder", "other"), 3, "acquire while run holds")
            assert '"runner"' in q.stderr, q.stderr
        code = finish(p, 30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert code == 0, "run exited %d:\n%s" % (code, open(out + ".err").read())
    with open(os.path.join(g.data, BUCKET, "run.txt"), "rb") as f:
        assert f.read() == b"by the runner"
    nxt = int(expect(ctl(g, "acquire", BUCKET, "--holder", "after"), 0,
                     "acquire after the run released").stdout)
    assert nxt == epoch + 1, (epoch, nxt)
    expect(ctl(g, "release", BUCKET, str(nxt)), 0, "release")


def t_run_lease_lost(g, tmp):
    out = os.path.join(tmp, "lost.out")
    p = start(g, out, "sh", "-c", 'echo "$FENCING_TOKEN $$" > %s; exec sleep 60' % out)
    try:
        token, child = wait_file(out, p)
        epoch, child = int(token), int(child)
        os.kill(p.pid, signal.SIGSTOP)
        try:
            # the 2 s lease runs out while fencectl cannot renew; another takes it
            deadline = time.monotonic() + 10
            while True:
                q = ctl(g, "acquire", BUCKET, "--holder", "taker")
                if q.returncode == 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.3)
            expect(q, 0, "another holder takes the lapsed lock")
            taken = int(q.stdout)
            assert taken == epoch + 1, (epoch, taken)
        finally:
            os.kill(p.pid, signal.SIGCONT)
        code = finish(p, 15)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    err = open(out + ".err").read()
    assert code == 3, "run exited %d, want 3:\n%s" % (code, err)
    assert "lease lost" in err, err
    try:
        os.kill(child, 0)
        raise AssertionError("the child %d still runs after the lease was lost" % child)
    except ProcessLookupError:
        pass
    expect(ctl(g, "release", BUCKET, str(taken)), 0, "the taker releases")


def t_run_held(g, tmp):
    e = int(expect(ctl(g, "acquire", BUCKET, "--holder", "holder", "--ttl", "30s"), 0,
                   "acquire").stdout)
    out = os.path.join(tmp, "held.out")
    p = start(g, out, "sh", "-c", "echo started > %s" % out)
    code = finish(p, 15)
    err = open(out + ".err").read()
    assert code == 3, "run exited %d, want 3:\n%s" % (code, err)
    assert '"holder"' in err and not os.path.exists(out), err
    expect(ctl(g, "release", BUCKET, str(e)), 0, "release")


def t_run_unsigned(g, tmp):
    before = lock_files(g, BUCKET)
    out = os.path.join(tmp, "unsigned.out")
    p = start(g, out, "sh", "-c", "echo started > %s" % out, creds=None)
    code = finish(p, 15)
    err = open(out + ".err").read()
    assert code == 1, "run exited %d, want 1:\n%s" % (code, err)
    assert "403 AccessDenied" in err and len(err.strip().splitlines()) == 1, err
    assert not os.path.exists(out) and lock_files(g, BUCKET) == before


def main():
    r = harness.Runner("e2e fencectl-proxy-run")
    tmp = harness.TempDir()
    g = None
    try:
        g = gate()
        g.wait_ready()
        s3(g, None).create_bucket(Bucket=BUCKET)
        for label, fn in [
            ("run through the API: token in the child, renewed past the ttl, write lands, "
             "released", t_run_renews_and_releases),
            ("SIGSTOP past the deadline, another takes the lock: exit 3, child stopped",
             t_run_lease_lost),
            ("held by another: exit 3, the child never starts", t_run_held),
            ("unsigned: exit 1 with the 403, the child never starts", t_run_unsigned),
        ]:
            r.check(label, fn, g, tmp.path)
        if r.failed:
            print(g.stderr()[-3000:])
    finally:
        if g:
            g.close()
        tmp.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
