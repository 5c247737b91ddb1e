#!/usr/bin/env python3
"""End-to-end: the Python lock client (lock/python, package fencegate) as a
user installs it — a wheel built offline with Debian's python3-wheel,
installed with pip into a scratch --target — against a real fencegate.

Its unit tests run against the installed copy. Then a worker
(fenced_worker.py) holding a 1.5 s lease is SIGSTOPped mid-loop; another
worker takes the lock and writes; the first gets SIGCONT and its next write
must be refused — by the client (LeaseLost, lock.attach) or, for a worker
that only puts the token on, by the proxy (409 FencingTokenStale) — and the
storage must hold the new holder's data: read through the proxy and from
the data directory (embedded store, authentication off, lock calls signed
and unsigned) or from moto (S3 mode, authentication on, lock calls signed
through the AWS credential chain). Refusals of unsigned or unpermitted lock
calls surface as FencegateError with the proxy's code. Bounded: every wait
has a timeout, each worker writes at most 400 times."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import clientpkg  # noqa: E402
import harness  # noqa: E402
import zombie  # noqa: E402
from zombie import BUCKET, NOLOCK_KEY, WORKER_KEY  # noqa: E402

PKG = clientpkg.PY_PKG
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fenced_worker.py")

state = {}


def t_install():
    tmp = harness.TempDir()
    state["tmp"] = tmp
    site = clientpkg.install_python(tmp.path)
    assert os.path.isfile(os.path.join(site, "fencegate", "lock.py"))
    assert not os.path.exists(os.path.join(site, "tests")), "tests were packaged"
    state["site"] = site
    sys.path.insert(0, site)
    import fencegate
    assert fencegate.__file__.startswith(site), fencegate.__file__


def t_unit():
    env = dict(os.environ, PYTHONPATH=state["site"])
    p = harness.run([sys.executable, "-m", "unittest", "discover", "-s",
                     os.path.join(PKG, "tests")], env=env, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    ran = [ln for ln in p.stderr.splitlines() if ln.startswith("Ran ")]
    assert ran and int(ran[0].split()[1]) >= 20 and "skipped" not in p.stderr, p.stderr
    print("     unit: %s" % ran[0])
    # the standard library alone (Debian's python3 has no botocore): the
    # lock works unsigned, signing and attach are skipped
    if harness.run(["/usr/bin/python3", "-c", "import botocore"]).returncode != 0:
        p = harness.run(["/usr/bin/python3", "-m", "unittest", "discover", "-s",
                         os.path.join(PKG, "tests")], env=env, timeout=120)
        assert p.returncode == 0 and "OK (skipped=5)" in p.stderr, p.stdout + p.stderr
        print("     unit without botocore (/usr/bin/python3): OK (skipped=5)")


def run_zombie(url, mode, env, client, creds, stored):
    """zombie.scenario with fenced_worker.py as A and this process as B."""
    import fencegate

    def start_a():
        return zombie.Worker([sys.executable, WORKER, url, BUCKET, "data", "A", "1.5", mode],
                             dict(env, PYTHONPATH=state["site"]))

    def takeover():
        b = fencegate.Lock(url, BUCKET, ttl=20.0, holder="B", credentials=creds)
        epoch = b.acquire(wait=10.0)
        b.attach(client).put_object(Bucket=BUCKET, Key="data", Body=b"B:final")
        b.release()
        b.detach(client)
        return epoch

    def through_proxy():
        return client.get_object(Bucket=BUCKET, Key="data")["Body"].read()
    lines = zombie.scenario(start_a, mode, takeover, [through_proxy, stored])
    return lines[-1]


def other_writes(url, creds, client, stored):
    """Multipart (s3transfer, 2 parts), CopyObject, DeleteObjects and
    DeleteObject through an attached client land; the same client detached
    gets 428 (no token). stored(key) reads a key from storage (None when
    absent)."""
    import io
    import fencegate
    from boto3.s3.transfer import TransferConfig
    from botocore.exceptions import ClientError
    big = os.urandom(1024) * 6 * 1024
    with fencegate.Lock(url, BUCKET, ttl=20.0, credentials=creds) as lk:
        s3 = lk.attach(client)
        s3.upload_fileobj(io.BytesIO(big), BUCKET, "big", Config=TransferConfig(
            multipart_threshold=5 << 20, multipart_chunksize=5 << 20, max_concurrency=2))
        s3.copy_object(Bucket=BUCKET, Key="big-copy", CopySource={"Bucket": BUCKET, "Key": "big"})
        s3.put_object(Bucket=BUCKET, Key="small", Body=b"s")
        s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": "big"}]})
        s3.delete_object(Bucket=BUCKET, Key="small")
        lk.detach(client)
    assert stored("big-copy") == big and stored("big") is None and stored("small") is None
    try:
        client.put_object(Bucket=BUCKET, Key="small", Body=b"s")
        raise AssertionError("a write without the token was accepted")
    except ClientError as e:
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 428, e.response
    assert stored("small") is None


def t_embedded():
    with zombie.embedded_gate() as (g, stored):
        env = dict(os.environ, **harness.CREDS)   # lock calls signed, auth off
        s3 = zombie.s3_client(g.url, ("test", "test"))
        for mode, creds in (("attach", None), ("raw", False)):
            last = run_zombie(g.url, mode, env, s3, creds, stored)
            print("     embedded %s: A's last line: %s" % (mode, last))
        other_writes(g.url, None, s3, stored)


def t_moto_auth():
    import fencegate
    with zombie.moto_auth_gate() as (g, stored):
        wenv = zombie.worker_env(WORKER_KEY)   # found where any AWS program looks
        s3 = zombie.s3_client(g.url, WORKER_KEY)
        for mode in ("attach", "raw"):
            last = run_zombie(g.url, mode, wenv, s3, WORKER_KEY, stored)
            print("     moto+auth %s: A's last line: %s" % (mode, last))
        other_writes(g.url, WORKER_KEY, s3, stored)

        # refusals are answers with the proxy's code, not crashes
        for creds, code in ((False, "AccessDenied"), (NOLOCK_KEY, "AccessDenied"),
                            (("AKIDUNKNOWN001", "x"), "InvalidAccessKeyId")):
            try:
                fencegate.Lock(g.url, BUCKET, credentials=creds).acquire()
                raise AssertionError("acquired with %r" % (creds,))
            except fencegate.LockHeld:
                raise
            except fencegate.FencegateError as e:
                assert (e.status, e.code) == (403, code), (creds, e.status, e.code, str(e))


def t_tls():
    import fencegate
    tls = zombie.TlsGate()
    saved = os.environ.get("AWS_CA_BUNDLE")
    try:
        lk = fencegate.Lock(tls.url, BUCKET, verify=tls.cert, credentials=False)
        assert lk.acquire() >= 1
        lk.release()
        os.environ["AWS_CA_BUNDLE"] = tls.cert      # verify=None: the AWS variable
        with fencegate.Lock(tls.url, BUCKET, credentials=False) as lk:
            assert lk.epoch >= 2
        try:
            fencegate.Lock(tls.url, BUCKET, verify=True, credentials=False).acquire()
            raise AssertionError("a private CA was trusted with verify=True")
        except fencegate.FencegateError as e:
            assert e.status is None and "CERTIFICATE_VERIFY_FAILED" in str(e), str(e)
    finally:
        if saved is None:
            os.environ.pop("AWS_CA_BUNDLE", None)
        else:
            os.environ["AWS_CA_BUNDLE"] = saved
        tls.close()


def main():
    r = harness.Runner("e2e python client")
    try:
        r.check("wheel built offline (python3-wheel), pip-installed into a scratch target",
                t_install)
        if "site" in state:
            r.check("unit tests of the installed package (with and without botocore)", t_unit)
            r.check("embedded store, auth off: a SIGSTOPped worker's next write is refused "
                    "(client LeaseLost / proxy 409); storage holds the new holder's data; "
                    "multipart, copy, deletes through attach land",
                    t_embedded)
            r.check("S3 mode (moto), auth on: the same, lock calls SigV4-signed from the "
                    "AWS chain; unsigned/unpermitted lock calls are 403s", t_moto_auth)
            r.check("TLS with a private CA: verify=PATH and AWS_CA_BUNDLE trust it, "
                    "the system store does not", t_tls)
    finally:
        if "tmp" in state:
            state["tmp"].close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
