"""Integration tests of the lock library and fencectl against real stores.

Starts one moto_server on a free loopback port (stopped by PID at the end)
and a temporary directory, then runs, against each: itest_lock (the
protocol, in C), test_store_s3 (the S3 backend, moto only) and the fencectl
scenarios of test_fencectl.py. Prints 'integration: N passed, N failed'."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
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
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
