#!/usr/bin/env python3
"""End-to-end: fencegate's TLS listener.

A self-signed certificate is made at run time with `openssl req -x509`.
fencegate -c CONFIG listens with TLS in front of moto_server, with a client
for the AWS CLI. Over HTTPS the CLI sends a 3 MB upload as aws-chunked with
a CRC trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER): it must land byte-exact
in moto. A TLS 1.1 handshake is refused while TLS 1.2 with the same client
settings works. A renewed certificate (new key, new serial) is served after
SIGHUP, and connections opened before keep working."""
import hashlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import BIN, CREDS, Moto, Runner, TempDir, free_port, run, stop, wait_port  # noqa: E402

BUCKET = "tlsbkt"
CLIENT = ("AKIDTLSCLIENT001", "tls-client-secret")


def make_cert(d, name):
    cert, key = os.path.join(d, name + ".crt"), os.path.join(d, name + ".key")
    r = run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
             "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
             "-addext", "subjectAltName=IP:127.0.0.1"])
    assert r.returncode == 0, r.stderr
    return cert, key


class Gate:
    def __init__(self):
        self.proc = None
        self.dir = TempDir()
        self.moto = Moto()
        try:
            self.start()
        except BaseException:
            self.close()
            raise

    def start(self):
        self.moto.create_bucket(BUCKET)
        self.cert, self.key = make_cert(self.dir.path, "live")
        self.port = free_port()
        self.url = "https://127.0.0.1:%d" % self.port
        self.config = os.path.join(self.dir.path, "fencegate.json")
        with open(self.config, "w") as f:
            json.dump({
                "listen": ["127.0.0.1:%d" % self.port],
                "tls": {"cert": self.cert, "key": self.key},
                "upstream": {"endpoint": self.moto.url},
                "unrouted_writes": "bucket_lock",
                "clients": [{"access_key": CLIENT[0], "secret_env": "GW_TLS_SECRET",
                             "allow": [{"prefix": "/" + BUCKET,
                                        "actions": ["read", "write", "lock"]}]}],
            }, f)
        env = dict(os.environ, **CREDS)
        env["GW_TLS_SECRET"] = CLIENT[1]
        self.logpath = os.path.join(self.dir.path, "fencegate.log")
        self.log = open(self.logpath, "w")
        self.proc = subprocess.Popen([os.path.join(BIN, "fencegate"), "-c", self.config,
                                      "--access-log", "off", "--log-level", "debug"],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env)
        wait_port(self.port, self.proc)

    def close(self):
        stop(self.proc)
        if getattr(self, "log", None):
            self.log.close()
        self.moto.close()
        self.dir.close()

    def cli_env(self):
        env = dict(os.environ)
        env.update(AWS_ACCESS_KEY_ID=CLIENT[0], AWS_SECRET_ACCESS_KEY=CLIENT[1],
                   AWS_DEFAULT_REGION="us-east-1", AWS_REGION="us-east-1",
                   AWS_CA_BUNDLE=self.cert, AWS_EC2_METADATA_DISABLED="true")
        env.pop("AWS_PROFILE", None)
        return env

    def served_cert(self):
        """The DER certificate the listener presents to a new connection."""
        ctx = ssl.create_default_context(cafile=None)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            with ctx.wrap_socket(s) as t:
                return t.getpeercert(binary_form=True)


def der_of(path):
    with open(path) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


def t_cli_upload(g):
    env = g.cli_env()
    d = tempfile.mkdtemp()
    src = os.path.join(d, "big.bin")
    data = os.urandom(3 * 1024 * 1024 + 17)
    with open(src, "wb") as f:
        f.write(data)
    epoch = acquire(g)  # the lock API over HTTPS, SigV4-signed
    r = run(["aws", "--endpoint-url", g.url, "s3api", "put-object", "--bucket", BUCKET,
             "--key", "tls/big.bin", "--body", src, "--metadata",
             "fencing-token=%d" % epoch], env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    got = g.moto.client().get_object(Bucket=BUCKET, Key="tls/big.bin")["Body"].read()
    assert hashlib.sha256(got).digest() == hashlib.sha256(data).digest(), len(got)
    head = g.moto.client().head_object(Bucket=BUCKET, Key="tls/big.bin")
    assert head["Metadata"].get("fencing-epoch") == str(epoch), head["Metadata"]
    out = os.path.join(d, "out.bin")
    r = run(["aws", "--endpoint-url", g.url, "s3", "cp", "s3://%s/tls/big.bin" % BUCKET, out],
            env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert open(out, "rb").read() == data
    # over https the CLI really sent aws-chunked with a trailer (the debug
    # log names each verified client's payload mode)
    with open(g.logpath) as f:
        assert "(streaming-unsigned-trailer)" in f.read()


def acquire(g):
    import http.client
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    path = "/_fence/locks/%s/acquire" % BUCKET
    req = AWSRequest(method="POST", url=g.url + path, data=b'{"ttlMs":600000}')
    S3SigV4Auth(Credentials(*CLIENT), "s3", "us-east-1").add_auth(req)
    ctx = ssl.create_default_context(cafile=g.cert)
    c = http.client.HTTPSConnection("127.0.0.1", g.port, context=ctx, timeout=30)
    c.request("POST", path, body=b'{"ttlMs":600000}', headers=dict(req.headers.items()))
    resp = c.getresponse()
    body = resp.read()
    c.close()
    assert resp.status == 200, (resp.status, body)
    return json.loads(body)["epoch"]


def handshake(port, version):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
        ctx.minimum_version = version
        ctx.maximum_version = version
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        with ctx.wrap_socket(s) as t:
            return t.version()


def t_old_tls_refused(g):
    assert handshake(g.port, ssl.TLSVersion.TLSv1_2) == "TLSv1.2"
    try:
        v = handshake(g.port, ssl.TLSVersion.TLSv1_1)
    except (ssl.SSLError, ConnectionError, OSError):
        return
    raise AssertionError("a TLS 1.1 handshake succeeded (%s)" % v)


def t_plain_http_refused(g):
    with socket.create_connection(("127.0.0.1", g.port), timeout=5) as s:
        s.sendall(b"GET /_fence/health HTTP/1.1\r\nHost: x\r\n\r\n")
        s.settimeout(5)
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
    assert b"200 OK" not in data, data


def t_renewal_on_sighup(g):
    assert g.served_cert() == der_of(g.cert)
    # a connection opened before the renewal
    ctx = ssl.create_default_context(cafile=g.cert)
    ctx.check_hostname = False
    old = ctx.wrap_socket(socket.create_connection(("127.0.0.1", g.port), timeout=5))
    new_cert, new_key = make_cert(g.dir.path, "renewed")
    os.replace(new_cert, g.cert)
    os.replace(new_key, g.key)
    assert g.served_cert() != der_of(g.cert)  # not before the reload
    g.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and g.served_cert() != der_of(g.cert):
        time.sleep(0.1)
    assert g.served_cert() == der_of(g.cert)
    old.sendall(b"GET /_fence/health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert b"200 OK" in old.recv(4096)
    old.close()
    # the CLI trusts the renewed certificate (AWS_CA_BUNDLE = the new file)
    r = run(["aws", "--endpoint-url", g.url, "s3", "ls", "s3://%s/" % BUCKET],
            env=g.cli_env(), timeout=60)
    assert r.returncode == 0, r.stderr
    assert g.proc.poll() is None


def t_check_config(g):
    fg = os.path.join(BIN, "fencegate")
    env = dict(os.environ, GW_TLS_SECRET=CLIENT[1])
    r = run([fg, "-t", "-c", g.config], env=env)
    assert r.returncode == 0, r.stderr
    bad = os.path.join(g.dir.path, "bad.json")
    cfg = json.load(open(g.config))
    cfg["tls"]["key"] = os.path.join(g.dir.path, "missing.key")
    json.dump(cfg, open(bad, "w"))
    r = run([fg, "-t", "-c", bad], env=env)
    assert r.returncode == 1 and "tls.key" in r.stderr and "missing.key" in r.stderr, r.stderr
    cfg["tls"]["key"] = g.cert  # a certificate is not a key
    json.dump(cfg, open(bad, "w"))
    r = run([fg, "-t", "-c", bad], env=env)
    assert r.returncode == 1 and "tls.key" in r.stderr, r.stderr


def t_upstream_verification(g):
    """A second fencegate forwards to the TLS one: the upstream certificate
    is verified by default (502 without the CA), and upstream.ca_bundle
    makes it trusted."""
    import http.client
    env = dict(os.environ, AWS_ACCESS_KEY_ID=CLIENT[0], AWS_SECRET_ACCESS_KEY=CLIENT[1],
               AWS_REGION="us-east-1", AWS_DEFAULT_REGION="us-east-1")
    env.pop("SSL_CERT_FILE", None)
    env.pop("CURL_CA_BUNDLE", None)
    for ca, want in ((None, 502), (g.cert, 200)):
        port = free_port()
        up = {"endpoint": g.url}
        if ca:
            up["ca_bundle"] = ca
        path = os.path.join(g.dir.path, "front-%d.json" % port)
        with open(path, "w") as f:
            json.dump({"listen": ["127.0.0.1:%d" % port], "upstream": up,
                       "unrouted_writes": "bucket_lock"}, f)
        log = open(path + ".log", "w")
        proc = subprocess.Popen([os.path.join(BIN, "fencegate"), "-c", path, "--access-log",
                                 "off"], stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            wait_port(port, proc)
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("GET", "/%s/tls/big.bin" % BUCKET)
            resp = c.getresponse()
            body = resp.read()
            c.close()
            assert resp.status == want, (ca, resp.status, body[:300])
            if want == 200:
                assert len(body) == 3 * 1024 * 1024 + 17
        finally:
            stop(proc)
            log.close()


def main():
    r = Runner("e2e tls")
    g = Gate()
    try:
        r.check("aws cli over https: 3 MB aws-chunked upload byte-exact in moto", t_cli_upload, g)
        r.check("tls 1.1 refused, 1.2 accepted", t_old_tls_refused, g)
        r.check("plain http on the tls port gets no answer", t_plain_http_refused, g)
        r.check("upstream TLS verified by default; upstream.ca_bundle trusts it",
                t_upstream_verification, g)
        r.check("renewed certificate served after SIGHUP, old connection kept",
                t_renewal_on_sighup, g)
        r.check("fencegate -t: good config 0, bad tls.key 1 naming the key", t_check_config, g)
    finally:
        g.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
