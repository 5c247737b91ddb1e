"""fencectl --proxy: the lock commands through a fencegate's lock HTTP API
(the embedded default over a temporary directory), with the same exit codes
as against a store: 0 acquired, 3 held or lost, 1 error."""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

FENCECTL = os.path.join(harness.BIN, "fencectl")


def ctl(url, *args):
    return harness.run([FENCECTL, "--proxy", url] + list(args), env=dict(os.environ))


def expect(p, code, what):
    assert p.returncode == code, "%s: exit %d, want %d\n%s%s" % (
        what, p.returncode, code, p.stdout, p.stderr)
    return p


def put(url, path, body, token):
    req = urllib.request.Request(url + path, data=body, method="PUT",
                                 headers={"X-Fencing-Token": str(token),
                                          "Content-Type": "application/octet-stream"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def main():
    runner = harness.Runner("e2e-fencectl-proxy")
    tmp = harness.TempDir()
    port = harness.free_port()
    url = "http://127.0.0.1:%d" % port
    proc = subprocess.Popen([os.path.join(harness.BIN, "fencegate"), "--listen",
                             "127.0.0.1:%d" % port, "--data", tmp.path, "--access-log", "off"],
                            stderr=subprocess.DEVNULL)
    try:
        harness.wait_port(port, proc)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url + "/_fence/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.05)
        urllib.request.urlopen(urllib.request.Request(url + "/jobs-bucket", method="PUT"))

        def acquire_release_cycle():
            p = expect(ctl(url, "acquire", "jobs-bucket", "--holder", "w1", "--ttl", "30s"),
                       0, "acquire")
            assert p.stdout.strip() == "1", p.stdout
            p = expect(ctl(url, "acquire", "jobs-bucket", "--holder", "w2"), 3, "held")
            assert "w1" in p.stderr, p.stderr
            assert put(url, "/jobs-bucket/out.txt", b"one", 1) == 200
            expect(ctl(url, "renew", "jobs-bucket", "1"), 0, "renew")
            st = json.loads(expect(ctl(url, "status", "jobs-bucket"), 0, "status").stdout)
            assert st["epoch"] == 1 and st["holder"] == "w1", st
            expect(ctl(url, "release", "jobs-bucket", "1"), 0, "release")
            p = expect(ctl(url, "acquire", "jobs-bucket", "--holder", "w2", "--json"),
                       0, "re-acquire")
            assert json.loads(p.stdout)["epoch"] == 2, p.stdout
            # the released epoch is fenced out on the proxy that granted the next one
            assert put(url, "/jobs-bucket/out.txt", b"zombie", 1) == 409
            p = expect(ctl(url, "renew", "jobs-bucket", "1"), 3, "renew of a lost epoch")
            assert "lost" in p.stderr.lower(), p.stderr
            names = [x["lock"] for x in json.loads(ctl(url, "list").stdout)["locks"]]
            assert "jobs-bucket" in names, names

        def wait_for_lapse():
            expect(ctl(url, "acquire", "jobs-bucket", "--holder", "x"), 3, "still held by w2")
            expect(ctl(url, "release", "jobs-bucket", "2"), 0, "release 2")
            expect(ctl(url, "acquire", "jobs-bucket", "--ttl", "1s", "--holder", "brief"),
                   0, "acquire 1s")
            t0 = time.monotonic()
            p = expect(ctl(url, "acquire", "jobs-bucket", "--wait", "10s", "--holder", "w3"),
                       0, "acquire --wait")
            assert p.stdout.strip() == "4", p.stdout
            assert time.monotonic() - t0 < 9
            # without --holder the holder is the caller (host-pid of fencectl),
            # not the proxy process
            expect(ctl(url, "release", "jobs-bucket", "4"), 0, "release 4")
            expect(ctl(url, "acquire", "jobs-bucket"), 0, "acquire, default holder")
            st = json.loads(expect(ctl(url, "status", "jobs-bucket"), 0, "status").stdout)
            assert st["holder"].startswith(socket.gethostname() + "-"), st
            assert st["holder"] != "%s-%d" % (socket.gethostname(), proc.pid), st
            expect(ctl(url, "release", "jobs-bucket", str(st["epoch"])), 0, "release")

        def errors():
            p = expect(ctl(url, "gc", "jobs-bucket", "--keep", "1"), 1, "gc via proxy")
            assert "--store" in p.stderr, p.stderr
            p = expect(ctl("http://127.0.0.1:%d" % harness.free_port(), "status", "x"), 1,
                       "nothing listening")
            p = expect(harness.run([FENCECTL, "--proxy", url, "--store", "file:///tmp/x",
                                    "status", "jobs-bucket"]), 1, "--proxy with --store")

        runner.check("acquire, held, renew, status, release, fenced zombie, list",
                     acquire_release_cycle)
        runner.check("--wait honours a 1 s lease", wait_for_lapse)
        runner.check("errors", errors)
    finally:
        harness.stop(proc)
        tmp.close()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
