#!/usr/bin/env python3
"""End-to-end: the lock API with authentication on, through fencectl
--proxy and curl, over TLS with a private CA.

Two embedded-store proxies with the same clients (WORKER may read, write
and lock demo-bucket and jobs; READER may only read): one over https with
a certificate signed by a CA made here (openssl), one over plain http.

- The README's section "The lock API with authentication and TLS" runs as
  written, in the reader's order (ports and bin/ substituted): fencectl
  signed over TLS with --cacert acquires (epoch 1), then curl --aws-sigv4
  acquires on the http proxy; the lock files on disk say who holds what.
- fencectl signed over TLS: acquire, status, renew, release, a write with
  the token lands, the next acquire is the next epoch; the CA comes from
  --cacert, AWS_CA_BUNDLE or SSL_CERT_FILE, and without any the
  certificate is refused.
- Unsigned, a wrong secret, an unknown key, a client without the lock
  action: exit 1, the documented 403 (S3's XML error, printed as one line),
  and no lock file written."""
import glob
import json
import os
import re
import ssl
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

FENCECTL = os.path.join(harness.BIN, "fencectl")
WORKER = ("AKIDWORKER0001", "worker-secret-0001")  # the README's client
READER = ("AKIDREADER0001", "reader-secret-0001")
BUCKETS = ("demo-bucket", "jobs")
SECTION = "The lock API with authentication and TLS"


def openssl(*args):
    p = harness.run(["openssl"] + list(args))
    assert p.returncode == 0, p.stderr


def make_ca(d):
    """ca.pem and a server certificate for 127.0.0.1 that it signed."""
    p = lambda n: os.path.join(d, n)  # noqa: E731
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", p("ca.key"),
            "-out", p("ca.pem"), "-days", "2", "-subj", "/CN=fencegate test CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", p("srv.key"), "-out",
            p("srv.csr"), "-subj", "/CN=127.0.0.1")
    with open(p("ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", p("srv.csr"), "-CA", p("ca.pem"), "-CAkey", p("ca.key"),
            "-CAcreateserial", "-out", p("srv.pem"), "-days", "2", "-extfile", p("ext"))
    return p("ca.pem"), p("srv.pem"), p("srv.key")


def gate(tls=None):
    cfg = {"mode": "s3", "unrouted_writes": "bucket_lock", "clients": [
        {"access_key": WORKER[0], "secret_env": "T_WORKER_SECRET",
         "allow": [{"prefix": "/" + b, "actions": ["read", "write", "lock"]} for b in BUCKETS]},
        {"access_key": READER[0], "secret_env": "T_READER_SECRET",
         "allow": [{"prefix": "/" + b, "actions": ["read"]} for b in BUCKETS]}]}
    if tls:
        cfg["tls"] = {"cert": tls[0], "key": tls[1]}
    g = harness.Fencegate("--access-log", "off", config=cfg, ready=False,
                          env=dict(os.environ, T_WORKER_SECRET=WORKER[1],
                                   T_READER_SECRET=READER[1]))
    if tls:
        g.url = "https://127.0.0.1:%d" % g.port
    return g


def env_for(creds=None, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AWS_") and k not in ("SSL_CERT_FILE",)}
    env["HOME"] = "/nonexistent"  # no ~/.aws/credentials to fall back on
    if creds:
        env.update(AWS_ACCESS_KEY_ID=creds[0], AWS_SECRET_ACCESS_KEY=creds[1])
    env.update(extra)
    return env


def ctl(g, *args, creds=WORKER, cacert=None, **extra):
    cmd = [FENCECTL, "--proxy", g.url] + (["--cacert", cacert] if cacert else []) + list(args)
    return harness.run(cmd, env=env_for(creds, **extra))


def expect(p, code, what):
    assert p.returncode == code, "%s: exit %d, want %d\n%s%s" % (
        what, p.returncode, code, p.stdout, p.stderr)
    return p


def s3(g, ca):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=g.url, region_name="us-east-1",
                        aws_access_key_id=WORKER[0], aws_secret_access_key=WORKER[1],
                        verify=ca or True, config=Config(retries={"max_attempts": 1}))


def lock_files(g, bucket):
    """The epochs of the lock files the embedded store holds for bucket."""
    files = glob.glob(os.path.join(g.data, bucket, "locks", bucket, "lock-*.json"))
    return sorted(int(re.search(r"lock-(\d+)\.json$", f).group(1)) for f in files)


def lock_file(g, bucket, epoch):
    with open(os.path.join(g.data, bucket, "locks", bucket, "lock-%010d.json" % epoch)) as f:
        return json.load(f)


def wait_tls(g, ca):
    ctx = ssl.create_default_context(cafile=ca)

    def health():
        import urllib.request
        try:
            with urllib.request.urlopen(g.url + "/_fence/health", timeout=2, context=ctx) as r:
                return r.status == 200
        except OSError:
            return False
    harness.wait_for("TLS proxy healthy", health, timeout=15)


def readme_blocks():
    text = open(os.path.join(harness.ROOT, "README.md")).read()
    start = text.index("\n## " + SECTION)
    end = text.find("\n## ", start + 4)
    return re.findall(r"```sh\n(.*?)```", text[start:end], re.S)


def t_readme(tls, plain, ca, tmp):
    """The README's blocks, in order, in one shell, as pasted: only the
    ports and bin/ (a link to the built one) differ."""
    blocks = readme_blocks()
    assert len(blocks) == 2, blocks
    script = "set -e\n" + "\n".join(blocks)
    script = script.replace("127.0.0.1:8443", "127.0.0.1:%d" % tls.port)
    script = script.replace("127.0.0.1:8080", "127.0.0.1:%d" % plain.port)
    os.symlink(harness.BIN, os.path.join(tmp, "bin"))
    os.symlink(ca, os.path.join(tmp, "ca.pem"))
    p = subprocess.run(["bash", "-c", script], cwd=tmp, env=env_for(), timeout=60,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    out = p.stdout.strip().splitlines()
    assert out[0] == "1", out  # fencectl over TLS: "prints 1"
    assert json.loads(out[1])["epoch"] == 1, out  # curl: {"epoch":1,...}
    assert lock_files(tls, "demo-bucket") == [1]
    assert lock_files(plain, "demo-bucket") == [1]
    assert lock_file(plain, "demo-bucket", 1)["leaderId"] == "w1"


def t_signed_cycle(g, ca):
    epoch = int(expect(ctl(g, "acquire", "jobs", "--ttl", "30s", "--holder", "cycle",
                           cacert=ca), 0, "signed acquire").stdout)
    assert lock_files(g, "jobs")[-1] == epoch
    st = json.loads(expect(ctl(g, "status", "jobs", "--json", cacert=ca), 0, "status").stdout)
    assert st.get("epoch") == epoch and st.get("holder") == "cycle", st
    s3(g, ca).put_object(Bucket="jobs", Key="out.txt", Body=b"from the holder",
                         Metadata={"fencing-token": str(epoch)})
    with open(os.path.join(g.data, "jobs", "out.txt"), "rb") as f:
        assert f.read() == b"from the holder"
    expect(ctl(g, "renew", "jobs", str(epoch), cacert=ca), 0, "signed renew")
    expect(ctl(g, "release", "jobs", str(epoch), cacert=ca), 0, "signed release")
    nxt = int(expect(ctl(g, "acquire", "jobs", cacert=ca), 0, "acquire after release").stdout)
    assert nxt == epoch + 1, (epoch, nxt)
    expect(ctl(g, "release", "jobs", str(nxt), cacert=ca), 0, "release")


def t_ca_sources(g, ca):
    expect(ctl(g, "status", "jobs", AWS_CA_BUNDLE=ca), 0, "CA from AWS_CA_BUNDLE")
    expect(ctl(g, "status", "jobs", SSL_CERT_FILE=ca), 0, "CA from SSL_CERT_FILE")
    p = expect(ctl(g, "status", "jobs"), 1, "no CA that knows the proxy's certificate")
    assert "certificate" in p.stderr.lower() or "ssl" in p.stderr.lower(), p.stderr
    p = expect(ctl(g, "status", "jobs", cacert="/nonexistent/ca.pem"), 1, "unreadable CA")
    assert "cannot read the CA bundle" in p.stderr, p.stderr


def refused(g, ca, creds, code, hint=""):
    before = lock_files(g, "jobs")
    p = expect(ctl(g, "acquire", "jobs", creds=creds, cacert=ca), 1, code)
    assert "fencectl: the proxy refused the call: 403 %s: " % code in p.stderr, p.stderr
    assert hint in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert lock_files(g, "jobs") == before, "a refused acquire wrote a lock file"


def t_unsigned(g, ca):
    refused(g, ca, None, "AccessDenied", "the call was not signed")


def t_wrong_secret(g, ca):
    refused(g, ca, (WORKER[0], "not-the-secret"), "SignatureDoesNotMatch")


def t_unknown_key(g, ca):
    refused(g, ca, ("AKIDNOBODY000001", "whatever"), "InvalidAccessKeyId")


def t_no_lock_action(g, ca):
    refused(g, ca, READER, "AccessDenied")


def t_partial_credentials(g, ca):
    p = harness.run([FENCECTL, "--proxy", g.url, "--cacert", ca, "status", "jobs"],
                    env=env_for(None, AWS_ACCESS_KEY_ID=WORKER[0]))
    expect(p, 1, "a key id without its secret")
    assert "AWS_SECRET_ACCESS_KEY" in p.stderr, p.stderr


def main():
    r = harness.Runner("e2e fencectl-auth")
    tmp = harness.TempDir()
    gates = []
    try:
        ca, cert, key = make_ca(tmp.path)
        tls = gate((cert, key))
        gates.append(tls)
        plain = gate()
        gates.append(plain)
        wait_tls(tls, ca)
        plain.wait_ready()
        for g, c in ((tls, ca), (plain, None)):
            for b in BUCKETS:
                s3(g, c).create_bucket(Bucket=b)
        walk = os.path.join(tmp.path, "walk")
        os.mkdir(walk)
        r.check("README: fencectl signed over TLS, then curl --aws-sigv4, as pasted",
                t_readme, tls, plain, ca, walk)
        r.check("signed over TLS (--cacert): acquire, status, write, renew, release",
                t_signed_cycle, tls, ca)
        r.check("the CA from --cacert, AWS_CA_BUNDLE, SSL_CERT_FILE; none: refused",
                t_ca_sources, tls, ca)
        r.check("unsigned: 403 AccessDenied, no lock file", t_unsigned, tls, ca)
        r.check("wrong secret: 403 SignatureDoesNotMatch, no lock file", t_wrong_secret, tls, ca)
        r.check("unknown key: 403 InvalidAccessKeyId, no lock file", t_unknown_key, tls, ca)
        r.check("a client without the lock action: 403 AccessDenied", t_no_lock_action, tls, ca)
        r.check("a key id without its secret: says what to set", t_partial_credentials, tls, ca)
        if r.failed:
            for g in gates:
                print(g.stderr()[-3000:])
    finally:
        for g in gates:
            g.close()
        tmp.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
