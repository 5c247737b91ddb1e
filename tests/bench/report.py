#!/usr/bin/env python3
"""Prints the fencegate benchmark report from run.sh's raw results.

Input: results.jsonl (one line per measured wrk run) and meta.json. Per
(layout, case, concurrency, target) it takes the median over rounds of
req/s, p50/p99 latency and CPU time per request (user and kernel apart),
prints one table per layout, then the targets of issue 26 with the
measured value of each row (the one-core layout is the verdict) and the
scale rows (scale_rows.py). It prints, never judges a build: the "met"
column compares a measurement with a target, nothing fails on it.
Usage: report.py RESULTS.jsonl META.json
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale_rows  # noqa: E402

TARGETS = ["direct", "nginx", "haproxy", "haproxy2", "fencegate"]
CASES = [
    ("get", "GET 1 KiB object"),
    ("put1k", "fenced PUT 1 KiB"),
    ("put64k", "fenced PUT 64 KiB"),
    ("stale", "stale PUT 1 KiB (409)"),
    ("putnew", "fenced PUT 1 KiB, new key"),
]
LABEL = {"direct": "direct (stand-in)", "nginx": "nginx proxy_pass", "haproxy": "haproxy",
         "haproxy2": "haproxy A/A", "fencegate": "fencegate"}
MIB = 1024.0


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
    """Medians over rounds for one (layout, case, conns, target)."""
    rps, p50, p99, cpu, user, sys_ = [], [], [], [], [], []
    requests = ok = upstream = lists = errors = 0
    for r in runs:
        w = r["wrk"]
        secs = w["duration_us"] / 1e6
        rps.append(w["requests"] / secs if secs > 0 else 0.0)
        p50.append(w["p50_us"])
        p99.append(w["p99_us"])
        if w["requests"]:
            per = 1e6 / r["clk_tck"] / w["requests"]
            cpu.append(r["cpu_ticks"] * per)
            if "cpu_user_ticks" in r:
                user.append(r["cpu_user_ticks"] * per)
                sys_.append(r["cpu_sys_ticks"] * per)
        requests += w["requests"]
        ok += w["requests"] - w["non2xx"]
        upstream += r["upstream_data_requests"]
        lists += r.get("upstream_list_requests", 0)
        errors += (w["connect_errors"] + w["read_errors"] + w["write_errors"] +
                   w["timeouts"])
    med = statistics.median
    return {
        "rps": med(rps),
        "spread": (max(rps) - min(rps)) / med(rps) if med(rps) else 0.0,
        "p50": med(p50),
        "p99": med(p99),
        "cpu": med(cpu) if cpu else None,
        "user": med(user) if user else None,
        "sys": med(sys_) if sys_ else None,
        "requests": requests,
        "secs": sum(r["wrk"]["duration_us"] for r in runs) / 1e6,
        "lists": lists,
        "ok": ok,
        "non2xx": requests - ok,
        "upstream": upstream,
        "errors": errors,
    }


class Results:
    def __init__(self, results):
        self.groups = {}
        for r in results:
            key = (r.get("layout", "one"), r["case"], r["conns"], r["target"])
            self.groups.setdefault(key, []).append(r)

    def get(self, layout, case, conns, target):
        runs = self.groups.get((layout, case, conns, target))
        return summarize(runs) if runs else None

    def conns(self, layout):
        return sorted({k[2] for k in self.groups if k[0] == layout}, reverse=True)


def print_layout(res, layout, info, notes):
    print("layout %s: %s" % (layout, info["desc"]))
    head = ("%-26s %-17s %10s %6s %9s %9s %6s %6s %9s %8s %8s"
            % ("case", "target", "req/s", "spread", "p50", "p99", "xHAP", "xdir",
               "CPU/req", "non-2xx", "up/write"))
    print(head)
    print("-" * len(head))
    for case, title in CASES:
        for conns in res.conns(layout):
            rows = {t: res.get(layout, case, conns, t) for t in TARGETS}
            rows = {t: s for t, s in rows.items() if s}
            if not rows:
                continue
            # the stale case runs on fencegate only: compare it with the
            # anchors' 1 KiB PUT (forwarding the same request)
            ref_case = "put1k" if case == "stale" else case
            hap = res.get(layout, ref_case, conns, "haproxy")
            direct = res.get(layout, ref_case, conns, "direct")
            hap = hap and hap["rps"]
            direct = direct and direct["rps"]
            name = "%s, c=%d" % (title, conns)
            for t in TARGETS:
                s = rows.get(t)
                if not s:
                    continue
                upw = "-"
                if case in ("put1k", "put64k", "putnew"):
                    upw = "%.2f" % (s["upstream"] / s["ok"]) if s["ok"] else "n/a"
                elif case == "stale":
                    upw = "%d req" % s["upstream"]
                print("%-26s %-17s %10.0f %5.0f%% %9s %9s %6s %6s %9s %8d %8s"
                      % (name, LABEL[t], s["rps"], 100 * s["spread"], fmt_us(s["p50"]),
                         fmt_us(s["p99"]), fmt_ratio(s["rps"], hap),
                         fmt_ratio(s["rps"], direct),
                         ("%.1f us" % s["cpu"]) if s["cpu"] is not None else "-",
                         s["non2xx"], upw))
                name = ""
                if s["errors"]:
                    notes.append("%s: %s %s c=%d: %d socket errors/timeouts"
                                 % (layout, t, case, conns, s["errors"]))
                if t == "fencegate" and case == "stale" and s["ok"]:
                    notes.append("%s: stale c=%d: %d stale writes answered 2xx"
                                 % (layout, conns, s["ok"]))
                if t == "fencegate" and case in ("put1k", "put64k", "putnew") and s["non2xx"]:
                    notes.append("%s: fencegate %s c=%d: %d of %d writes not 2xx"
                                 % (layout, case, conns, s["non2xx"], s["requests"]))
        print()
    hwm = info["hwm_kb"]
    print("peak RSS (VmHWM) after layout %s: fencegate %.1f MiB, nginx proxy worker %.1f MiB, "
          "haproxy %.1f MiB, haproxy A/A %.1f MiB, stand-in worker %.1f MiB"
          % (layout, hwm["fencegate"] / MIB, hwm["nginx"] / MIB, hwm["haproxy"] / MIB,
             hwm.get("haproxy2", 0) / MIB, hwm["direct"] / MIB))
    print()


def cpu_split(s):
    """ "12.3 us (5.1 user + 7.2 sys)" """
    if s["user"] is None:
        return "%.1f us" % s["cpu"]
    return "%.1f us (%.1f user + %.1f sys)" % (s["cpu"], s["user"], s["sys"])


def verdict(res, meta):
    """The targets of issue 26, one row each: measured, target, met."""
    rows = []

    def row(what, value, target, met):
        rows.append((what, value, target, "-" if met is None else ("yes" if met else "NO")))

    def s(layout, case, conns, t):
        return res.get(layout, case, conns, t)

    if "one" in meta["layouts"]:
        for case in ("get", "put1k", "put64k", "putnew"):
            fg, hp, hp2, d = (s("one", case, 64, t)
                              for t in ("fencegate", "haproxy", "haproxy2", "direct"))
            if fg and hp and d:
                r = (fg["rps"] / d["rps"]) / (hp["rps"] / d["rps"])
                aa = " (A/A %.2f)" % (hp2["rps"] / hp["rps"]) if hp2 else ""
                row("one core c=64 %s: xdir vs haproxy's xdir" % case,
                    "%.2fx%s" % (r, aa), ">= 1.2x", r >= 1.2)
        for case in ("get", "put1k", "put64k", "putnew"):
            fg, hp, hp2 = (s("one", case, 64, t) for t in ("fencegate", "haproxy", "haproxy2"))
            if fg and hp and fg["cpu"] and hp["cpu"]:
                r = fg["cpu"] / hp["cpu"]
                aa = " (A/A %.2f)" % (hp2["cpu"] / hp["cpu"]) if hp2 and hp2["cpu"] else ""
                row("one core c=64 %s: CPU/req vs haproxy" % case,
                    "%.2fx%s: %s vs %s" % (r, aa, cpu_split(fg), cpu_split(hp)),
                    "<= 1.0x", r <= 1.0)
                if fg["user"] is not None and hp["user"]:
                    ru = fg["user"] / hp["user"]
                    row("one core c=64 %s: user-space CPU/req vs haproxy" % case,
                        "%.2fx (%.1f vs %.1f us)" % (ru, fg["user"], hp["user"]),
                        "<= 0.8x", ru <= 0.8)
        for case in ("get", "put1k"):
            fg, d, hp = (s("one", case, 1, t) for t in ("fencegate", "direct", "haproxy"))
            if fg and d:
                added = fg["p50"] - d["p50"]
                hap_added = hp["p50"] - d["p50"] if hp else None
                hap = " (haproxy +%d us)" % hap_added if hp else ""
                row("c=1 %s: p50 added over direct" % case, "+%d us%s" % (added, hap),
                    "<= haproxy's", None if hap_added is None else added <= hap_added)
        st, put = s("one", "stale", 64, "fencegate"), s("one", "put1k", 64, "fencegate")
        if st and put:
            r = st["rps"] / put["rps"]
            row("stale rejection vs fenced PUT 1 KiB (one core, c=64)",
                "%.2fx, %d upstream requests" % (r, st["upstream"]), ">= 3x, 0",
                r >= 3 and st["upstream"] == 0)
        fg, hp = s("one", "putnew", 64, "fencegate"), s("one", "putnew", 64, "haproxy")
        if fg and fg["ok"]:
            r = fg["upstream"] / fg["ok"]
            hap = " (haproxy %.3f: the c=64 artefact)" % (hp["upstream"] / hp["ok"]) \
                if hp and hp["ok"] else ""
            row("upstream requests per accepted write, write-once keys (one core, c=64)",
                "%.3f%s" % (r, hap), "1.00", r <= 1.0 + (hp["upstream"] / hp["ok"] - 1.0
                                                       if hp and hp["ok"] else 0.005))
        fg = s("one", "put1k", 1, "fencegate")
        if fg and fg["ok"]:
            r = fg["upstream"] / fg["ok"]
            row("upstream requests per accepted put1k (c=1: exact)", "%.3f" % r, "1.00",
                abs(r - 1.0) < 0.005)
        fg, hp = s("one", "put64k", 64, "fencegate"), s("one", "put64k", 64, "haproxy")
        if fg and fg["ok"] and hp and hp["ok"]:
            r = fg["upstream"] / fg["ok"]
            row("upstream requests per accepted put64k (c=64; haproxy's: the artefact)",
                "%.3f (haproxy %.3f)" % (r, hp["upstream"] / hp["ok"]), "1.00", None)
    if "all" in meta["layouts"]:
        for case in ("get", "put1k", "put64k"):
            fg, hp, hp2 = (s("all", case, 256, t) for t in ("fencegate", "haproxy", "haproxy2"))
            if fg and hp:
                r = fg["rps"] / hp["rps"]
                aa = " (A/A %.2f)" % (hp2["rps"] / hp["rps"]) if hp2 else ""
                row("all cores c=256 %s: req/s vs haproxy" % case,
                    "%.2fx (%.0f vs %.0f)%s" % (r, fg["rps"], hp["rps"], aa), ">= 1.1x",
                    r >= 1.1)
        lay = meta["layouts"]["all"]
        hwm = lay["hwm_kb"]["fencegate"] / MIB
        row("RSS at c=256 keep-alive (VmHWM; haproxy's)",
            "%.1f MiB (haproxy %.1f)" % (hwm, lay["hwm_kb"]["haproxy"] / MIB), "<= 32 MiB",
            hwm <= 32)
        if "rss0_kb" in lay:
            per = (lay["hwm_kb"]["fencegate"] - lay["rss0_kb"]["fencegate"]) / 256.0
            hper = (lay["hwm_kb"]["haproxy"] - lay["rss0_kb"]["haproxy"]) / 256.0
            row("RSS per connection at c=256: (VmHWM - idle VmRSS) / 256",
                "%.0f KiB (haproxy %.0f KiB; idle %.1f / %.1f MiB)"
                % (per, hper, lay["rss0_kb"]["fencegate"] / MIB,
                   lay["rss0_kb"]["haproxy"] / MIB), "-", None)
    if "scale" in meta["layouts"]:
        scale_rows.rows(res, meta, row)
    for label in ("s3", "local"):
        b = meta.get("big", {}).get(label)
        if not b:
            continue
        growth = (b["hwm_kb"] - b["rss0_kb"]) / MIB
        ok = b["status"].startswith("2")
        row("%d MiB upload RSS growth, %s (%s in %s s)"
            % (meta.get("big_mib", 1024), "S3 mode" if label == "s3" else "embedded store",
               b["status"], b["seconds"]),
            "%.1f MiB" % growth, "<= 16 MiB", ok and growth <= 16)
    if not rows:
        return
    width = max(len(r[0]) for r in rows)
    print("issue 26 targets (one-core layout = the verdict; A/A = a second, identical HAProxy"
          " over the first: the noise)")
    print("%-*s  %-12s %-4s %s" % (width, "row", "target", "met", "measured"))
    print("-" * (width + 60))
    for r in rows:
        print("%-*s  %-12s %-4s %s" % (width, r[0], r[2], r[3], r[1]))
    print()


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: report.py RESULTS.jsonl META.json")
    with open(sys.argv[1]) as f:
        results = [json.loads(line) for line in f if line.strip()]
    with open(sys.argv[2]) as f:
        meta = json.load(f)
    res = Results(results)

    print()
    print("fencegate benchmark — loopback, nginx stand-in for S3 (%s)"
          % (meta.get("fencegate") or "fencegate"))
    print("%d rounds x %d s per run, target order rotated each round; medians over rounds"
          % (meta["rounds"], meta["seconds"]))
    if not meta.get("workers_flag"):
        print("(this fencegate has no event-loop --workers flag: it ran one event loop"
              " in every layout)")
    print()
    notes = []
    for layout in ("one", "all"):
        if layout in meta["layouts"]:
            print_layout(res, layout, meta["layouts"][layout], notes)
    verdict(res, meta)
    print("columns: req/s, p50, p99 = medians over rounds (wrk, 1 thread); spread ="
          " (max-min)/median of req/s;")
    print("  xHAP / xdir = req/s relative to haproxy / to the stand-in served directly"
          " (stale rows: relative to their 1 KiB PUT);")
    print("  CPU/req = utime+stime of the server under test per request (nginx: master"
          " + workers; direct: the stand-in); user / sys apart in the targets;")
    print("  up/write = stand-in requests for data keys per 2xx write (PUT rows,"
          " target 1.00); stale rows: upstream requests (target 0);")
    print("    at c=1 it is exact to one request per run; at c>1 writes in flight when"
          " wrk stops reach the stand-in uncounted;")
    print("  fenced PUTs carry X-Fencing-Token: %d (the current epoch); stale ones %d."
          % (meta["epoch"], meta["stale_token"]))
    print("  the anchors forward every PUT unchecked; only fencegate fences.")
    if notes:
        print()
        for n in notes:
            print("note: " + n)


if __name__ == "__main__":
    main()
