"""The zombie-worker scenario shared by the lock-client e2e tests
(test_client_python.py, test_client_node.py): worker A (a child process
that prints "epoch N", "wrote i"... and a last line) holds a short lease and
is SIGSTOPped mid-loop; B takes the lock and writes NAME:final; A gets
SIGCONT and must be refused, by its client or by the proxy; the storage
must hold B's data. Also what the tests share around it: the S3-mode
config with authentication, a TLS gate, a boto3 client, readers of what
storage holds. It starts no proxy but the TLS one: the tests do."""
import contextlib
import os
import signal
import subprocess
import threading
import urllib.request

import harness

BUCKET = "jobs"
WORKER_KEY = ("AKIDZWORKER001", "zombie-worker-secret-01")
NOLOCK_KEY = ("AKIDZNOLOCK001", "zombie-nolock-secret-01")
SECRETS = {"ZOMBIE_WORKER_SECRET": WORKER_KEY[1], "ZOMBIE_NOLOCK_SECRET": NOLOCK_KEY[1]}


def auth_config(moto_url):
    """S3 mode in front of moto; WORKER_KEY may read, write and lock
    bucket BUCKET, NOLOCK_KEY only read and write. The proxy's env needs
    SECRETS."""
    return {
        "upstream": {"endpoint": moto_url, "region": "us-east-1"},
        "unrouted_writes": "bucket_lock",
        "clients": [
            {"access_key": WORKER_KEY[0], "secret_env": "ZOMBIE_WORKER_SECRET",
             "allow": [{"prefix": "/%s" % BUCKET, "actions": ["read", "write", "lock"]}]},
            {"access_key": NOLOCK_KEY[0], "secret_env": "ZOMBIE_NOLOCK_SECRET",
             "allow": [{"prefix": "/%s" % BUCKET, "actions": ["read", "write"]}]},
        ],
    }


def worker_env(creds):
    """The environment of a worker whose AWS chain finds creds."""
    env = dict(os.environ, AWS_ACCESS_KEY_ID=creds[0], AWS_SECRET_ACCESS_KEY=creds[1],
               AWS_DEFAULT_REGION="us-east-1", AWS_REGION="us-east-1")
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL"):
        env.pop(name, None)
    return env


class Worker:
    """A child process, its stdout lines collected."""

    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wrote(self):
        return sum(1 for ln in self.lines if ln.startswith("wrote "))

    def finish(self, timeout=20.0):
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            harness.stop(self.proc, signal.SIGKILL)
            raise AssertionError("worker still running: %s" % self.lines[-5:])
        self.reader.join(5.0)
        return rc

    def close(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            harness.stop(self.proc, signal.SIGKILL)


def scenario(start_a, mode, takeover, readers):
    """start_a() → a Worker in `mode` ("attach": its client refuses, or the
    proxy if a request was in flight; "raw": the proxy must refuse);
    takeover() → B's epoch, once B wrote B:final; readers: functions that
    read the object back (proxy, storage). Returns A's lines."""
    a = start_a()
    try:
        harness.wait_for("worker A writing", lambda: a.wrote() >= 3, timeout=30)
        epoch_a = int([ln for ln in a.lines if ln.startswith("epoch ")][0].split()[1])
        os.kill(a.proc.pid, signal.SIGSTOP)
        stopped_at = a.wrote()
        epoch_b = takeover()
        assert epoch_b > epoch_a, (epoch_b, epoch_a)
        os.kill(a.proc.pid, signal.SIGCONT)
        rc = a.finish()
        last = a.lines[-1] if a.lines else ""
        assert a.wrote() <= stopped_at + 1, (stopped_at, a.lines[-5:])
        if mode == "attach":
            assert (rc, last.split()[0]) in ((3, "lost-client"), (4, "refused-proxy")), \
                (rc, a.lines[-5:])
        else:
            assert (rc, last) == (4, "refused-proxy FencingTokenStale 409"), (rc, a.lines[-5:])
        for read in readers:
            got = read()
            assert got == b"B:final", (read.__name__, got)
        return a.lines
    finally:
        a.close()


class TlsGate:
    """An embedded-store fencegate listening with TLS (a self-signed
    certificate for 127.0.0.1, test_tls.make_cert) with bucket BUCKET made;
    cert is the CA bundle a client needs."""

    def __init__(self):
        import ssl
        import urllib.request
        from test_tls import make_cert
        self.tmp = harness.TempDir()
        self.gate = None
        try:
            self.cert, key = make_cert(self.tmp.path, "gate")
            self.gate = harness.Fencegate("--access-log", "off", ready=False,
                                          config={"tls": {"cert": self.cert, "key": key},
                                                  "unrouted_writes": "bucket_lock"})
            self.url = "https://127.0.0.1:%d" % self.gate.port
            ctx = ssl.create_default_context(cafile=self.cert)
            req = urllib.request.Request(self.url + "/" + BUCKET, method="PUT")
            harness.wait_for("the TLS bucket made", lambda: urllib.request.urlopen(
                req, context=ctx, timeout=5).status == 200)
        except BaseException:
            self.close()
            raise

    def close(self):
        if self.gate:
            self.gate.close()
        self.tmp.close()


def s3_client(url, creds, **config):
    """A path-style boto3 S3 client for url, one attempt per call."""
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                        aws_access_key_id=creds[0], aws_secret_access_key=creds[1],
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}, **config))


def dir_reader(data):
    """stored(key="data"): BUCKET/key's bytes in the embedded store's data
    directory, None when absent."""
    def stored(key="data"):
        try:
            with open(os.path.join(data, BUCKET, key), "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None
    return stored


def moto_reader(moto):
    """stored(key="data"): BUCKET/key's bytes asked of moto directly, None
    when absent. moto answers a copy of a multipart object with the
    source's composite checksum, which boto3 would reject: no checking."""
    direct = s3_client(moto.url, ("test", "test"), response_checksum_validation="when_required")

    def stored(key="data"):
        try:
            return direct.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        except direct.exceptions.NoSuchKey:
            return None
    return stored


@contextlib.contextmanager
def embedded_gate():
    """(fencegate on the embedded store with bucket BUCKET made, its
    storage reader); authentication off."""
    g = harness.Fencegate("--access-log", "off")
    try:
        urllib.request.urlopen(urllib.request.Request(g.url + "/" + BUCKET, method="PUT"))
        yield g, dir_reader(g.data)
    finally:
        g.close()


@contextlib.contextmanager
def moto_auth_gate():
    """(fencegate in S3 mode in front of moto with auth_config, moto's
    storage reader)."""
    moto = harness.Moto()
    g = None
    try:
        moto.create_bucket(BUCKET)
        env = dict(os.environ, **harness.CREDS)
        env.update(SECRETS)
        g = harness.Fencegate("--access-log", "off", data=False, config=auth_config(moto.url),
                              env=env)
        yield g, moto_reader(moto)
    finally:
        if g:
            g.close()
        moto.close()
