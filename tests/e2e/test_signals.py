#!/usr/bin/env python3
"""End-to-end: SIGUSR1 reopens the log files (nginx semantics).

logrotate renames the access log and the error log, sends SIGUSR1, and
fencegate carries on writing to new files of the same names: the next
request's access-log line lands in the new access log (not the renamed
one), the reopen is reported in the new error log, and the daemon stays
alive. A reopen that fails (the path is now a directory) is logged and the
daemon keeps writing to the old file. With no log files (access log on
stderr), SIGUSR1 changes nothing and does not kill the daemon (it used to:
exit 138). Both the config keys (log.access_log, log.error_log) and the
flags (--access-log, --error-log, relative paths) are covered. The access
log file is buffered (64 KiB, 100 ms): a line shows within a second, and
every line of a burst is in the file, whole, after a SIGUSR1 (in the old
file) and after SIGTERM."""
import http.client
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def access_lines(path):
    return [json.loads(x) for x in read(path).splitlines() if x.strip()]


def request_logged(g, access, marker):
    """A GET of a bucket named marker (none exists: 404); returns its
    access-log line from access."""
    status, _ = g.get("/" + marker)
    assert status == 404, status
    return harness.wait_for("access-log line for %s in %s" % (marker, access), lambda: [
        e for e in access_lines(access) if marker in json.dumps(e)])


def test_reopen_after_rename(g, access, error):
    request_logged(g, access, "before-rotation")
    os.rename(access, access + ".1")
    os.rename(error, error + ".1")
    g.proc.send_signal(signal.SIGUSR1)
    harness.wait_for("reopen reported in the new error log",
                     lambda: "log files reopened" in read(error))
    request_logged(g, access, "after-rotation")
    assert "after-rotation" not in read(access + ".1"), "old access log got the new line"
    assert "before-rotation" not in read(access), "new access log got an old line"
    assert "log files reopened" not in read(error + ".1")
    assert "listening on" in read(error + ".1"), "the old error log lost its lines"
    assert g.alive(), "SIGUSR1 stopped the daemon"


def test_reopen_failure_keeps_old_file(g, access, error):
    os.rename(access, access + ".2")
    os.mkdir(access)  # open() of the path now fails (EISDIR)
    try:
        g.proc.send_signal(signal.SIGUSR1)
        harness.wait_for("failed reopen logged", lambda: "cannot open access log" in read(error))
        assert g.alive()
        request_logged(g, access + ".2", "after-failed-reopen")
    finally:
        os.rmdir(access)


def test_no_log_files():
    g = harness.Fencegate()  # access log on stderr, no error log file
    try:
        for n in range(1, 4):  # one at a time: pending signals coalesce
            g.proc.send_signal(signal.SIGUSR1)
            harness.wait_for("reopen %d reported" % n,
                             lambda: g.stderr().count('sigusr1: 0 log files reopened') == n)
        assert g.get("/_fence/health")[0] == 200
        assert g.alive()
    finally:
        assert g.close() == 0


def test_flags():
    """Relative paths from the flags are reopened relative to the directory
    the daemon was started in."""
    cwd = harness.TempDir()
    g = harness.Fencegate("--access-log", "access.log", "--error-log", "error.log",
                          cwd=cwd.path)
    try:
        access, error = (os.path.join(cwd.path, n) for n in ("access.log", "error.log"))
        os.rename(access, access + ".1")
        os.rename(error, error + ".1")
        g.proc.send_signal(signal.SIGUSR1)
        harness.wait_for("reopen reported", lambda: 'sigusr1: 2 log files reopened' in read(error))
        request_logged(g, access, "flag-logs")
        assert g.alive()
    finally:
        g.close()
        cwd.close()


def burst(g, marker, n):
    """n 404 GETs of /MARKER-i over one keep-alive connection."""
    c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=10)
    try:
        for i in range(n):
            c.request("GET", "/%s-%d" % (marker, i))
            r = c.getresponse()
            r.read()
            assert r.status == 404, r.status
    finally:
        c.close()


def paths_in(path, marker):
    """The marker's request paths in the access log at path; every line
    must be a whole JSON object."""
    return sorted(e["path"] for e in access_lines(path) if marker in e["path"])


def test_buffered_access_log():
    tmp = harness.TempDir()
    access = os.path.join(tmp.path, "access.log")
    g = harness.Fencegate(config={"log": {"access_log": access}})
    try:
        t0 = time.monotonic()
        status, _ = g.get("/soon-1")
        assert status == 404, status
        harness.wait_for("the line within 1 s", lambda: paths_in(access, "soon-"), timeout=1.0)
        assert time.monotonic() - t0 < 1.5
        want = sorted("/rot-%d" % i for i in range(300))
        burst(g, "rot", 300)
        os.rename(access, access + ".1")
        g.proc.send_signal(signal.SIGUSR1)
        harness.wait_for("reopened", lambda: 'sigusr1: 1 log files reopened' in g.stderr())
        assert paths_in(access + ".1", "rot-") == want, "lines lost at the reopen"
        burst(g, "end", 300)
    finally:
        rc = g.close()
    try:
        assert rc == 0, rc
        assert paths_in(access, "end-") == sorted("/end-%d" % i for i in range(300)), \
            "lines lost at SIGTERM"
        assert not paths_in(access, "rot-"), "old lines in the new file"
    finally:
        tmp.close()


def main():
    r = harness.Runner("e2e signals")
    tmp = harness.TempDir()
    access = os.path.join(tmp.path, "access.log")
    error = os.path.join(tmp.path, "error.log")
    try:
        g = harness.Fencegate(config={"log": {"access_log": access, "error_log": error}})
        try:
            r.check("SIGUSR1 after a rename: new files get the lines, daemon alive",
                    test_reopen_after_rename, g, access, error)
            r.check("SIGUSR1 that cannot open the file: logged, old file kept",
                    test_reopen_failure_keeps_old_file, g, access, error)
        finally:
            rc = g.close()
        r.check("SIGTERM after SIGUSR1 exits 0", lambda: None if rc == 0 else (_ for _ in ()).throw(
            AssertionError("exit status %r" % rc)))
    finally:
        tmp.close()
    r.check("SIGUSR1 with no log files: nothing reopened, daemon alive",
            test_no_log_files)
    r.check("--access-log/--error-log flags: reopened too", test_flags)
    r.check("buffered access log: soon visible, nothing lost at USR1 or TERM",
            test_buffered_access_log)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
