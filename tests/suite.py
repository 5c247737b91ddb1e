#!/usr/bin/env python3
"""make test's bookkeeping: runs one suite and records its count, then
prints the one verdict line over every record.

  suite.py run NAME CMD [ARGS...]   runs CMD, keeps its output in
                                    $FENCE_RESULTS/NAME.log and its count in
                                    NAME.json; prints "NAME: N passed, N
                                    failed" (the whole output instead when
                                    it failed, or with V=1 as it comes)
  suite.py verdict DIR MAKE_STATUS  prints the failed suites, then
                                    "N passed, N failed[, N skipped]" as the
                                    last line; exits 1 if anything failed

A suite's count is what it printed: the harness Runner's "name: N passed,
N failed[, N skipped]" lines (e2e files, the integration run), else
cmocka's "[  PASSED  ] N test(s)." summaries (unit binaries), else one test
passed or failed by its exit status (sim runs, fuzz targets, checks). A
suite that exits non-zero without counting a failure (a crash, a sanitizer
report after the summary) counts one failed. A suite still running after
FENCE_SUITE_TIMEOUT seconds (default 1800) is stopped with the servers it
started (its own session) and counts failed. Without FENCE_RESULTS, `run`
just runs CMD. It runs no test itself and parses no output but those three
forms."""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

# "e2e tls: 9 passed, 0 failed" (the name may hold spaces; a check's own
# "ok   e2e tls: label" / "FAIL ..." / "skip ..." line is not a count)
RUNNER = re.compile(r"^(?!ok |FAIL |skip )(\S.*?): (\d+) passed, (\d+) failed"
                    r"(?:, (\d+) skipped)?$")
CMOCKA = re.compile(r"^\[  (PASSED|FAILED|SKIPPED) +\] (\d+) test\(s\)")


def count(lines, status):
    """(passed, failed, skipped) from a suite's output and exit status."""
    runner = [0, 0, 0]
    cmocka = [0, 0, 0]
    seen_runner = seen_cmocka = False
    for line in lines:
        m = RUNNER.match(line)
        if m:
            seen_runner = True
            runner[0] += int(m.group(2))
            runner[1] += int(m.group(3))
            runner[2] += int(m.group(4) or 0)
            continue
        m = CMOCKA.match(line)
        if m:
            seen_cmocka = True
            cmocka[("PASSED", "FAILED", "SKIPPED").index(m.group(1))] += int(m.group(2))
    if seen_runner:
        passed, failed, skipped = runner
    elif seen_cmocka:
        passed, failed, skipped = cmocka
    else:
        passed, failed, skipped = (1, 0, 0) if status == 0 else (0, 0, 0)
    if status != 0 and failed == 0:
        failed = 1  # exited non-zero without saying what failed
    return passed, failed, skipped


def counts_text(passed, failed, skipped):
    text = "%d passed, %d failed" % (passed, failed)
    return text + (", %d skipped" % skipped if skipped else "")


def status_text(status):
    return "killed by signal %d" % -status if status < 0 else "exit status %d" % status


TIMED_OUT = "suite.py: stopped after %.0f s (FENCE_SUITE_TIMEOUT)"


def stop_group(p, lines):
    """SIGKILL to the suite's session (its servers included); lines, when
    given, records why."""
    if lines is not None:
        lines.append(TIMED_OUT % float(os.environ.get("FENCE_SUITE_TIMEOUT") or 1800))
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run(name, cmd):
    results = os.environ.get("FENCE_RESULTS")
    if not results:
        os.execvp(cmd[0], cmd)
    verbose = os.environ.get("V") == "1"
    limit = float(os.environ.get("FENCE_SUITE_TIMEOUT") or 1800)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.makedirs(results, exist_ok=True)
    base = os.path.join(results, re.sub(r"[^\w.+-]", "_", name))
    t0 = time.monotonic()
    lines = []
    with open(base + ".log", "w", encoding="utf-8") as log:
        try:
            # a session of its own: a timeout or Ctrl-C stops the servers
            # it started too
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            p = None
            lines.append("%s: cannot run %s: %s" % (name, cmd[0], e))
            log.write(lines[0] + "\n")
        if p:
            timer = threading.Timer(limit, stop_group, (p, lines))
            timer.daemon = True
            timer.start()
            try:
                for raw in p.stdout:
                    line = raw.decode("utf-8", "replace").rstrip("\n")
                    lines.append(line)
                    log.write(line + "\n")
                    if verbose:
                        print(line, flush=True)
                status = p.wait()
            except BaseException:  # Ctrl-C, SIGTERM: its servers go too
                stop_group(p, None)
                raise
            finally:
                timer.cancel()
            if lines and lines[-1] == TIMED_OUT % limit:
                log.write(lines[-1] + "\n")
        else:
            status = 127
    passed, failed, skipped = count(lines, status)
    seconds = time.monotonic() - t0
    with open(base + ".json", "w", encoding="utf-8") as f:
        json.dump({"name": name, "status": status, "passed": passed, "failed": failed,
                   "skipped": skipped, "seconds": round(seconds, 1)}, f)
    if failed and not verbose:
        print("---- %s: its output (also in %s.log)" % (name, base))
        print("\n".join(lines))
        print("---- %s: end of its output" % name)
    how = "" if status == 0 else ", %s" % status_text(status)
    print("%s: %s (%.0fs%s)" % (name, counts_text(passed, failed, skipped), seconds, how),
          flush=True)
    return 1 if failed else 0


def verdict(results, make_status):
    total = [0, 0, 0]
    failed_suites = []
    names = sorted(n for n in os.listdir(results) if n.endswith(".json")) \
        if os.path.isdir(results) else []
    for n in names:
        with open(os.path.join(results, n), encoding="utf-8") as f:
            rec = json.load(f)
        total[0] += rec["passed"]
        total[1] += rec["failed"]
        total[2] += rec["skipped"]
        if rec["failed"]:
            failed_suites.append("%s (%d failed, %s)"
                                 % (rec["name"], rec["failed"], status_text(rec["status"])))
    if make_status != 0 and not failed_suites:
        # a build or a target that stopped before any suite recorded a result
        total[1] += 1
        failed_suites.append("the build or a suite that left no count (make exited %d; "
                             "see its messages above)" % make_status)
    for s in failed_suites:
        print("FAILED: %s" % s)
    print(counts_text(*total))
    return 1 if total[1] else 0


def main(argv):
    if len(argv) >= 4 and argv[1] == "run":
        return run(argv[2], argv[3:])
    if len(argv) == 4 and argv[1] == "verdict":
        return verdict(argv[2], int(argv[3]))
    sys.stderr.write("usage: suite.py run NAME CMD [ARGS...] | suite.py verdict DIR MAKE_STATUS\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
