#!/usr/bin/env python3
"""HTTP mode: routes match what the downstream sees. A state-changing request
whose raw path a downstream could read as another path ("//", ";params",
"." / ".." segments, also as %2e, %2F, "\\" or %5C) is refused 400 before any
route is matched, and a write whose path matches a route only when case is
ignored is refused 400 when unrouted writes are not rejected. Asserted on
what a recording downstream received: nothing, for each hostile form; and
normal paths (dots inside a name, reads of any form) still pass. Prints
'N passed, N failed'."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from test_httpmode import Gate, Recorder  # noqa: E402

HOSTILE = [
    "//ledger/x", "/ledger//x", "/ledger/x//", "/ledger;v=1/x", "/ledger/x;jsessionid=1",
    "/ledger%3bx/y", "/ledger%3B/x", "/ledger/./x", "/ledger/../ledger/x", "/ledger/x/.",
    "/ledger/x/..", "/x/%2e%2e/ledger/x", "/x/%2E%2E/ledger/x", "/ledger/%2e/x",
    "/ledger/.%2E/x", "/ledger%2Fx", "/ledger%2fx", "/x/..%2fledger/x", "/ledger\\x",
    "/ledger/%5cx", "/ledger/%5C../x",
]
# routed only if case is ignored: /ledger/ (with unrouted writes allowed this
# would go unfenced), and /api/ledger/ (matched as /api/: the wrong lock)
CASE_FOLDED = ["/Ledger/x", "/LEDGER/x", "/lEdGeR/", "/api/LEDGER/x", "/api/Ledger"]
NORMAL = ["/ledger/x", "/ledger/.hidden", "/ledger/..x", "/ledger/a.b/c..", "/ledger/%2ex",
          "/ledger/a%20b", "/ledger/x%25"]


def post(g, path, lock, token):
    return g.write(path, lock, token, b"body", method="POST")


def refused_unseen(g, rec, path, lock, token, status=400, code="InvalidURI"):
    n = len(rec.requests)
    st, _, data = post(g, path, lock, token)
    assert st == status, (path, st, data)
    doc = json.loads(data)
    assert doc["error"] == code and doc["message"], (path, doc)
    assert len(rec.requests) == n, (path, "reached the downstream", rec.requests[n:])
    return doc["message"]


def test_no_config(env):
    """Without a config (lock from X-Fencing-Lock) the same forms are refused."""
    g, rec = env
    e = g.acquire("ledger")
    for path in HOSTILE:
        refused_unseen(g, rec, path, "ledger", e)
    for path in NORMAL:
        st, _, data = post(g, path, "ledger", e)
        assert st == 200, (path, st, data)
        got = rec.seen(path)
        assert len(got) == 1 and got[0]["headers"]["x-fencing-token"] == str(e), (path, got)
    # reads are not refused, whatever their form (not "//r": Python's
    # http.server, the downstream here, merges a leading "//" itself)
    for path in ("/ledger//r", "/ledger/r;x=1", "/ledger/%2e%2e/r"):
        st, _, _ = g.request("GET", path)
        assert st == 200 and len(rec.seen(path)) == 1, (path, st)


def config_gate(rec, tmp, unrouted):
    cfg = {"mode": "http", "upstream": {"endpoint": rec.url},
           "lock_store": "file://" + tmp.path, "unrouted_writes": unrouted,
           "locks": [{"name": "ledger"}, {"name": "api"}, {"name": "apiledger"}],
           "routes": [{"prefix": "/ledger/", "lock": "ledger"},
                      {"prefix": "/api/", "lock": "api"},
                      {"prefix": "/api/ledger", "lock": "apiledger"}]}
    g = harness.Fencegate("--access-log", "off", config=cfg, data=False)
    gate = Gate.__new__(Gate)
    gate.port = g.port
    return g, gate


def test_routes(unrouted):
    rec, tmp, fg = Recorder(), harness.TempDir(), None
    try:
        fg, g = config_gate(rec, tmp, unrouted)
        e = g.acquire("ledger")
        ea = g.acquire("api")
        for path in HOSTILE:
            refused_unseen(g, rec, path, None, e)
        for path in CASE_FOLDED:
            if path.lower().startswith("/api/"):
                msg = refused_unseen(g, rec, path, None, ea)
            elif unrouted == "reject":
                # no route matches: refused as every unrouted write is
                msg = refused_unseen(g, rec, path, None, e, 403, "AccessDenied")
                continue
            else:
                msg = refused_unseen(g, rec, path, None, e)
            assert "case" in msg, (path, msg)
        for path in NORMAL:
            st, _, data = post(g, path, None, e)
            assert st == 200, (path, st, data)
            got = rec.seen(path)
            assert len(got) == 1 and got[0]["headers"]["x-fencing-lock"] == "ledger", (path, got)
        # /api/x is the api lock's, /api/ledger/x the apiledger lock's
        st, _, data = post(g, "/api/x", None, ea)
        assert st == 200 and rec.seen("/api/x")[0]["headers"]["x-fencing-lock"] == "api"
        # a path no route matches in any case: unrouted_writes decides
        st, _, data = post(g, "/other/x", None, None)
        if unrouted == "allow":
            assert st == 200, (st, data)
            got = rec.seen("/other/x")
            assert len(got) == 1 and "x-fencing-token" not in got[0]["headers"], got
        else:
            assert st == 403 and rec.seen("/other/x") == [], (st, data)
        # reads pass in any case
        st, _, _ = g.request("GET", "/LEDGER/r")
        assert st == 200 and len(rec.seen("/LEDGER/r")) == 1
        assert fg.alive()
    finally:
        if fg:
            fg.close()
        rec.close()
        tmp.close()


def main():
    r = harness.Runner("e2e httpmode paths")
    rec, tmp = Recorder(), harness.TempDir()
    g = None
    try:
        g = Gate("--mode", "http", "--upstream", rec.url, "--lock-store", "file://" + tmp.path)
        r.check("no config: ambiguous paths refused, normal ones forwarded", test_no_config,
                (g, rec))
    finally:
        if g:
            g.close()
        rec.close()
        tmp.close()
    r.check("routes, unrouted_writes allow: ambiguous and case-folded paths refused",
            test_routes, "allow")
    r.check("routes, unrouted_writes reject: the same", test_routes, "reject")
    r.finish()
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
