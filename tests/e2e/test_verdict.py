#!/usr/bin/env python3
"""make test's bookkeeping (tests/suite.py), end to end on made-up suites:
each is a small shell command run through `suite.py run`, and the verdict
over their records is checked line by line and by exit status.

- counts: a Runner line whose name has spaces, cmocka summaries over two
  groups, a Runner's skipped count, a command that prints no count;
- failures that must not vanish: a crash (signal) with no count, an exit
  status the count does not explain (a sanitizer after the summary), a
  suite stopped at FENCE_SUITE_TIMEOUT along with the process it started;
- the verdict's last line is the total, nothing after it; a make that
  failed with no failing record (a build error) counts one failed."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

SUITE = os.path.join(harness.ROOT, "tests", "suite.py")


def run_suite(results, name, script, **env):
    e = dict(os.environ, FENCE_RESULTS=results, **env)
    e.pop("V", None)
    return subprocess.run([sys.executable, SUITE, "run", name, "sh", "-c", script], env=e,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=60)


def verdict(results, make_status=0):
    return subprocess.run([sys.executable, SUITE, "verdict", results, str(make_status)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=60)


def last_line(p):
    return p.stdout.rstrip("\n").splitlines()[-1]


def t_counts(tmp):
    d = os.path.join(tmp, "counts")
    p = run_suite(d, "e2e x", 'echo "ok   e2e x: a: 1 passed, 0 failed"; '
                  'echo "e2e x: 4 passed, 0 failed"')
    assert last_line(p).startswith("e2e x: 4 passed, 0 failed ("), p.stdout
    p = run_suite(d, "unit y", 'echo "[  PASSED  ] 3 test(s)." >&2; '
                  'echo "[  PASSED  ] 2 test(s)."; echo "[  SKIPPED ] 1 test(s), listed below:"')
    assert last_line(p).startswith("unit y: 5 passed, 0 failed, 1 skipped ("), p.stdout
    p = run_suite(d, "e2e z", 'echo "e2e z: 2 passed, 0 failed, 3 skipped"')
    p = run_suite(d, "sim", "echo sim: 100 schedules")
    assert last_line(p).startswith("sim: 1 passed, 0 failed ("), p.stdout
    assert p.stdout.count("\n") == 1, "a passing suite prints one line:\n" + p.stdout
    v = verdict(d)
    assert v.returncode == 0, v.stdout
    assert v.stdout == "12 passed, 0 failed, 4 skipped\n", v.stdout


def t_failures_count(tmp):
    d = os.path.join(tmp, "fail")
    run_suite(d, "e2e ok", 'echo "e2e ok: 2 passed, 0 failed"')
    p = run_suite(d, "unit crash", 'echo "[ RUN      ] t1"; kill -SEGV $$')
    assert p.returncode == 1 and "[ RUN      ] t1" in p.stdout, p.stdout  # its output shown
    assert last_line(p).startswith("unit crash: 0 passed, 1 failed ("), p.stdout
    assert "killed by signal 11" in last_line(p), p.stdout
    p = run_suite(d, "unit asan", 'echo "[  PASSED  ] 4 test(s)."; exit 1')
    assert last_line(p).startswith("unit asan: 4 passed, 1 failed ("), p.stdout
    p = run_suite(d, "e2e two", 'echo "e2e two: 3 passed, 2 failed"; exit 1')
    assert last_line(p).startswith("e2e two: 3 passed, 2 failed ("), p.stdout
    v = verdict(d, 2)
    assert v.returncode == 1, v.stdout
    lines = v.stdout.splitlines()
    assert lines[-1] == "9 passed, 4 failed", v.stdout
    assert sum(line.startswith("FAILED: ") for line in lines) == 3, v.stdout


def t_timeout_stops_the_group(tmp):
    d = os.path.join(tmp, "hang")
    pidfile = os.path.join(tmp, "child.pid")
    t0 = time.monotonic()
    p = run_suite(d, "e2e hang", "sleep 60 & echo $! > %s; wait" % pidfile,
                  FENCE_SUITE_TIMEOUT="1")
    assert time.monotonic() - t0 < 30, "not stopped at the timeout"
    assert "stopped after 1 s" in p.stdout and last_line(p).startswith(
        "e2e hang: 0 passed, 1 failed ("), p.stdout
    with open(pidfile) as f:
        child = int(f.read())
    harness.wait_for("the suite's background process stopped too",
                     lambda: not os.path.exists("/proc/%d" % child) or
                     open("/proc/%d/stat" % child).read().split()[2] == "Z", timeout=10)


def t_make_failed_without_a_record(tmp):
    d = os.path.join(tmp, "build")
    run_suite(d, "layering", "true")
    v = verdict(d, 2)
    assert v.returncode == 1, v.stdout
    assert last_line(v) == "1 passed, 1 failed", v.stdout
    v = verdict(os.path.join(tmp, "nothing"), 2)
    assert last_line(v) == "0 passed, 1 failed", v.stdout


def main():
    r = harness.Runner("e2e verdict")
    tmp = harness.TempDir()
    try:
        r.check("counts: Runner lines, cmocka groups, skips, a command without a count",
                t_counts, tmp.path)
        r.check("a crash, an unexplained exit status, failed checks: all counted",
                t_failures_count, tmp.path)
        r.check("FENCE_SUITE_TIMEOUT stops the suite and what it started",
                t_timeout_stops_the_group, tmp.path)
        r.check("make failed and no record failed: one failure, not a pass",
                t_make_failed_without_a_record, tmp.path)
    finally:
        tmp.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
