#!/usr/bin/env python3
"""End-to-end: fencegate under a small descriptor limit (ulimit -n 64, set
with resource.setrlimit in the child before exec).

- The default connection limit is fitted to RLIMIT_NOFILE, said at info
  level (default settings start without a warning): with 64 descriptors, 2 per connection and 32 spare, at most 16 connections are
  open at once; the 17th waits in the listen backlog and is served once
  another closes.
- When accept() fails for want of descriptors (EMFILE: here 46 inherited
  descriptors eat most of the budget), the listener backs off instead of
  spinning: over three seconds of pressure the error log grows by a
  bounded number of lines and the daemon uses little CPU, and once the
  connections close it serves again. (Before: 100% CPU and millions of
  "accept failed" lines.)"""
import os
import resource
import select
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

NOFILE = 64
CAP = (NOFILE - 32) // 2
HEALTH = b"GET /_fence/health HTTP/1.1\r\nHost: fdlimit\r\n\r\n"


def small_nofile():
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))


def open_clients(port, n):
    """n connections, each with a health request sent (the kernel accepts
    them into the backlog whether or not fencegate does)."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(HEALTH)
        socks.append(s)
    return socks


def answered(socks, within):
    """The sockets that received a response within `within` seconds."""
    got, deadline = set(), time.monotonic() + within
    while time.monotonic() < deadline and len(got) < len(socks):
        waiting = [s for s in socks if s not in got]
        ready, _, _ = select.select(waiting, [], [], max(0.0, deadline - time.monotonic()))
        for s in ready:
            if s.recv(4096).startswith(b"HTTP/1.1 200"):
                got.add(s)
    return got


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def t_cap(g):
    err = g.stderr()
    assert "info at most %d connections: the default limits.max_connections (10000) " \
        "fitted to RLIMIT_NOFILE 64" % CAP in err, err
    assert " warn " not in err, err
    socks = open_clients(g.port, CAP + 8)
    try:
        first = answered(socks, 2.0)
        assert len(first) == CAP, "%d answered, want %d" % (len(first), CAP)
        # the ones served stay open (keep-alive); closing 8 lets the rest in
        done = sorted(first, key=socks.index)[:8]
        for s in done:
            s.close()
        rest = [s for s in socks if s not in first]
        assert len(answered(rest, 5.0)) == len(rest), "the waiting clients were not served"
    finally:
        for s in socks:
            s.close()
    assert g.get("/_fence/health")[0] == 200 and g.alive()


def t_emfile_backoff():
    spare = [os.open(os.devnull, os.O_RDONLY) for _ in range(46)]
    try:
        # one listener's backoff and its log lines: one event loop (with
        # several, each loop's listener backs off and logs on its own)
        g = harness.Fencegate("--access-log", "off", "--workers", "1", preexec_fn=small_nofile,
                              pass_fds=spare)
    finally:
        for fd in spare:
            os.close(fd)
    socks = []
    try:
        lines_before = len(g.stderr().splitlines())
        cpu_before = cpu_seconds(g.proc.pid)
        socks = open_clients(g.port, 30)
        served = answered(socks, 3.0)
        assert len(served) < 30, "every client was served: no descriptor pressure"
        cpu = cpu_seconds(g.proc.pid) - cpu_before
        err = g.stderr()
        added = err.splitlines()[lines_before:]
        assert "Too many open files" in err, "accept never failed:\n" + err
        assert len(added) <= 5, "%d error-log lines in 3 s:\n%s" % (
            len(added), "\n".join(added[:20]))
        assert cpu < 1.0, "%.2f s of CPU in 3 s: the listener spins" % cpu
        assert g.alive()
        for s in socks:
            s.close()
        socks = []
        harness.wait_for("health answered once the clients left",
                         lambda: g.get("/_fence/health", timeout=2)[0] == 200)
    finally:
        for s in socks:
            s.close()
        g.close()


def main():
    r = harness.Runner("e2e fdlimit")
    # the exact cap on one listener: one event loop (with several, the cap
    # is split between them and the kernel spreads connections unevenly)
    g = harness.Fencegate("--workers", "1", preexec_fn=small_nofile)
    try:
        r.check("ulimit -n 64: max connections fitted to %d, no warning" % CAP, t_cap, g)
    finally:
        g.close()
    r.check("accept EMFILE: listener backs off, log bounded, serves again", t_emfile_backoff)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
