"""Shared helpers for fencegate's integration and end-to-end tests.

Starts real processes on 127.0.0.1 at ports chosen at run time (moto_server,
fencegate) and stops them by PID. Also a tiny test runner that prints the
plain closing line 'N passed, N failed'. Standard library only, plus boto3
where a test asks for it (preinstalled with moto)."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("FENCE_BIN", os.path.join(ROOT, "bin"))
TESTBIN = os.environ.get("FENCE_TESTBIN", os.path.join(ROOT, "build", "test"))
CREDS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
         "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc=None, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("process exited with %s before listening" % proc.returncode)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("nothing listens on 127.0.0.1:%d after %.0fs" % (port, timeout))


def stop(proc, sig=signal.SIGTERM, timeout=10.0):
    """Stops a process we started, by its PID only."""
    if proc is None or proc.poll() is not None:
        return proc.returncode if proc else None
    try:
        os.kill(proc.pid, sig)
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        return proc.wait()


class Moto:
    """A real moto_server on a free loopback port (command: another launcher
    taking moto_server's arguments, e.g. tests/chaos/moto_atomic.py)."""

    def __init__(self, command=("moto_server",)):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log = tempfile.TemporaryFile()
        env = dict(os.environ, **CREDS)
        self.proc = subprocess.Popen(
            list(command) + ["-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        wait_port(self.port, self.proc, timeout=30)

    def client(self):
        import boto3
        from botocore.config import Config
        return boto3.client("s3", endpoint_url=self.url, region_name="us-east-1",
                            aws_access_key_id="test", aws_secret_access_key="test",
                            config=Config(s3={"addressing_style": "path"},
                                          retries={"max_attempts": 2}))

    def create_bucket(self, name):
        self.client().create_bucket(Bucket=name)

    def close(self):
        stop(self.proc)
        self.log.close()


class Fencegate:
    """A fencegate on a free loopback port over a fresh data directory (or
    what args say), its stderr in a file, ready once /_fence/health answers
    200. args come after --listen and --data; with config (a dict) it runs
    -c FILE instead, the file being config plus the listen address and
    data_dir. popen passes extra Popen arguments (preexec_fn, pass_fds)."""

    def __init__(self, *args, data=True, config=None, ready=True, **popen):
        import json
        self.dir = TempDir()
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.stderr_path = os.path.join(self.dir.path, "stderr.log")
        self.data = os.path.join(self.dir.path, "data")
        if data:
            os.mkdir(self.data)
        cmd = [os.path.join(BIN, "fencegate")]
        if config is not None:
            config = dict(config, listen=["127.0.0.1:%d" % self.port])
            if data:
                config["data_dir"] = self.data
            self.config = os.path.join(self.dir.path, "fencegate.json")
            with open(self.config, "w") as f:
                json.dump(config, f)
            cmd += ["-c", self.config]
        else:
            cmd += ["--listen", "127.0.0.1:%d" % self.port]
            if data:
                cmd += ["--data", self.data]
        popen.setdefault("env", dict(os.environ, **CREDS))
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(cmd + list(args), stdout=subprocess.DEVNULL,
                                         stderr=err, **popen)
        try:
            wait_port(self.port, self.proc)
            if ready:
                self.wait_ready()
        except BaseException:
            self.close()
            raise

    def path(self, name):
        return os.path.join(self.dir.path, name)

    def get(self, path, timeout=5.0):
        """(status, body) of a GET; HTTP errors are answers, not exceptions."""
        import urllib.error
        import urllib.request
        try:
            with urllib.request.urlopen(self.url + path, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def wait_ready(self, timeout=15.0):
        deadline = time.monotonic() + timeout
        while self.get("/_fence/health")[0] != 200:
            if time.monotonic() > deadline or not self.alive():
                raise RuntimeError("fencegate not ready after %.0fs:\n%s" %
                                   (timeout, self.stderr()))
            time.sleep(0.05)

    def alive(self):
        return self.proc.poll() is None

    def stderr(self):
        with open(self.stderr_path, errors="replace") as f:
            return f.read()

    def close(self):
        rc = stop(self.proc)
        self.dir.close()
        return rc


def wait_for(what, fn, timeout=10.0):
    """Polls fn() until it returns something true; returns it, or raises
    AssertionError naming what after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("%s: not within %.0fs" % (what, timeout))
        time.sleep(0.05)


class TempDir:
    def __init__(self, prefix="fencegate-test-"):
        self.path = tempfile.mkdtemp(prefix=prefix)

    def close(self):
        shutil.rmtree(self.path, ignore_errors=True)


def run(cmd, env=None, timeout=60, input=None):
    """Runs a command, returns CompletedProcess with text stdout/stderr."""
    return subprocess.run(cmd, env=env, timeout=timeout, input=input,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class Runner:
    """Collects test functions and prints 'name: N passed, N failed' (and
    ', N skipped' when any were), the line tests/suite.py counts."""

    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0
        self.skipped = 0

    def check(self, label, fn, *args):
        t0 = time.monotonic()
        try:
            fn(*args)
        except Exception:  # noqa: BLE001 - a test runner reports everything
            self.failed += 1
            print("FAIL %s: %s (%.1fs)" % (self.name, label, time.monotonic() - t0))
            traceback.print_exc(file=sys.stdout)
        else:
            self.passed += 1
            print("ok   %s: %s (%.1fs)" % (self.name, label, time.monotonic() - t0))
        sys.stdout.flush()

    def skip(self, label, reason):
        """A check that cannot run here (a tool is missing): counted as
        skipped, with the reason, never as passed."""
        self.skipped += 1
        print("skip %s: %s (%s)" % (self.name, label, reason))
        sys.stdout.flush()

    def finish(self):
        line = "%s: %d passed, %d failed" % (self.name, self.passed, self.failed)
        if self.skipped:
            line += ", %d skipped" % self.skipped
        print(line)
        return 1 if self.failed else 0
