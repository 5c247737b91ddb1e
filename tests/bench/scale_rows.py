"""The scale rows of the bench report (run.sh's scale layout, scale.sh):
two replicas, a strict route, existing keys not cached, many locks, many
keys. report.py calls rows(); each row is (what, measured, target, met)
through its row() callback. It reads the results only; it prints nothing
itself and judges nothing that has no target in issue 26 (met None).
"""
import statistics

MIB = 1024.0


def _raw(res, layout, case, target):
    """The raw result lines of one (layout, case, target), any conns, by round."""
    out = []
    for key, runs in res.groups.items():
        if key[0] == layout and key[1] == case and key[3] == target:
            out.extend(runs)
    return sorted(out, key=lambda r: r["round"])


def _rps(r):
    secs = r["wrk"]["duration_us"] / 1e6
    return r["wrk"]["requests"] / secs if secs > 0 else 0.0


def _ok(r):
    return r["wrk"]["requests"] - r["wrk"]["non2xx"]


def _pair(res, a, b):
    """(summed req/s, CPU us per request over both, upstream per 2xx) of a
    pair of replicas measured at once, medians over rounds."""
    ra, rb = _raw(res, "scale", "pair", a), _raw(res, "scale", "pair", b)
    rps, cpu, upw = [], [], []
    for x, y in zip(ra, rb):
        n = x["wrk"]["requests"] + y["wrk"]["requests"]
        rps.append(_rps(x) + _rps(y))
        if n:
            cpu.append((x["cpu_ticks"] + y["cpu_ticks"]) * 1e6 / x["clk_tck"] / n)
        ok = _ok(x) + _ok(y)
        if ok:
            # both runs counted the stand-in's whole log over the same window
            upw.append(max(x["upstream_data_requests"], y["upstream_data_requests"]) / ok)
    if not rps:
        return None
    med = statistics.median
    return med(rps), (med(cpu) if cpu else None), (med(upw) if upw else None)


def _split(runs, ok):
    """("PUT 412 1.000 + HEAD 1.000 + PUT 2xx 1.000", PUT 2xx count): the
    stand-in's logged requests of these runs per 2xx write, by method and
    status (run.sh's upstream_split), the expected three first, anything
    else after; and how many PUTs the stand-in answered 2xx."""
    total = {}
    for r in runs:
        for k, n in r.get("upstream_split", {}).items():
            method, _, status = k.partition(" ")
            if method == "HEAD":
                k = "HEAD"
            elif method == "PUT" and status.startswith("2"):
                k = "PUT 2xx"
            total[k] = total.get(k, 0) + n
    if not ok or not total:
        return "no split", 0
    keys = [k for k in ("PUT 412", "HEAD", "PUT 2xx") if k in total]
    keys += sorted(k for k in total if k not in keys)
    return (" + ".join("%s %.3f" % (k, total[k] / float(ok)) for k in keys),
            total.get("PUT 2xx", 0))


def rows(res, meta, row):
    sc = meta["layouts"]["scale"]

    def get(case, t, layout="scale", conns=64):
        return res.get(layout, case, conns, t)

    # two replicas in front of one stand-in
    one_fg, one_hp = get("put1k", "fencegate"), get("put1k", "haproxy")
    two_fg, two_hp = _pair(res, "fencegate", "fencegate2"), _pair(res, "haproxy", "haproxy2")
    if one_fg and two_fg and one_hp and two_hp:
        row("scale: 2 replicas (1 loop each, c=32+32) vs 1 (c=64), PUT 1 KiB, req/s",
            "fencegate %.2fx (%.0f -> %.0f), haproxy %.2fx (%.0f -> %.0f); 2 fencegate vs 2"
            " haproxy %.2fx" % (two_fg[0] / one_fg["rps"], one_fg["rps"], two_fg[0],
                                two_hp[0] / one_hp["rps"], one_hp["rps"], two_hp[0],
                                two_fg[0] / two_hp[0]), "-", None)
        if two_fg[1] and two_hp[1]:
            row("scale: 2 replicas, CPU/req and upstream requests per write",
                "fencegate %.1f us (1 replica %.1f), %.3f up/write; haproxy %.1f us (%.1f)"
                % (two_fg[1], one_fg["cpu"], two_fg[2] or 0, two_hp[1], one_hp["cpu"]),
                "-", None)

    # a strict route: a listing before every write
    normal, strict = get("put1k", "fgstrict"), get("strict", "fgstrict")
    if normal and strict and normal["ok"] and strict["ok"]:
        row("scale: strict route vs normal route (same process, PUT 1 KiB, c=64)",
            "%.2fx req/s (%.0f vs %.0f), CPU/req %.1f vs %.1f us, listings/write %.2f vs %.2f,"
            " data requests/write %.2f vs %.2f"
            % (strict["rps"] / normal["rps"], strict["rps"], normal["rps"], strict["cpu"],
               normal["cpu"], strict["lists"] / strict["ok"], normal["lists"] / normal["ok"],
               strict["upstream"] / strict["ok"], normal["upstream"] / normal["ok"]),
            "-", None)

    # existing keys the proxy has not cached: every PUT a distinct k/ key
    # the stand-in says exists, new to the ETag cache (the unread create
    # gets 412, then a HEAD, then the PUT with If-Match)
    unc, unc_hp = get("uncached", "fencegate"), get("uncached", "haproxy")
    if unc and unc["ok"]:
        runs = _raw(res, "scale", "uncached", "fencegate")
        h = sum(r.get("cache_hits", 0) for r in runs)
        m = sum(r.get("cache_misses", 0) for r in runs)
        warm = ""
        if one_fg:
            warm = " (%.2fx put1k's %.0f on 256 warm keys, %.1f us)" % (
                unc["rps"] / one_fg["rps"], one_fg["rps"], one_fg["cpu"] or 0)
        hp = ""
        if unc_hp and unc_hp["ok"]:
            hp = "; haproxy %.0f req/s, %.1f us CPU/req, %.3f up/write" % (
                unc_hp["rps"], unc_hp["cpu"] or 0, unc_hp["upstream"] / unc_hp["ok"])
        split, done = _split(runs, unc["ok"])
        # per write the stand-in completed: without the c=64 artefact
        # (writes in flight when wrk stops reach it uncounted by wrk)
        exact = " = %.3f per PUT the stand-in answered 2xx" % (unc["upstream"] / float(done)) \
            if done else ""
        row("scale: existing keys the proxy has not cached (a new k/ key per PUT, c=64)",
            "%.0f req/s, CPU/req %.1f us%s; cache %d hits, %d misses; %.3f upstream requests"
            " per write (%s%s); %d non-2xx%s"
            % (unc["rps"], unc["cpu"] or 0, warm, h, m, unc["upstream"] / unc["ok"],
               split, exact, unc["non2xx"], hp), "-", None)
    elif unc:
        row("scale: existing keys the proxy has not cached (a new k/ key per PUT, c=64)",
            "fencegate answered %d, none 2xx (%d errors)" % (unc["requests"], unc["errors"]),
            "-", False)

    # many locks: the first pass, then writes spread over all of them
    nlocks = sc.get("locks", 0)
    first = _raw(res, "scale-locks-first", "locks", "fencegate")
    if first and nlocks:
        r = first[0]
        w = r["wrk"]
        secs = w["duration_us"] / 1e6
        grown = r.get("rss_kb", 0) - r.get("rss0_kb", 0)
        answered = _ok(r)
        row("scale: first write to each of %d locks (load + self-test + mark each)" % nlocks,
            "%.0f s for %d answers (%d 2xx, %d non-2xx, %d timeouts): %.2f ms per lock;"
            " %.2f listings per lock; RSS +%.1f MiB = %.1f KiB per 2xx lock"
            % (secs, w["requests"], answered, w["non2xx"], w["timeouts"],
               secs * 1000 / nlocks, r["upstream_list_requests"] / float(nlocks), grown / MIB,
               grown / float(answered) if answered else 0), "-", None)
    spread, spread_hp = get("locks", "fencegate"), get("locks", "haproxy")
    if spread and one_fg:
        hp = ""
        if spread_hp:
            hp = "; haproxy %.0f req/s, %.1f us CPU/req (%.1f on one lock)" % (
                spread_hp["rps"], spread_hp["cpu"] or 0, one_hp["cpu"] if one_hp else 0)
        if spread["ok"]:
            row("scale: writes spread over %d locks vs 1 lock (c=64)" % nlocks,
                "%.2fx req/s (%.0f vs %.0f), CPU/req %.1f vs %.1f us, %.3f listings and %.2f"
                " data requests per write%s" % (spread["rps"] / one_fg["rps"], spread["rps"],
                                                one_fg["rps"], spread["cpu"], one_fg["cpu"],
                                                spread["lists"] / spread["ok"],
                                                spread["upstream"] / spread["ok"], hp),
                "-", None)
        else:
            row("scale: writes spread over %d locks vs 1 lock (c=64)" % nlocks,
                "fencegate answered %d of them (%d non-2xx, %d errors) vs %.0f req/s on 1"
                " lock%s" % (spread["requests"], spread["non2xx"], spread["errors"],
                             one_fg["rps"], hp), "-", False)

    # many keys: 10 slices of new keys, then rewrites within / beyond the bound
    slices = _raw(res, "scale-keys", "keys", "fencegate2")
    if slices:
        nkeys = sc.get("keys", 0)
        total_ok = sum(_ok(r) for r in slices)
        total_up = sum(r["upstream_data_requests"] for r in slices)
        secs = sum(r["wrk"]["duration_us"] for r in slices) / 1e6
        rss0 = sc.get("rss0_keys_kb", 0)
        rss = [r.get("rss_kb", 0) for r in slices]
        row("scale: %d distinct new keys written (10 slices, c=64)" % nkeys,
            "%.0f s; req/s slice 1 -> 10: %.0f -> %.0f (%.2fx); %.3f upstream requests per"
            " write; %d non-2xx" % (secs, _rps(slices[0]), _rps(slices[-1]),
                                   _rps(slices[-1]) / _rps(slices[0]) if _rps(slices[0]) else 0,
                                   total_up / total_ok if total_ok else 0,
                                   sum(r["wrk"]["non2xx"] for r in slices)), "-", None)
        row("scale: RSS over the %d keys (the ETag cache's bound: 100000 entries per loop)"
            % nkeys,
            "%.1f MiB before, %.1f after slice 1, %.1f after slice 5, %.1f after slice 10"
            % (rss0 / MIB, rss[0] / MIB, rss[min(4, len(rss) - 1)] / MIB, rss[-1] / MIB),
            "bounded", None)
        for phase, want in (("recent", "hits"), ("first", "misses")):
            rr = _raw(res, "scale-rewrite-" + phase, "keys", "fencegate2")
            if not rr:
                continue
            r = rr[0]
            h, m = r.get("cache_hits", 0), r.get("cache_misses", 0)
            # n/ keys: the stand-in says they never existed, so a miss costs
            # one create (204), not a rewrite of an existing object
            row("scale: rewrite of the %s %d n/ keys (expect %s%s)" % (
                "most recent" if phase == "recent" else "first", _ok(r), want,
                "; keys the stand-in says never existed" if phase == "first" else ""),
                "hit rate %.1f%% (%d hits, %d misses), %.3f upstream requests per write"
                % (100.0 * h / (h + m) if h + m else 0, h, m,
                   r["upstream_data_requests"] / _ok(r) if _ok(r) else 0), "-", None)
