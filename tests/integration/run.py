"""Integration tests of the lock library and fencectl against real stores.

Starts one moto_server on a free loopback port (stopped by PID at the end)
and a temporary directory, then runs, against each: itest_lock (the
protocol, in C), test_store_s3 (the S3 backend, moto only) and the fencectl
scenarios of test_fencectl.py. Then the same lock suites against Ceph's
radosgw (tests/radosgw.py: a real S3 server whose If-Match wants bare
ETags and whose DELETE ignores If-Match), and what `fencectl check` says
of it. Prints 'integration: N passed, N failed'."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
import radosgw  # noqa: E402
import test_fencectl  # noqa: E402

BUCKET = "fence-it"


def c_test(binary, env):
    def go():
        path = os.path.join(harness.TESTBIN, binary)
        if not os.path.exists(path):
            raise AssertionError("%s is not built" % path)
        p = harness.run([path], env=env, timeout=300)
        sys.stdout.write(p.stdout + p.stderr)
        if p.returncode != 0:
            raise AssertionError("%s exited %d" % (binary, p.returncode))
    return go


def main():
    runner = harness.Runner("integration")
    moto = harness.Moto()
    tmp = harness.TempDir()
    try:
        moto.create_bucket(BUCKET)
        s3env = dict(os.environ, **harness.CREDS)
        s3env["AWS_ENDPOINT_URL"] = moto.url
        s3env.pop("FENCE_STORE", None)
        fsurl = "file://" + tmp.path
        fsenv = dict(s3env)

        if os.path.exists(os.path.join(harness.TESTBIN, "test_store_s3")):
            env = dict(s3env, FENCE_TEST_S3_ENDPOINT=moto.url, FENCE_TEST_S3_BUCKET=BUCKET)
            runner.check("store_s3 on moto", c_test("test_store_s3", env))
        runner.check("itest_lock on moto", c_test("itest_lock", dict(s3env, FENCE_STORE="s3://" + BUCKET)))
        runner.check("itest_lock on a directory", c_test("itest_lock", dict(fsenv, FENCE_STORE=fsurl)))

        s3 = test_fencectl.Store("s3://" + BUCKET, s3env, moto=moto, bucket=BUCKET)
        test_fencectl.run_all(runner, s3, "s3")
        s3root = test_fencectl.Store("s3://%s/team-a" % BUCKET, s3env, moto=moto, bucket=BUCKET,
                                     root="team-a/")
        runner.check("s3-root seed_format_respected", test_fencectl.seed_format_respected, s3root)
        fs = test_fencectl.Store(fsurl, fsenv)
        test_fencectl.run_all(runner, fs, "dir")
        runner.check("s3 missing_credentials", test_fencectl.missing_credentials, moto, BUCKET)
        runner.check("check_refuses_liar", test_fencectl.check_refuses_liar)
    finally:
        moto.close()
        tmp.close()
    on_radosgw(runner)
    return runner.finish()


def check_on_radosgw(s):
    """fencectl check passes radosgw for locks, says If-Match goes bare, and
    names the operations the proxy refuses there."""
    p = test_fencectl.expect(s.ctl("check", "--json"), 0, "check on radosgw")
    import json
    j = json.loads(p.stdout)
    caps = j["capabilities"]
    assert j["ok"] and j["if_match"] == "bare", j
    assert caps["put_if_none_match"]["ok"] and caps["race"]["ok"], caps
    assert not caps["put_if_match_quoted"]["ok"] and caps["put_if_match_bare"]["ok"], caps
    assert not caps["delete_if_match"]["ok"], caps
    assert j["operations"]["delete"] == "backend ignores If-Match on DELETE", j["operations"]
    assert j["operations"]["put"] == "ok" and j["operations"]["lock"] == "ok", j["operations"]


def on_radosgw(runner):
    """The lock suites against a real radosgw; a radosgw that cannot start
    is a failure, never a skip."""
    rgw = radosgw.start_checked(runner)
    if rgw is None:
        return
    try:
        rgw.create_bucket(BUCKET)
        env = dict(os.environ, **harness.CREDS)
        env["AWS_ENDPOINT_URL"] = rgw.url
        env.pop("FENCE_STORE", None)
        env.pop("FENCE_S3_DIALECT", None)
        runner.check("itest_lock on radosgw",
                     c_test("itest_lock", dict(env, FENCE_STORE="s3://" + BUCKET)))
        s3 = test_fencectl.Store("s3://" + BUCKET, env, moto=rgw, bucket=BUCKET)
        test_fencectl.run_all(runner, s3, "radosgw")
        runner.check("radosgw check names what is refused", check_on_radosgw, s3)
    finally:
        rgw.close()


if __name__ == "__main__":
    sys.exit(main())
