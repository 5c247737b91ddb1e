"""The chaos harness's checker (tests/chaos/): pure functions over the
workers' history (JSON lines, worker.py) and the final storage state read
straight from storage by the driver. No I/O but reading the history files,
no clock. It returns violations, each with the real monotonic time it
happened at so the driver can charge it to a trial; it does not judge
liveness or speed. For the order in which one replica's knowledge may
lag, it reuses tests/e2e/history_check.py's rule (check_key_order).

What it reports (DESIGN.md "Fencing on the proxy", "The lock protocol"):
  zombie       a write applied after a newer epoch's write to its key:
               storage's order is rebuilt from the counter bodies (each
               names the body it read, `prev`), and any link from epoch E
               to a lower epoch is one; also an acknowledged lower-epoch
               write sent after a higher epoch's write was acknowledged
  lost         an acknowledged write that is not in the final chain of its
               key (a later write did not read it). One exception, which
               fencing cannot close and the README states: the newer
               holder read the key while the older holder's write, sent
               before the newer epoch was granted plus the replicas'
               refresh interval, was still on its way; those are counted
               as `in flight`, not as violations
  epoch-twice  one epoch granted to two holders, or a lock file naming
               another holder than the one it was granted to
  overlap      by the storage clock (the lock API's expiresAtMs is the
               lock file's Last-Modified plus the ttl): epoch F granted
               before the lease of an earlier epoch E ended, E's lease
               being extended to the last acknowledged renewal"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "e2e"))
import history_check  # noqa: E402

INF = float("inf")


def load(paths):
    """Every well-formed JSON line of the history files (a kill -9 may cut
    the last line of a file: skipped)."""
    out = []
    for p in paths:
        with open(p, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def writes_of(events):
    """{id: write}: invoke time, completion (ok / fail / unknown; no
    completion = unknown, t_done INF), epoch, key, prev, lane (w's prefix),
    and t_read, when the read it was computed from began (the worker's
    last read of that key before it; each worker's events are in order)."""
    ws, read_at = {}, {}
    for ev in events:
        if ev.get("op") == "read" and ev.get("type") == "invoke":
            read_at[(ev["w"], ev["key"])] = ev["t"]
        if ev.get("op") != "write":
            continue
        if ev["type"] == "invoke":
            ws[ev["id"]] = {"id": ev["id"], "key": ev["key"], "epoch": ev["epoch"],
                            "prev": ev.get("prev"), "w": ev["w"], "lane": ev["w"].split("/")[0],
                            "t_read": read_at.get((ev["w"], ev["key"]), ev["t"]),
                            "t_inv": ev["t"], "t_sent": ev["t"], "t_done": INF,
                            "type": "unknown", "status": 0, "code": None}
        elif ev["type"] == "sent" and ev["id"] in ws:
            ws[ev["id"]]["t_sent"] = ev["t"]
        elif ev["id"] in ws:
            ws[ev["id"]].update(type=ev["type"], t_done=ev["t"], status=ev.get("status") or 0,
                                code=ev.get("code"))
    return ws


def grants_of(events):
    """{lane: {epoch: [acquire ok events]}}, {lane: {epoch: max expires}},
    {lane: set of epochs whose release was sent} (a holder killed while
    releasing may never see the answer, yet storage has the release)."""
    grants, ends, released = {}, {}, {}
    for ev in events:
        if ev.get("op") == "release":   # asked: its holder stopped, answered or not
            released.setdefault(ev["w"].split("/")[0], set()).add(ev.get("epoch"))
            continue
        if ev.get("type") != "ok" or ev.get("op") not in ("acquire", "renew"):
            continue
        lane = ev["w"].split("/")[0]
        e = ev.get("epoch")
        if ev["op"] == "acquire":
            grants.setdefault(lane, {}).setdefault(e, []).append(ev)
        if ev.get("expires") is not None:
            d = ends.setdefault(lane, {})
            d[e] = max(d.get(e, 0), ev["expires"])
    return grants, ends, released


def _v(kind, t, lane, text, wid=None):
    return {"kind": kind, "t": t, "lane": lane, "text": text, "write": wid}


def dedupe(violations):
    """One violation per (kind, write): the chain and the real-time order
    may both show the same zombie write."""
    seen, out = set(), []
    for v in violations:
        k = (v["kind"], v["write"]) if v["write"] else id(v)
        if k not in seen:
            seen.add(k)
            out.append(v)
    return out


def _desc(w):
    return "%s key=%s epoch=%s %s%s" % (w["id"], w["key"], w["epoch"], w["type"],
                                         " " + w["code"] if w.get("code") else "")


def check_epochs(grants, lockfiles):
    """epoch-twice: per lane, an epoch granted more than once, or its lock
    file naming another holder. lockfiles: {lane: {epoch: leaderId}}."""
    out = []
    for lane, by_epoch in grants.items():
        for e, evs in by_epoch.items():
            holders = {ev.get("holder") for ev in evs}
            if len(evs) > 1:
                out.append(_v("epoch-twice", evs[1]["t"], lane, "%s: epoch %d granted %d "
                              "times (to %s)" % (lane, e, len(evs), ", ".join(sorted(holders)))))
            stored = lockfiles.get(lane, {}).get(e)
            if stored is not None and stored not in holders:
                out.append(_v("epoch-twice", evs[0]["t"], lane, "%s: epoch %d granted to %s "
                              "but its lock file names %s" % (lane, e, evs[0].get("holder"),
                                                              stored)))
    return out


def check_overlap(grants, ends, released):
    """overlap: per lane, for epochs E < F, F's lease began (storage clock)
    before E's lease ended; for an E whose release was sent only its last
    renewal's Last-Modified counts (the release may have ended it sooner)."""
    out = []
    for lane, by_epoch in grants.items():
        es = sorted(by_epoch)
        for i, f in enumerate(es):
            g = by_epoch[f][0]
            if g.get("expires") is None or g.get("ttl") is None:
                continue
            start_f = g["expires"] - g["ttl"]
            for e in es[:i]:
                end_e = ends.get(lane, {}).get(e)
                if end_e is None:
                    continue
                if e in released.get(lane, set()):
                    end_e -= by_epoch[e][0].get("ttl") or 0
                if start_f < end_e:
                    out.append(_v("overlap", g["t"], lane, "%s: epoch %d began at %d ms (storage "
                                  "clock) before epoch %d's lease ended at %d ms"
                                  % (lane, f, start_f, e, end_e)))
    return out


def _lost_why(w, over, after):
    """Who overwrote a lost write, with the times that say why it counts."""
    if over:
        o = max(over, key=lambda x: x["t_read"])  # the nearest, not an old unknown
        return (" (overwritten by %s, which read the key %.3f s before it was acknowledged "
                "and was granted too late for it to be in flight)"
                % (_desc(o), w["t_done"] - o["t_read"]))
    if after:
        o = after[0]
        return (" (the next write storage kept, %s, read the key %.3f s after it was "
                "acknowledged and did not see it)" % (_desc(o), o["t_read"] - w["t_done"]))
    return " (no write storage kept came after it)"


def chain_of(ws, final_body):
    """The writes storage applied to one key, oldest first, rebuilt from
    the final body's prev links (a link to an unrecorded id ends it)."""
    chain, seen = [], set()
    cur = final_body.get("id") if final_body else None
    while cur is not None and cur in ws and cur not in seen:
        seen.add(cur)
        chain.append(ws[cur])
        cur = ws[cur]["prev"]
    chain.reverse()
    return chain


def check_keys(ws, finals, grants, window):
    """zombie and lost, per key. finals: {(lane, key): final body dict or
    None}; window: seconds a replica may decide on lock knowledge that old.
    Returns (violations, in_flight count)."""
    out, in_flight = [], 0
    granted_at = {}
    for lane, by_epoch in grants.items():
        for e, evs in by_epoch.items():
            granted_at[(lane, e)] = min(ev["t"] for ev in evs)
    for (lane, key), body in sorted(finals.items()):
        mine = {i: w for i, w in ws.items() if w["lane"] == lane and w["key"] == key}
        chain = chain_of(mine, body)
        for p, q in zip(chain, chain[1:]):
            if q["epoch"] < p["epoch"]:
                out.append(_v("zombie", q["t_inv"], lane, "%s %s: %s applied after %s"
                              % (lane, key, _desc(q), _desc(p)), q["id"]))
        in_chain = {w["id"] for w in chain}
        for w in mine.values():
            if w["type"] != "ok" or w["id"] in in_chain:
                continue
            # the chain writes that may have overwritten w without reading
            # it: applied after w was sent, and read the key before w was
            # acknowledged (o's read, not o's write: a delayed w can land
            # between the two)
            after = [o for o in chain if o["t_done"] > w["t_inv"]]
            over = [o for o in after if o["t_read"] < w["t_done"]]
            if any(o["epoch"] > w["epoch"] and w["t_sent"] <=
                   granted_at.get((lane, o["epoch"]), -INF) + window for o in over):
                in_flight += 1
                continue
            out.append(_v("lost", w["t_inv"], lane, "%s %s: acknowledged %s is lost%s"
                          % (lane, key, _desc(w), _lost_why(w, over, after)), w["id"]))
        hc = [{"id": w["id"], "key": key, "epoch": w["epoch"], "replica": "?",
               "t_inv": w["t_inv"], "t_done": w["t_done"], "status": 200 if w["type"] == "ok"
               else 0} for w in mine.values() if w["type"] == "ok"]
        for text in history_check.check_key_order(hc):
            wid = text.split("before it was sent: ", 1)[-1].split(" ", 1)[0]
            out.append(_v("zombie", mine[wid]["t_inv"] if wid in mine else 0.0, lane,
                          "%s: %s" % (lane, text), wid))
    return out, in_flight


def check(events, finals, lockfiles, window):
    """All checks. Returns (violations, stats)."""
    ws = writes_of(events)
    grants, ends, released = grants_of(events)
    keys, in_flight = check_keys(ws, finals, grants, window)
    v = dedupe(check_epochs(grants, lockfiles) + check_overlap(grants, ends, released) + keys)
    stats = {"writes": len(ws),
             "acked": sum(1 for w in ws.values() if w["type"] == "ok"),
             "refused": sum(1 for w in ws.values() if w["type"] == "fail"
                            and w["code"] in ("FencingTokenStale", "FencingTokenUnknown")),
             "lease_lost": sum(1 for w in ws.values() if w["code"] == "LeaseLost"),
             "unknown": sum(1 for w in ws.values() if w["type"] == "unknown"),
             "epochs": sum(len(b) for b in grants.values()),
             "in_flight": in_flight}
    return v, stats


def selftest():
    """Hand-made histories each check must flag, and a clean one it must
    pass; returns the checker's own failures (empty = it works)."""
    def acq(w, e, t, exp, holder=None):
        return {"op": "acquire", "type": "ok", "w": w, "epoch": e, "t": t, "expires": exp,
                "ttl": 300, "holder": holder or w}

    def wr(w, i, key, e, prev, t, typ="ok", took=0.01, read=None):
        evs = [{"op": "read", "type": "invoke", "w": w, "key": key, "t": read}] if read else []
        return evs + [{"op": "write", "type": "invoke", "w": w, "id": i, "key": key, "epoch": e,
                       "prev": prev, "t": t},
                      {"op": "write", "type": typ, "w": w, "id": i, "key": key, "epoch": e,
                       "prev": prev, "t": t + took}]
    base = [acq("L/a", 1, 1.0, 1300), acq("L/b", 2, 5.0, 5300)]
    good = base + wr("L/a", "a1", "k", 1, None, 1.1) + wr("L/b", "b1", "k", 2, "a1", 5.1)
    # a1 leaves before epoch 2 is granted and is slow; b reads the key
    # before a1 lands, is answered, and writes after a1 was acknowledged:
    # in flight, not lost (fencing cannot close it; the README says so)
    slow = base + wr("L/a", "a0", "k", 1, None, 1.1) + \
        wr("L/a", "a1", "k", 1, "a0", 4.9, took=0.4) + \
        wr("L/b", "b1", "k", 2, "a0", 5.4, read=5.1)
    problems = []
    for name, evs, final in (("clean", good, "b1"), ("in-flight", slow, "b1")):
        v, _ = check(evs, {("L", "k"): {"id": final}}, {"L": {1: "L/a", 2: "L/b"}}, 0.2)
        if v:
            problems.append("%s history flagged: %s" % (name, v))
    bad = [
        ("zombie", base + wr("L/a", "a1", "k", 1, None, 1.1) + wr("L/b", "b1", "k", 2, "a1", 5.1)
         + wr("L/a", "a2", "k", 1, "b1", 5.5), "a2"),
        ("lost", base + wr("L/b", "b1", "k", 2, None, 5.1) + wr("L/a", "a1", "k", 1, None, 5.5),
         "b1"),
        # as `slow`, but b reads after a1 was acknowledged and misses it
        ("lost", base + wr("L/a", "a0", "k", 1, None, 1.1) +
         wr("L/a", "a1", "k", 1, "a0", 4.9, took=0.4) +
         wr("L/b", "b1", "k", 2, "a0", 5.4, read=5.35), "b1"),
        ("epoch-twice", base + [acq("L/c", 2, 5.5, 5300)], None),
        ("overlap", [acq("L/a", 1, 1.0, 6000), acq("L/b", 2, 5.0, 5300)], None),
    ]
    for kind, evs, final in bad:
        fin = {("L", "k"): {"id": final}} if final else {}
        v, _ = check(evs, fin, {}, 0.2)
        if not any(x["kind"] == kind for x in v):
            problems.append("%s not detected: %s" % (kind, v))
    return problems
