#!/usr/bin/env python3
"""Prints the fencegate benchmark table from run.sh's raw results.

Input: results.jsonl (one line per measured wrk run) and meta.json. Per
(case, concurrency, target) it takes the median over rounds of req/s,
p50/p99 latency and CPU time per request, and the ratio of those medians to
HAProxy's and to the direct upstream's. It prints, never judges: timings are
not asserted anywhere.
Usage: report.py RESULTS.jsonl META.json
"""
import json
import statistics
import sys

TARGETS = ["direct", "nginx", "haproxy", "fencegate"]
CASES = [
    ("get", "GET 1 KiB object"),
    ("put1k", "fenced PUT 1 KiB"),
    ("put64k", "fenced PUT 64 KiB"),
    ("stale", "stale PUT 1 KiB (409)"),
]
LABEL = {"direct": "direct", "nginx": "nginx proxy_pass", "haproxy": "haproxy",
         "fencegate": "fencegate"}


def fmt_us(us):
    if us is None:
        return "-"
    if us >= 10000:
        return "%.1f ms" % (us / 1000.0)
    if us >= 1000:
        return "%.2f ms" % (us / 1000.0)
    return "%d us" % us


def fmt_ratio(a, b):
    if a is None or not b:
        return "-"
    return "%.2f" % (a / b)


def summarize(runs):
    """Medians over rounds for one (case, conns, target)."""
    rps, p50, p99, cpu = [], [], [], []
    requests = ok = upstream = errors = 0
    for r in runs:
        w = r["wrk"]
        secs = w["duration_us"] / 1e6
        rps.append(w["requests"] / secs if secs > 0 else 0.0)
        p50.append(w["p50_us"])
        p99.append(w["p99_us"])
        if w["requests"]:
            cpu.append(r["cpu_ticks"] * 1e6 / r["clk_tck"] / w["requests"])
        requests += w["requests"]
        ok += w["requests"] - w["non2xx"]
        upstream += r["upstream_data_requests"]
        errors += (w["connect_errors"] + w["read_errors"] + w["write_errors"] +
                   w["timeouts"])
    med = statistics.median
    return {
        "rps": med(rps),
        "spread": (max(rps) - min(rps)) / med(rps) if med(rps) else 0.0,
        "p50": med(p50),
        "p99": med(p99),
        "cpu": med(cpu) if cpu else None,
        "requests": requests,
        "ok": ok,
        "non2xx": requests - ok,
        "upstream": upstream,
        "errors": errors,
        "rounds": len(runs),
    }


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: report.py RESULTS.jsonl META.json")
    with open(sys.argv[1]) as f:
        results = [json.loads(line) for line in f if line.strip()]
    with open(sys.argv[2]) as f:
        meta = json.load(f)
    groups = {}
    for r in results:
        groups.setdefault((r["case"], r["conns"], r["target"]), []).append(r)
    conns_seen = sorted({r["conns"] for r in results}, reverse=True)

    print()
    print("fencegate benchmark — loopback, nginx stand-in for S3 (%s)"
          % (meta.get("fencegate") or "fencegate"))
    print("pinning: %s" % meta["pinning"])
    print("%d rounds x %d s per run, target order rotated each round; "
          "medians over rounds" % (meta["rounds"], meta["seconds"]))
    print()
    head = ("%-26s %-17s %10s %6s %9s %9s %6s %6s %9s %8s %8s"
            % ("case", "target", "req/s", "spread", "p50", "p99", "xHAP", "xdir",
               "CPU/req", "non-2xx", "up/write"))
    print(head)
    print("-" * len(head))
    notes = []
    for case, title in CASES:
        for conns in conns_seen:
            rows = {t: summarize(groups[(case, conns, t)])
                    for t in TARGETS if (case, conns, t) in groups}
            if not rows:
                continue
            # the stale case runs on fencegate only: compare it with the
            # anchors' 1 KiB PUT (forwarding the same request)
            ref_case = "put1k" if case == "stale" else case
            ref = {t: summarize(groups[(ref_case, conns, t)])
                   for t in ("haproxy", "direct") if (ref_case, conns, t) in groups}
            hap = ref.get("haproxy", {}).get("rps")
            direct = ref.get("direct", {}).get("rps")
            name = "%s, c=%d" % (title, conns)
            for t in TARGETS:
                if t not in rows:
                    continue
                s = rows[t]
                upw = "-"
                if case in ("put1k", "put64k"):
                    upw = "%.2f" % (s["upstream"] / s["ok"]) if s["ok"] else "n/a"
                elif case == "stale":
                    upw = "%d req" % s["upstream"]
                label = LABEL[t] + (" (stand-in)" if t == "direct" else "")
                print("%-26s %-17s %10.0f %5.0f%% %9s %9s %6s %6s %9s %8d %8s"
                      % (name, label, s["rps"], 100 * s["spread"], fmt_us(s["p50"]),
                         fmt_us(s["p99"]), fmt_ratio(s["rps"], hap),
                         fmt_ratio(s["rps"], direct),
                         ("%.1f us" % s["cpu"]) if s["cpu"] is not None else "-",
                         s["non2xx"], upw))
                name = ""
                if s["errors"]:
                    notes.append("%s %s c=%d: %d socket errors/timeouts"
                                 % (t, case, conns, s["errors"]))
                if t == "fencegate" and case == "stale":
                    if s["upstream"]:
                        notes.append("stale c=%d: %d upstream requests for data keys "
                                     "while every write should have been rejected"
                                     % (conns, s["upstream"]))
                    if s["ok"]:
                        notes.append("stale c=%d: %d stale writes answered 2xx"
                                     % (conns, s["ok"]))
                if t == "fencegate" and case in ("put1k", "put64k") and s["non2xx"]:
                    notes.append("fencegate %s c=%d: %d of %d writes not 2xx"
                                 % (case, conns, s["non2xx"], s["requests"]))
        print()

    hwm = meta["hwm_kb"]
    print("peak RSS (VmHWM): fencegate %.1f MiB, nginx proxy worker %.1f MiB, "
          "haproxy %.1f MiB, stand-in worker %.1f MiB"
          % (hwm["fencegate"] / 1024.0, hwm["nginx"] / 1024.0, hwm["haproxy"] / 1024.0,
             hwm["direct"] / 1024.0))
    print()
    print("columns: req/s, p50, p99 = medians over rounds (wrk, 1 thread); spread ="
          " (max-min)/median of req/s;")
    print("  xHAP / xdir = req/s relative to haproxy / to the stand-in served directly"
          " (stale rows: relative to their 1 KiB PUT);")
    print("  CPU/req = utime+stime of the server under test per request (nginx: master"
          " + worker; direct: the stand-in);")
    print("  up/write = stand-in requests for data keys per 2xx write (PUT rows,"
          " target 1.00); stale rows: upstream requests (target 0);")
    print("    at c=1 it is exact to one request per run; at c=64 up to 64 writes"
          " in flight when wrk stops reach the stand-in")
    print("    uncounted (the anchors' rows show that artefact);")
    print("  fenced PUTs carry X-Fencing-Token: %d (the current epoch); stale ones %d."
          % (meta["epoch"], meta["stale_token"]))
    print("  the anchors forward every PUT unchecked; only fencegate fences.")
    if notes:
        print()
        for n in notes:
            print("note: " + n)


if __name__ == "__main__":
    main()
