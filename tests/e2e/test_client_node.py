#!/usr/bin/env python3
"""End-to-end: the Node lock client (lock/js, package fencegate) as a user
installs it — `npm install --install-links lock/js @aws-sdk/client-s3` in
a scratch project (from the npm registry, or npm's cache) — against a real
fencegate.

Its unit tests (node --test) run against the installed copy. Then worker A
(fenced_worker.cjs) holding a 1.5 s lease is SIGSTOPped mid-loop; worker B
takes the lock and writes; A gets SIGCONT and its next write must be refused
— by the client (LeaseLost, lock.signal aborted; lock.attach) or, for a
worker that only puts the token on, by the proxy (409 FencingTokenStale) —
and the storage must hold B's data: read through the proxy and from the
data directory (embedded store, auth off) or from moto (S3 mode, auth on,
lock calls SigV4-signed through the AWS credential chain). Unsigned and
unpermitted lock calls surface as FencegateError with the proxy's code.
Bounded: every wait has a timeout, each worker writes at most 400 times."""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import clientpkg  # noqa: E402
import harness  # noqa: E402
import zombie  # noqa: E402
from zombie import BUCKET, NOLOCK_KEY, WORKER_KEY  # noqa: E402

PKG = clientpkg.JS_PKG
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fenced_worker.cjs")
state = {}


def t_install():
    tmp = harness.TempDir()
    state["tmp"] = tmp
    mod = clientpkg.install_node(tmp.path)
    assert os.path.isfile(os.path.join(mod, "fencegate", "lib", "lock.js"))
    assert not os.path.islink(os.path.join(mod, "fencegate")), "linked, not installed"
    assert not os.path.exists(os.path.join(mod, "fencegate", "test")), "tests were packed"
    for dep in ("@smithy/signature-v4", "@aws-crypto/sha256-js", "@aws-sdk/credential-provider-node"):
        assert os.path.isdir(os.path.join(mod, dep)), dep + " not installed with fencegate"
    state["modules"] = mod


def t_unit():
    env = dict(node_env(os.environ), FENCEGATE_MODULE=os.path.join(state["modules"], "fencegate"))
    p = harness.run(["node", "--test", os.path.join(PKG, "test")], env=env, timeout=120)
    out = p.stdout + p.stderr
    counts = dict(ln[2:].split() for ln in out.splitlines()
                  if ln.startswith("# ") and len(ln.split()) == 3 and ln.split()[2].isdigit())
    assert p.returncode == 0 and counts.get("fail") == "0", out[-3000:]
    assert int(counts.get("pass", 0)) >= 15 and counts.get("skipped") == "0", counts
    print("     unit: %s passed, %s failed, %s skipped" % (counts["pass"], counts["fail"],
                                                        counts["skipped"]))


def node_env(env):
    return dict(env, NODE_PATH=state["modules"],
                AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED="true")


def run_zombie(url, mode, env, readers):
    env = node_env(env)

    def start_a():
        return zombie.Worker(["node", WORKER, url, BUCKET, "data", "A", "1.5", mode], env)

    def takeover():
        p = harness.run(["node", WORKER, url, BUCKET, "data", "B", "20", "takeover"],
                        env=env, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
        return int(p.stdout.split("took epoch ")[1].split()[0])
    lines = zombie.scenario(start_a, mode, takeover, readers)
    if lines[-1].startswith("lost-client"):
        assert "signal aborted true" in lines, lines[-3:]
    return lines[-1]


def other_writes(url, env, stored):
    """fenced_worker.cjs "ops": multipart, copy and deletes through an
    attached client land; detached, a write gets 428. stored(key) reads
    storage (None when absent)."""
    p = harness.run(["node", WORKER, url, BUCKET, "data", "O", "20", "ops"],
                    env=node_env(env), timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ops ok 428", (p.stdout, p.stderr[-2000:])
    big = b"a" * (5 << 20) + b"b" * (1 << 20)
    assert stored("big-copy") == big and stored("big") is None and stored("small") is None


def t_embedded():
    with zombie.embedded_gate() as (g, stored):
        s3 = zombie.s3_client(g.url, ("test", "test"))

        def through_proxy():
            return s3.get_object(Bucket=BUCKET, Key="data")["Body"].read()
        env = dict(os.environ, **harness.CREDS)   # lock calls signed, auth off
        last = run_zombie(g.url, "attach", env, [through_proxy, stored])
        print("     embedded attach: A's last line: %s" % last)
        env["FENCEGATE_UNSIGNED"] = "1"
        last = run_zombie(g.url, "raw", env, [through_proxy, stored])
        print("     embedded raw, unsigned: A's last line: %s" % last)
        other_writes(g.url, dict(os.environ, **harness.CREDS), stored)


def t_moto_auth():
    with zombie.moto_auth_gate() as (g, stored):
        s3 = zombie.s3_client(g.url, WORKER_KEY)

        def through_proxy():
            return s3.get_object(Bucket=BUCKET, Key="data")["Body"].read()
        wenv = zombie.worker_env(WORKER_KEY)
        for mode in ("attach", "raw"):
            last = run_zombie(g.url, mode, wenv, [through_proxy, stored])
            print("     moto+auth %s: A's last line: %s" % (mode, last))
        other_writes(g.url, wenv, stored)
        probes = ((dict(wenv, FENCEGATE_UNSIGNED="1"), "error 403 AccessDenied"),
                  (zombie.worker_env(NOLOCK_KEY), "error 403 AccessDenied"),
                  (zombie.worker_env(("AKIDUNKNOWN001", "x")), "error 403 InvalidAccessKeyId"),
                  (wenv, "epoch "))
        for penv, want in probes:
            p = harness.run(["node", WORKER, g.url, BUCKET, "data", "P", "5", "probe"],
                            env=node_env(penv), timeout=60)
            assert p.returncode == 0 and p.stdout.startswith(want), (want, p.stdout, p.stderr)


def t_tls():
    tls = zombie.TlsGate()
    try:
        env = dict(os.environ, FENCEGATE_UNSIGNED="1")
        env.pop("SSL_CERT_FILE", None)
        for bundle, want in ((tls.cert, "epoch "), (None, "error ")):
            if bundle:
                env["AWS_CA_BUNDLE"] = bundle
            else:
                env.pop("AWS_CA_BUNDLE", None)
            p = harness.run(["node", WORKER, tls.url, BUCKET, "data", "P", "5", "probe"],
                            env=node_env(env), timeout=60)
            assert p.returncode == 0 and p.stdout.startswith(want), (bundle, p.stdout, p.stderr)
    finally:
        tls.close()


def main():
    r = harness.Runner("e2e node client")
    try:
        if not shutil.which("node") or not shutil.which("npm"):
            r.check("node and npm are installed", lambda: (_ for _ in ()).throw(
                AssertionError("node/npm missing: deploy/install-deps.sh test installs them")))
            return r.finish()
        r.check("npm install --install-links lock/js @aws-sdk/client-s3 in a scratch project",
                t_install)
        if "modules" in state:
            r.check("unit tests (node --test) of the installed package", t_unit)
            r.check("embedded store, auth off: a SIGSTOPped worker's next write is refused "
                    "(client LeaseLost + signal / proxy 409); storage holds the new holder's "
                    "data; multipart, copy, deletes through attach land", t_embedded)
            r.check("S3 mode (moto), auth on: the same, lock calls SigV4-signed from the "
                    "AWS chain; unsigned/unpermitted lock calls are 403s", t_moto_auth)
            r.check("TLS with a private CA: trusted through AWS_CA_BUNDLE, refused without",
                    t_tls)
    finally:
        if "tmp" in state:
            state["tmp"].close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
