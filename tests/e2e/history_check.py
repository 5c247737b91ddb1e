"""Checker for histories of fenced writes recorded by tests/e2e/test_concurrency.py.

Pure functions over plain records (no I/O, no clock): given every write that
was attempted, the lock events the driver caused and the final object state
read straight from the upstream, it returns the list of violations of the
fencing contract (DESIGN.md, "Fencing on the proxy"). It does not judge
liveness or speed, and it does not decide which replica *should* have known
an epoch it could only learn by refreshing. selftest() feeds it hand-made bad
histories that must be detected, so a checker that cannot fail is caught.

Records (dicts):
  write   id ("w<writer>-<seq>"), key, epoch, replica ("A"/"B"), t_inv,
          t_done (time.monotonic() before sending / after the answer),
          status (HTTP status, 0 = no answer), code (error code from the
          body or None), fence_epoch (X-Fencing-Epoch header or None)
  lock    kind ("create" = a new epoch file exists once t_done passed,
          "release"), epoch, via ("A"/"B" = that replica's lock API,
          "direct" = lock file written to the upstream), t_inv, t_done
  final   {key: None (no object) or {"body": bytes, "meta_epoch": str|None}}
"""
import json

STALE_CODES = ("FencingTokenStale", "FencingTokenUnknown")


def acked(w):
    return 200 <= w["status"] < 300


def _describe(w):
    return ("%s key=%s epoch=%d via %s status=%d%s [%.3f..%.3f]"
            % (w["id"], w["key"], w["epoch"], w["replica"], w["status"],
               " " + w["code"] if w.get("code") else "", w["t_inv"], w["t_done"]))


def check_statuses(writes):
    """Rule 3a: every answer is 2xx, a 409 naming a fencing code and carrying
    a numeric X-Fencing-Epoch, or 503 SlowDown. No answer at all (status 0),
    other 5xx and other 4xx are violations: their effect on the object is
    unknown, or the proxy refused a well-formed fenced write for no reason."""
    out = []
    for w in writes:
        s = w["status"]
        if acked(w):
            continue
        if s == 409:
            fe = w.get("fence_epoch")
            if fe is None or not str(fe).isdigit():
                out.append("409 without a numeric X-Fencing-Epoch (got %r): %s"
                           % (fe, _describe(w)))
            if w.get("code") not in STALE_CODES:
                out.append("409 with code %r, want one of %s: %s"
                           % (w.get("code"), "/".join(STALE_CODES), _describe(w)))
        elif s == 503 and w.get("code") == "SlowDown":
            continue
        else:
            out.append("unexpected answer: %s" % _describe(w))
    return out


def check_key_order(writes):
    """Rule 1: on one key, once a write with epoch E was acknowledged, no write
    with a lower epoch invoked after that acknowledgement may be acknowledged.
    Precisely: for acknowledged writes w, v on the same key with
    v.epoch > w.epoch, a violation is w.t_inv > v.t_done."""
    out = []
    by_key = {}
    for w in writes:
        if acked(w):
            by_key.setdefault(w["key"], []).append(w)
    for key in sorted(by_key):
        ws = by_key[key]
        for w in ws:
            worst = None
            for v in ws:
                if v["epoch"] > w["epoch"] and v["t_done"] < w["t_inv"]:
                    if worst is None or v["epoch"] > worst["epoch"]:
                        worst = v
            if worst is not None:
                out.append("key %s: epoch %d acknowledged although epoch %d was "
                           "acknowledged before it was sent: %s after %s"
                           % (key, w["epoch"], worst["epoch"], _describe(w),
                              _describe(worst)))
    return out


def _body_id(body):
    try:
        doc = json.loads(body.decode("utf-8"))
        return "w%d-%d" % (doc["writer"], doc["seq"]), doc
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None, None


def check_final(writes, final):
    """Rule 2 and 3b, per key, with A = the acknowledged writes on the key and
    E = max epoch over A:
      - A empty: the object must not exist unless a write with no definite
        answer could explain it (never a rejected one);
      - otherwise the object's body must be exactly the body of a write f in
        A with f.epoch == E, its x-amz-meta-fencing-epoch must equal E, and f
        must be last in real time: no other g in A with g.t_inv > f.t_done
        (such a g was applied after f, and nothing below E can follow it);
      - it must never be a rejected (4xx) write's body."""
    out = []
    by_id = {w["id"]: w for w in writes}
    keys = set(final) | {w["key"] for w in writes}
    for key in sorted(keys):
        obj = final.get(key)
        acked_k = [w for w in writes if w["key"] == key and acked(w)]
        if obj is None:
            if acked_k:
                out.append("key %s: no object although %d writes were acknowledged"
                           % (key, len(acked_k)))
            continue
        bid, doc = _body_id(obj["body"])
        f = by_id.get(bid) if bid else None
        if f is None or f["key"] != key:
            out.append("key %s: final body %r is no write recorded for this key"
                       % (key, obj["body"][:200]))
            continue
        if doc.get("epoch") != f["epoch"]:
            out.append("key %s: final body %s names epoch %r, the write sent %d"
                       % (key, bid, doc.get("epoch"), f["epoch"]))
        if 400 <= f["status"] < 500:
            out.append("key %s: final state is a REJECTED write: %s" % (key, _describe(f)))
            continue
        if not acked(f):
            out.append("key %s: final state is a write without acknowledgement: %s"
                       % (key, _describe(f)))
            continue
        top = max(w["epoch"] for w in acked_k)
        if f["epoch"] != top:
            out.append("key %s: final state has epoch %d but epoch %d was acknowledged "
                       "on it: %s" % (key, f["epoch"], top, _describe(f)))
        meta = obj.get("meta_epoch")
        if meta != str(f["epoch"]):
            out.append("key %s: x-amz-meta-fencing-epoch is %r, final write %s has "
                       "epoch %d" % (key, meta, f["id"], f["epoch"]))
        later = [g for g in acked_k if g is not f and g["t_inv"] > f["t_done"]]
        if later:
            g = max(later, key=lambda x: x["t_inv"])
            out.append("key %s: final state %s although %s was sent after it was "
                       "acknowledged" % (key, _describe(f), _describe(g)))
    return out


def check_epochs_exist(writes, locks):
    """Rule 4: an acknowledged write's epoch had a lock file: its creation was
    at least started before the write was acknowledged (else the proxy should
    have answered 409 FencingTokenUnknown)."""
    out = []
    start = {}
    for ev in locks:
        if ev["kind"] == "create":
            start[ev["epoch"]] = min(start.get(ev["epoch"], ev["t_inv"]), ev["t_inv"])
    for w in writes:
        if acked(w) and not (w["epoch"] in start and start[w["epoch"]] < w["t_done"]):
            out.append("write acknowledged under epoch %d whose lock file did not "
                       "exist yet: %s" % (w["epoch"], _describe(w)))
    return out


def check_replica_knowledge(writes, locks):
    """Rule 5, per replica R, across keys. R's high-water mark C only goes up,
    and R knows at least: epoch N after it acknowledged a write under N, and
    after it served the acquisition of N; that N is released after it served
    the release of N. A write through R invoked after R knew so must be
    refused when its epoch is below C (or is released)."""
    out = []
    facts = []  # (t, replica, min_epoch, released_epoch or None, what)
    for w in writes:
        if acked(w):
            facts.append((w["t_done"], w["replica"], w["epoch"], None, w["id"]))
    for ev in locks:
        if ev["via"] in ("A", "B"):
            if ev["kind"] == "create":
                facts.append((ev["t_done"], ev["via"], ev["epoch"], None,
                              "acquire of epoch %d" % ev["epoch"]))
            elif ev["kind"] == "release":
                facts.append((ev["t_done"], ev["via"], ev["epoch"], ev["epoch"],
                              "release of epoch %d" % ev["epoch"]))
    for w in writes:
        if not acked(w):
            continue
        for t, rep, floor, released, what in facts:
            if rep != w["replica"] or t >= w["t_inv"]:
                continue
            if w["epoch"] < floor:
                out.append("replica %s acknowledged epoch %d after it knew epoch %d "
                           "(%s): %s" % (rep, w["epoch"], floor, what, _describe(w)))
                break
            if released is not None and w["epoch"] == released:
                out.append("replica %s acknowledged epoch %d after it served its "
                           "release: %s" % (rep, w["epoch"], _describe(w)))
                break
    return out


def check_history(writes, locks, final):
    """All rules; returns the list of violations (empty = the history is fenced)."""
    return (check_statuses(writes) + check_key_order(writes) + check_final(writes, final)
            + check_epochs_exist(writes, locks) + check_replica_knowledge(writes, locks))


# ---- self-test -------------------------------------------------------------

def _w(wid, key, epoch, t_inv, t_done, status=200, replica="A", code=None, fe=None):
    writer, seq = wid
    return {"id": "w%d-%d" % (writer, seq), "key": key, "epoch": epoch,
            "replica": replica, "t_inv": t_inv, "t_done": t_done, "status": status,
            "code": code, "fence_epoch": fe}


def _body(writer, seq, epoch):
    return json.dumps({"writer": writer, "epoch": epoch, "seq": seq}).encode()


def selftest():
    """Runs the checker on a good history (must pass) and on bad ones (each
    must be caught by the named rule). Returns a list of failures of the
    checker itself; empty means it works."""
    problems = []
    locks = [{"kind": "create", "epoch": 1, "via": "A", "t_inv": 0.0, "t_done": 0.1},
             {"kind": "release", "epoch": 1, "via": "A", "t_inv": 1.9, "t_done": 1.95},
             {"kind": "create", "epoch": 2, "via": "direct", "t_inv": 2.0, "t_done": 2.1}]
    good = [_w((0, 1), "k", 1, 1.0, 1.1),
            _w((1, 1), "k", 2, 2.2, 2.3, replica="B"),
            _w((2, 1), "k", 1, 2.4, 2.5, status=409, code="FencingTokenStale", fe="2"),
            # concurrent with an epoch-2 write and acknowledged: allowed
            _w((3, 1), "k", 1, 2.25, 2.32, replica="B"),
            _w((1, 2), "k", 2, 2.6, 2.7, replica="B"),
            _w((4, 1), "j", 2, 2.6, 2.8, status=503, code="SlowDown")]
    good_final = {"k": {"body": _body(1, 2, 2), "meta_epoch": "2"}, "j": None}
    v = check_history(good, locks, good_final)
    if v:
        problems.append("good history flagged: %s" % v)

    def expect(label, writes, final, rule, want):
        if rule is check_final:
            got = rule(writes, final)
        elif rule in (check_epochs_exist, check_replica_knowledge):
            got = rule(writes, locks)
        else:
            got = rule(writes)
        if not any(want in g for g in got):
            problems.append("%s not detected (wanted %r, got %r)" % (label, want, got))
        if not check_history(writes, locks, final):
            problems.append("%s passes check_history" % label)

    # Lower epoch acknowledged after a higher one was acknowledged on the key.
    bad1 = [_w((0, 1), "k", 2, 2.2, 2.3), _w((1, 1), "k", 1, 2.4, 2.5, replica="B")]
    expect("late low-epoch ack", bad1, {"k": {"body": _body(0, 1, 2), "meta_epoch": "2"}},
           check_key_order, "epoch 1 acknowledged although epoch 2")
    # Final state is the lower epoch's body (overwrite by a zombie).
    bad2 = [_w((0, 1), "k", 2, 2.2, 2.3), _w((1, 1), "k", 1, 2.25, 2.31, replica="B")]
    expect("final state from a lower epoch", bad2,
           {"k": {"body": _body(1, 1, 1), "meta_epoch": "1"}},
           check_final, "final state has epoch 1 but epoch 2")
    # Final state is a rejected write.
    bad3 = [_w((0, 1), "k", 2, 2.2, 2.3),
            _w((1, 1), "k", 1, 2.4, 2.5, status=409, code="FencingTokenStale", fe="2")]
    expect("rejected write landed", bad3, {"k": {"body": _body(1, 1, 1), "meta_epoch": "1"}},
           check_final, "REJECTED")
    # Right body, wrong epoch metadata.
    bad4 = [_w((0, 1), "k", 2, 2.2, 2.3)]
    expect("epoch metadata mismatch", bad4, {"k": {"body": _body(0, 1, 2), "meta_epoch": "1"}},
           check_final, "x-amz-meta-fencing-epoch")
    # An earlier same-epoch write is the final state, a later one was lost.
    bad5 = [_w((0, 1), "k", 2, 2.2, 2.3), _w((0, 2), "k", 2, 2.4, 2.5)]
    expect("lost later write", bad5, {"k": {"body": _body(0, 1, 2), "meta_epoch": "2"}},
           check_final, "was sent after it was acknowledged")
    # 409 without X-Fencing-Epoch, and a 500.
    bad6 = [_w((0, 1), "k", 1, 1.0, 1.1, status=409, code="FencingTokenStale"),
            _w((0, 2), "k", 1, 1.2, 1.3, status=500, code="InternalError")]
    expect("409 without epoch header", bad6, {}, check_statuses, "X-Fencing-Epoch")
    expect("500 answer", bad6, {}, check_statuses, "unexpected answer")
    # Acknowledged under an epoch that had no lock file.
    bad7 = [_w((0, 1), "k", 3, 2.2, 2.3)]
    expect("unknown epoch acked", bad7, {"k": {"body": _body(0, 1, 3), "meta_epoch": "3"}},
           check_epochs_exist, "did not exist yet")
    # Replica acknowledged an epoch it had served the release of.
    bad8 = [_w((0, 1), "k", 1, 1.96, 1.99, replica="A")]
    expect("released epoch acked by its replica", bad8,
           {"k": {"body": _body(0, 1, 1), "meta_epoch": "1"}},
           check_replica_knowledge, "after it served its release")
    # Replica went back below an epoch it had acknowledged on another key.
    bad9 = [_w((0, 1), "j", 2, 2.2, 2.3, replica="B"), _w((0, 2), "k", 1, 2.4, 2.5, replica="B")]
    expect("replica high-water went down", bad9,
           {"j": {"body": _body(0, 1, 2), "meta_epoch": "2"},
            "k": {"body": _body(0, 2, 1), "meta_epoch": "1"}},
           check_replica_knowledge, "after it knew epoch 2")
    return problems


if __name__ == "__main__":
    p = selftest()
    print("\n".join(p) if p else "history_check self-test ok")
