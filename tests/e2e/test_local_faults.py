#!/usr/bin/env python3
"""The embedded store when its directory misbehaves (issue 23, point 5, the
descriptor budget and crash leftovers): errors tell the client what went
wrong, never where the server keeps its files; a symlinked bucket directory
is refused the same way by every operation; running out of descriptors is
503 SlowDown, never 500, and service resumes when the load ends; what a
kill -9 left in the store is gone once a restarted daemon serves.

fencegate runs over a fresh data directory on a free 127.0.0.1 port and is
stopped by its PID. Prints 'N passed, N failed'."""
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from test_workers import request as req  # noqa: E402


def token(port, bucket):
    import json
    st, d = req(port, "POST", "/_fence/locks/%s/acquire" % bucket,
                json.dumps({"ttlMs": 60000, "holder": "t"}).encode(),
                {"Content-Type": "application/json"})
    assert st == 200, (st, d)
    return {"X-Fencing-Token": str(json.loads(d)["epoch"])}


def test_no_server_paths():
    g = harness.Fencegate()
    try:
        # a bucket whose store cannot open: its reserved directory is a file
        os.mkdir(os.path.join(g.data, "brokenb"))
        with open(os.path.join(g.data, "brokenb", ".fencegate"), "w") as f:
            f.write("not a directory")
        seen = []
        for method, path in (("GET", "/brokenb/k"), ("GET", "/brokenb?list-type=2"),
                             ("HEAD", "/brokenb/k"), ("DELETE", "/brokenb")):
            st, body = req(g.port, method, path)
            seen.append((method, path, st))
            assert st >= 400, (method, path, st)
            assert g.data.encode() not in body and g.dir.path.encode() not in body, \
                "%s %s leaks a server path: %r" % (method, path, body)
            assert b"/tmp/" not in body, body
        assert any(st >= 500 for _m, _p, st in seen), "a store failure was provoked: %s" % seen
        assert g.data in g.stderr(), "the log keeps the detail"
        assert g.get("/_fence/health")[0] == 200
    finally:
        g.close()


def test_symlinked_bucket():
    g = harness.Fencegate()
    try:
        assert req(g.port, "PUT", "/realb")[0] == 200
        t = token(g.port, "realb")
        assert req(g.port, "PUT", "/realb/obj", b"real", t)[0] == 200
        before = sorted(os.listdir(os.path.join(g.data, "realb")))
        os.symlink(os.path.join(g.data, "realb"), os.path.join(g.data, "linkb"))
        answers = {}
        for method, path in (("HEAD", "/linkb"), ("GET", "/linkb?list-type=2"),
                             ("GET", "/linkb/obj"), ("HEAD", "/linkb/obj"),
                             ("DELETE", "/linkb/obj"), ("DELETE", "/linkb")):
            answers[(method, path)] = req(g.port, method, path)[0]
        assert set(answers.values()) == {404}, answers
        st, _ = req(g.port, "PUT", "/linkb/new", b"x", {"X-Fencing-Token": "1"})
        assert st != 500 and not 200 <= st < 300, st
        st, body = req(g.port, "GET", "/")
        assert st == 200 and b"<Name>realb</Name>" in body and b"linkb" not in body, body
        st, _ = req(g.port, "PUT", "/linkb")
        assert st == 409, st
        # nothing reached the real bucket through the link
        assert sorted(os.listdir(os.path.join(g.data, "realb"))) == before, "unchanged"
        st, body = req(g.port, "GET", "/realb/obj")
        assert st == 200 and body == b"real"
        assert not os.path.exists(os.path.join(g.data, "realb", "new"))
        assert os.path.islink(os.path.join(g.data, "linkb")), "the link itself is untouched"
    finally:
        g.close()


def test_descriptor_budget():
    """ulimit -n 64 and many buckets: the budget runs out, requests get 503
    SlowDown (never 500), the daemon stays healthy, service resumes."""
    nofile = 64

    def small():
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    g = harness.Fencegate("--workers", "1", preexec_fn=small)
    try:
        buckets = ["fdb%02d" % i for i in range(40)]
        for b in buckets:
            assert req(g.port, "PUT", "/" + b)[0] == 200
        tokens = {b: token(g.port, b) for b in buckets[:4]}
        statuses = []
        deadline = time.monotonic() + 30
        for rnd in range(2):
            for i, b in enumerate(buckets):
                if time.monotonic() > deadline:
                    break
                st, body = req(g.port, "GET", "/%s/k%d" % (b, i))
                statuses.append(st)
                assert st != 500, "500 under descriptor pressure: %r" % body
        assert set(statuses) <= {404, 503} and 404 in statuses, sorted(set(statuses))
        # the load is gone: every bucket serves again
        harness.wait_for("health", lambda: g.get("/_fence/health")[0] == 200, 15)
        for b in buckets[:4]:
            st, body = req(g.port, "PUT", "/%s/after" % b, b"x", tokens[b])
            assert st == 200, (b, st, body, sorted(set(statuses)))
            st, body = req(g.port, "GET", "/%s/after" % b)
            assert st == 200 and body == b"x", (b, st)
        assert g.alive()
    finally:
        g.close()


def tmp_entries(data):
    out = []
    for b in os.listdir(data):
        t = os.path.join(data, b, ".fencegate", "tmp")
        if os.path.isdir(t):
            out += [os.path.join(b, n) for n in os.listdir(t)]
    return out


def test_crash_leftovers_cleaned_at_start():
    """kill -9 during uploads, then a restart: no temp file is left once
    the daemon serves, whatever its age; a live process's file stays."""
    import signal
    import subprocess
    import threading
    data = harness.TempDir()
    try:
        g = harness.Fencegate("--data", data.path, data=False)
        for b in ("crasha", "crashb"):
            assert req(g.port, "PUT", "/" + b)[0] == 200
        t = token(g.port, "crasha")

        def upload(i):
            try:
                req(g.port, "PUT", "/crasha/big%d" % i, os.urandom(1 << 20) * 8, t)
            except OSError:
                pass
        threads = [threading.Thread(target=upload, args=(i,)) for i in range(4)]
        for th in threads:
            th.start()
        time.sleep(0.3)
        os.kill(g.proc.pid, signal.SIGKILL)
        g.proc.wait()
        for th in threads:
            th.join(10)
        g.close()
        # what a crash leaves, made certain: fresh temp files of a gone
        # process, beside one of a live process (this test's)
        dead = subprocess.Popen(["true"])
        dead.wait()
        tmpdir = os.path.join(data.path, "crashb", ".fencegate", "tmp")
        os.makedirs(tmpdir, exist_ok=True)
        for name in ("t%d-0-1" % dead.pid, "t%d-0-2" % dead.pid):
            with open(os.path.join(tmpdir, name), "wb") as f:
                f.write(b"half an object")
        live = "t%d-0-1" % os.getpid()
        with open(os.path.join(tmpdir, live), "wb") as f:
            f.write(b"a live writer's")
        g = harness.Fencegate("--data", data.path, data=False)
        try:
            left = tmp_entries(data.path)
            assert left == [os.path.join("crashb", live)], left
            assert req(g.port, "GET", "/crasha?list-type=2")[0] == 200
        finally:
            g.close()
    finally:
        data.close()


def main():
    r = harness.Runner("e2e local faults")
    r.check("no server path in any client-visible error", test_no_server_paths)
    r.check("a symlinked bucket directory is refused by every operation", test_symlinked_bucket)
    r.check("out of descriptors: 503 SlowDown, never 500, then service resumes",
            test_descriptor_budget)
    r.check("kill -9 during uploads: no temp file left after a restart",
            test_crash_leftovers_cleaned_at_start)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
