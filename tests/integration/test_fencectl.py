"""fencectl end to end, against a real store: moto_server (s3://) and a local
directory (file://). Each scenario gets a fresh lock name. Called by run.py,
which owns the moto_server process."""
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

FENCECTL = os.path.join(harness.BIN, "fencectl")


class Store:
    def __init__(self, url, env, moto=None, bucket=None, root=""):
        self.url = url
        self.env = env
        self.moto = moto
        self.bucket = bucket
        self.root = root
        self.count = 0

    def name(self, what):
        self.count += 1
        return "cli-%s-%d-%d" % (what, os.getpid(), self.count)

    def ctl(self, *args, timeout=60, env=None):
        return harness.run([FENCECTL, "--store", self.url] + list(args),
                           env=env or self.env, timeout=timeout)

    def put_raw(self, key, body):
        """Writes an object as another client would (S3 only)."""
        self.moto.client().put_object(Bucket=self.bucket, Key=key, Body=body,
                                      ContentType="application/json")


def expect(proc, code, what):
    if proc.returncode != code:
        raise AssertionError("%s: exit %d, expected %d\nstdout: %s\nstderr: %s" % (
            what, proc.returncode, code, proc.stdout, proc.stderr))
    return proc


def acquire_held_release_reacquire(s):
    n = s.name("basic")
    p = expect(s.ctl("acquire", n, "--holder", "alice"), 0, "first acquire")
    assert p.stdout.strip() == "1", p.stdout
    p = expect(s.ctl("acquire", n, "--holder", "bob"), 3, "acquire of a held lock")
    assert "alice" in p.stderr, p.stderr
    assert p.stdout.strip() == "", "nothing on stdout when not acquired: %r" % p.stdout
    expect(s.ctl("release", n, "1"), 0, "release")
    p = expect(s.ctl("acquire", n, "--holder", "bob"), 0, "re-acquire")
    assert p.stdout.strip() == "2", p.stdout
    p = expect(s.ctl("status", n, "--json"), 0, "status --json")
    st = json.loads(p.stdout)
    assert st["epoch"] == 2 and st["state"] == "held" and st["holder"] == "bob", st
    p = expect(s.ctl("list", "--json"), 0, "list --json")
    names = [x["lock"] if isinstance(x, dict) else x for x in json.loads(p.stdout)]
    assert n in names, (n, names)


def seed_format_respected(s):
    """Lock files written by the original TypeScript client (validityMs) and
    by the Java design (validity_ms) are respected."""
    n = s.name("seed")
    prefix = "%slocks/%s/lock-" % (s.root, n)
    s.put_raw(prefix + "0000000001.json",
              json.dumps({"leaderId": "ts-client", "validityMs": 60000, "expired": False}))
    p = expect(s.ctl("acquire", n, "--holder", "me"), 3, "acquire over a live TypeScript lock")
    assert "ts-client" in p.stderr, p.stderr
    s.put_raw(prefix + "0000000002.json",
              json.dumps({"leaderId": "java-node", "validity_ms": 60000, "expired": False}))
    p = expect(s.ctl("acquire", n, "--holder", "me"), 3, "acquire over a live Java lock")
    assert "java-node" in p.stderr, p.stderr
    s.put_raw(prefix + "0000000003.json",
              json.dumps({"leaderId": "ts-client", "validityMs": 60000, "expired": True}))
    p = expect(s.ctl("acquire", n, "--holder", "me"), 0, "acquire after a released TypeScript lock")
    assert p.stdout.strip() == "4", p.stdout
    s.put_raw(prefix + "0000000005.json", "this is not json")
    p = expect(s.ctl("acquire", n, "--holder", "me"), 3, "an unreadable payload counts as held")


def lease_lapses(s):
    n = s.name("lapse")
    p = expect(s.ctl("acquire", n, "--ttl", "1s", "--holder", "brief"), 0, "acquire 1s")
    assert p.stdout.strip() == "1"
    expect(s.ctl("acquire", n, "--holder", "next"), 3, "still held right away")
    deadline = time.monotonic() + 8
    while True:
        p = s.ctl("acquire", n, "--holder", "next")
        if p.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    expect(p, 0, "acquire after the 1 s lease lapsed")
    assert p.stdout.strip() == "2", p.stdout
    p = expect(s.ctl("renew", n, "1"), 3, "renew after losing the lock")
    assert "lost" in p.stderr.lower(), p.stderr


def wait_acquire(s):
    """--wait honours the time left on the current lease."""
    n = s.name("wait")
    expect(s.ctl("acquire", n, "--ttl", "1s", "--holder", "brief"), 0, "acquire 1s")
    t0 = time.monotonic()
    p = expect(s.ctl("acquire", n, "--wait", "10s", "--holder", "patient"), 0, "acquire --wait")
    assert p.stdout.strip() == "2", p.stdout
    assert time.monotonic() - t0 < 9, "waited too long"
    p = expect(s.ctl("acquire", n, "--wait", "1s", "--holder", "impatient"), 3,
               "acquire --wait that runs out")
    assert "waiting" not in p.stderr, p.stderr  # not a terminal: no progress line
    # on a terminal, --wait says what it waits for
    import pty
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([FENCECTL, "--store", s.url, "acquire", n, "--wait", "1s",
                                 "--holder", "tty"], env=s.env, stdout=subprocess.PIPE,
                                stderr=slave, text=True)
        proc.communicate(timeout=30)
        os.close(slave)
        slave = -1
        out = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
    assert proc.returncode == 3, proc.returncode
    assert b"waiting" in out and b"patient" in out, out


def run_exports_token_and_releases(s):
    n = s.name("run")
    p = expect(s.ctl("run", n, "--ttl", "5s", "--", "sh", "-c",
                     'echo "$FENCE_LOCK $FENCING_TOKEN"; exit 7'), 7, "run passes the child's status")
    assert p.stdout.strip() == "%s 1" % n, p.stdout
    st = json.loads(expect(s.ctl("status", n, "--json"), 0, "status").stdout)
    assert st["state"] == "released", st
    p = expect(s.ctl("acquire", n), 0, "acquire after run")
    assert p.stdout.strip() == "2"


def run_kills_child_on_loss(s, child='trap "echo got-term; exit 0" TERM; '):
    """A child that outlives its lock gets SIGTERM when renewal fails, and
    run exits 3 (lease lost) whatever the child's own status: 0 from a
    trap, or 143 from dying of that SIGTERM (child='')."""
    n = s.name("runloss")
    cmd = [FENCECTL, "--store", s.url, "run", n, "--ttl", "3s", "--", "sh", "-c",
           child + 'echo started; while :; do sleep 0.1; done']
    proc = subprocess.Popen(cmd, env=s.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "started", line
        expect(s.ctl("break", n), 0, "break the lock under a running child")
        out, err = proc.communicate(timeout=20)
    finally:
        harness.stop(proc, signal.SIGKILL)
    if child:
        assert "got-term" in out, (out, err)
    assert proc.returncode == 3, "a run that lost its lock exits 3, not %d: %s" % (
        proc.returncode, err)
    assert "lease lost" in err, err


def run_loss_child_dies_of_sigterm(s):
    run_kills_child_on_loss(s, child="")


def run_stops_child_when_store_hangs(s):
    """Issue 7, item 5: with the store frozen (SIGSTOP) a renewal blocks;
    the child must still get SIGTERM before its lease can end (3 s after the
    acquire, which came before "started"), and run must exit non-zero."""
    n = s.name("runhang")
    cmd = [FENCECTL, "--store", s.url, "run", n, "--ttl", "3s", "--", "sh", "-c",
           'trap "echo got-term; exit 0" TERM; echo started; while :; do sleep 0.05; done']
    proc = subprocess.Popen(cmd, env=s.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    frozen = False
    try:
        line = proc.stdout.readline()
        started = time.monotonic()
        assert line.strip() == "started", line
        os.kill(s.moto.proc.pid, signal.SIGSTOP)  # our own moto, by PID
        frozen = True
        line = proc.stdout.readline()
        term_after = time.monotonic() - started
        assert line.strip() == "got-term", line
        out, err = proc.communicate(timeout=20)
    finally:
        if frozen:
            os.kill(s.moto.proc.pid, signal.SIGCONT)
        harness.stop(proc, signal.SIGKILL)
    assert term_after < 3.0, "SIGTERM %.2f s after start: past the lease" % term_after
    assert proc.returncode == 3, "a run that lost its lease exits 3, not %d: %s" % (
        proc.returncode, err)
    assert "lease lost" in err, err


def break_and_gc(s):
    n = s.name("gc")
    for want in ("1", "2", "3"):
        p = expect(s.ctl("acquire", n), 0, "acquire")
        assert p.stdout.strip() == want
        expect(s.ctl("release", n, want), 0, "release")
    p = expect(s.ctl("acquire", n, "--holder", "stuck"), 0, "acquire")
    assert p.stdout.strip() == "4"
    expect(s.ctl("break", n), 0, "break")
    st = json.loads(expect(s.ctl("status", n, "--json"), 0, "status").stdout)
    assert st["epoch"] == 5 and st["state"] == "released", st
    expect(s.ctl("gc", n, "--keep", "1"), 0, "gc --keep 1")
    p = expect(s.ctl("acquire", n), 0, "acquire after gc")
    assert p.stdout.strip() == "6", "gc must keep the latest epoch: %s" % p.stdout


def check_passes(s):
    expect(s.ctl("check"), 0, "check on a store with conditional writes")


def bad_input(s):
    p = expect(s.ctl("acquire", "../etc"), 1, "bad lock name")
    assert "name" in p.stderr.lower(), p.stderr
    p = expect(s.ctl("acquire", "x" * 129), 1, "long lock name")
    p = expect(s.ctl("acquire", "ok", "--ttl", "soon"), 1, "bad duration")
    assert "ttl" in p.stderr.lower(), p.stderr
    p = expect(s.ctl("frobnicate"), 1, "unknown command")


def missing_credentials(moto, bucket):
    home = harness.TempDir()
    try:
        env = {"PATH": os.environ["PATH"], "HOME": home.path, "AWS_ENDPOINT_URL": moto.url}
        p = harness.run([FENCECTL, "--store", "s3://" + bucket, "acquire", "x"], env=env)
        expect(p, 1, "no credentials")
        assert "AWS_ACCESS_KEY_ID" in p.stderr, p.stderr
        env["AWS_ACCESS_KEY_ID"] = "test"
        p = harness.run([FENCECTL, "--store", "s3://" + bucket, "acquire", "x"], env=env)
        expect(p, 1, "half the credentials")
        assert "AWS_SECRET_ACCESS_KEY" in p.stderr, p.stderr
    finally:
        home.close()


class LiarHandler(http.server.BaseHTTPRequestHandler):
    """An S3 look-alike that ignores If-None-Match: every PUT succeeds."""
    objects = {}

    def log_message(self, *args):
        pass

    def _reply(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_PUT(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.objects[self.path] = self.rfile.read(n)
        self._reply(200, headers=[("ETag", '"d41d8cd98f00b204e9800998ecf8427e"')])

    def do_DELETE(self):
        self.objects.pop(self.path, None)
        self._reply(204)

    def do_GET(self):
        self._reply(404, b"<Error><Code>NoSuchKey</Code><Message>no</Message></Error>")

    do_HEAD = do_GET


def check_refuses_liar():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), LiarHandler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        env = dict(os.environ, **harness.CREDS)
        env["AWS_ENDPOINT_URL"] = "http://127.0.0.1:%d" % srv.server_address[1]
        p = harness.run([FENCECTL, "--store", "s3://liar-bucket", "check"], env=env)
        expect(p, 1, "check against a store that ignores If-None-Match")
        assert "if-none-match" in p.stderr.lower(), p.stderr
    finally:
        srv.shutdown()
        srv.server_close()


SCENARIOS = [acquire_held_release_reacquire, lease_lapses, wait_acquire,
             run_exports_token_and_releases, run_kills_child_on_loss, run_loss_child_dies_of_sigterm,
             break_and_gc,
             check_passes, bad_input]


def run_all(runner, store, label):
    for fn in SCENARIOS:
        runner.check("%s %s" % (label, fn.__name__), fn, store)
    if store.moto is not None:
        runner.check("%s seed_format_respected" % label, seed_format_respected, store)
        runner.check("%s run_stops_child_when_store_hangs" % label,
                     run_stops_child_when_store_hangs, store)
