#!/usr/bin/env python3
"""End-to-end: the operator's status page, /_fence/status, in a real browser.

Starts fencegate on its embedded store (authentication off, the default
event-loop workers), takes a lock through the lock API with a hostile
holder name, makes a forwarded write (it reaches storage) and a refused
one under a hostile key (it does not), then loads the page in headless
Debian chromium: the rendered DOM shows the lock, its epoch and holder
(as text: no element came from the holder or the key, the page title is
intact), the refused write with its reason and epochs; a screenshot is
saved. The JSON form (?format=json and Accept: application/json, asked
several times so that every worker answers) agrees with the DOM. With
authentication on, the page needs a signed request from a client with
"admin" on "/". In HTTP mode the page shows the request path. If chromium
is missing the browser checks fail.

Set STATUS_SCREENSHOT=FILE.png to keep the screenshot (docs/status-page.png
was made that way)."""
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Fencegate, Runner  # noqa: E402

BUCKET = "statuspage"
HOSTILE_HOLDER = '<script>document.title="pwned"</script><img src=x>&amp;"\''
HOSTILE_KEY = "<script>document.title='pwned'</script>.txt"
ADMIN = ("AKIDSTATUSADMIN1", "status-admin-secret-1")
WRITER = ("AKIDSTATUSWRITE1", "status-writer-secret-1")
BUCKET_ADMIN = ("AKIDSTATUSBADM01", "status-badmin-secret-1")


def request(url, method="GET", body=None, headers=None):
    """(status, headers, body) of one request; HTTP errors are answers."""
    import urllib.error
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def quote(key):
    return urllib.request.quote(key, safe="")


class Dom(html.parser.HTMLParser):
    """The rendered DOM as chromium dumps it: every element's tag, attributes
    and text content, and the text of cells by class inside rows by class."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = []          # (tag, attrs)
        self.rows = []          # (row attrs, {cell class: text})
        self.title = ""
        self._row = None
        self._cell = None
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "tr":
            self._row = (a, {})
            self.rows.append(self._row)
        elif tag == "td" and self._row is not None:
            self._cell = (a.get("class") or "").split()[0] if a.get("class") else ""
            self._row[1][self._cell] = ""
        elif tag == "title" and not self.title:
            self._in_title = True

    def handle_endtag(self, tag):
        if tag == "td":
            self._cell = None
        elif tag == "tr":
            self._row = None
        elif tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        if self._row is not None and self._cell is not None:
            self._row[1][self._cell] += data

    def rows_of(self, cls):
        return [cells for attrs, cells in self.rows if cls in (attrs.get("class") or "").split()]


def chromium(*args, timeout=90):
    exe = shutil.which("chromium")
    assert exe, "chromium is not installed (deploy/install-deps.sh test installs it)"
    profile = tempfile.mkdtemp(prefix="fencegate-chromium-")
    try:
        r = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu",
                            "--disable-background-networking", "--disable-component-update",
                            "--disable-sync", "--no-first-run", "--user-data-dir=" + profile]
                           + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert r.returncode == 0, "chromium failed: %s" % r.stderr.decode(errors="replace")[-2000:]
    return r.stdout.decode("utf-8")


def setup(g):
    """Bucket, lock (epoch 2, the hostile holder), one forwarded write and one
    refused write. Returns the epoch."""
    assert request(g.url + "/" + BUCKET, "PUT")[0] == 200
    st, _, body = request(g.url + "/_fence/locks/%s/acquire" % BUCKET, "POST",
                          json.dumps({"holder": "first", "ttlMs": 600000}).encode())
    assert st == 200, body
    first = json.loads(body)["epoch"]
    st, _, body = request(g.url + "/_fence/locks/%s/release" % BUCKET, "POST",
                          json.dumps({"epoch": first}).encode())
    assert st == 200, body
    st, _, body = request(g.url + "/_fence/locks/%s/acquire" % BUCKET, "POST",
                          json.dumps({"holder": HOSTILE_HOLDER, "ttlMs": 600000}).encode())
    assert st == 200, body
    epoch = json.loads(body)["epoch"]
    assert epoch == first + 1
    ct = {"Content-Type": "application/octet-stream"}
    st, _, body = request(g.url + "/%s/good.txt" % BUCKET, "PUT", b"forwarded",
                          dict(ct, **{"X-Fencing-Token": str(epoch)}))
    assert st == 200, body
    st, _, body = request(g.url + "/%s/%s" % (BUCKET, quote(HOSTILE_KEY)), "PUT", b"stale",
                          dict(ct, **{"X-Fencing-Token": str(first)}))
    assert st == 409 and b"FencingTokenStale" in body, (st, body)
    # what storage holds: the forwarded write, not the refused one
    assert request(g.url + "/%s/good.txt" % BUCKET)[2] == b"forwarded"
    assert request(g.url + "/%s/%s" % (BUCKET, quote(HOSTILE_KEY)))[0] == 404
    return epoch, first


def t_browser(g, state):
    dom_text = chromium("--dump-dom", g.url + "/_fence/status")
    d = Dom()
    d.feed(dom_text)
    # the holder and the key were shown as text: they made no element and
    # ran nothing (the title would say "pwned")
    assert d.title == "fencegate status", d.title
    assert not [t for t, _ in d.tags if t in ("script", "img", "iframe")], \
        [t for t, _ in d.tags if t in ("script", "img", "iframe")]
    assert any(t == "meta" and a.get("http-equiv") == "refresh" for t, a in d.tags)
    locks = [cells for attrs, cells in d.rows if attrs.get("data-lock") == BUCKET]
    assert len(locks) == 1, d.rows
    row = locks[0]
    assert row["epoch"].strip() == str(state["epoch"]), row
    assert row["state"].strip().startswith("held"), row
    assert row["holder"] == HOSTILE_HOLDER, row
    assert row["forwarded"].strip() == "1", row
    assert "FencingTokenStale 1" in row["refused"], row
    assert "s" in row["lease"] and "—" not in row["lease"], row  # a lease left
    refused = d.rows_of("refusal")
    assert len(refused) == 1, refused
    r = refused[0]
    assert r["reason"].strip() == "FencingTokenStale", r
    assert r["presented"].strip() == str(state["first"]), r
    assert r["current"].strip() == str(state["epoch"]), r
    assert r["request"] == "PUT /%s/%s" % (BUCKET, HOSTILE_KEY), r
    assert r["lock"] == BUCKET, r
    assert g.data not in dom_text  # no server path
    state["dom_lock"] = row
    state["dom_refusal"] = r
    # the chart has one forwarded and one refused bar
    assert any(t == "rect" and a.get("class") == "fwd" for t, a in d.tags)
    assert any(t == "rect" and a.get("class") == "ref" for t, a in d.tags)
    # and the lock's own line of the last minutes
    assert "2 writes" in row["spark"] or "1 writes" in row["spark"], row
    assert sum(1 for t, _ in d.tags if t == "polyline") == 2


def t_screenshot(g, state):
    out = os.environ.get("STATUS_SCREENSHOT") or os.path.join(g.dir.path, "status.png")
    if os.path.exists(out):
        os.unlink(out)
    chromium("--screenshot=" + out, "--window-size=1280,900", g.url + "/_fence/status")
    with open(out, "rb") as f:
        png = f.read()
    assert png[:8] == b"\x89PNG\r\n\x1a\n", png[:8]
    assert len(png) > 20000, len(png)  # a page, not a blank
    print("     screenshot: %s (%d bytes)" % (out, len(png)))


def check_json(doc, state):
    lock = [x for x in doc["locks"] if x["lock"] == BUCKET]
    assert len(lock) == 1, doc["locks"]
    lock = lock[0]
    assert lock["epoch"] == state["epoch"] and lock["state"] == "held", lock
    assert lock["holder"] == HOSTILE_HOLDER, lock
    assert 0 < lock["leaseLeftMs"] <= 600000, lock
    assert lock["lastLoadedAt"] is None or lock["lastLoadedAt"] <= doc["time"], lock
    assert lock["forwarded"] == 1 and lock["refused"] == 1, lock
    assert lock["refusedByReason"] == {"FencingTokenStale": 1}, lock
    assert sum(lock["series"]["forwarded"]) == 1 and sum(lock["series"]["refused"]) == 1, lock
    assert doc["writes"]["forwarded"] == 1 and doc["writes"]["refused"] == 1, doc["writes"]
    assert len(doc["refusedWrites"]) == 1, doc["refusedWrites"]
    r = doc["refusedWrites"][0]
    assert r["lock"] == BUCKET and r["reason"] == "FencingTokenStale", r
    assert r["presentedEpoch"] == state["first"] and r["currentEpoch"] == state["epoch"], r
    assert r["resource"] == "/%s/%s" % (BUCKET, HOSTILE_KEY) and r["method"] == "PUT", r
    assert r["client"].startswith("127.0.0.1:"), r  # no authentication: the peer
    assert doc["storage"]["selfTest"] == "passed", doc["storage"]
    assert doc["storage"]["mode"] == "local directory", doc["storage"]
    assert sum(doc["series"]["forwarded"]) == 1 and sum(doc["series"]["refused"]) == 1
    assert len(doc["series"]["forwarded"]) == 60
    p = doc["process"]
    assert p["workers"] >= 1 and p["residentBytes"] > 0 and p["connectionsOpen"] >= 1, p
    # the same state the browser showed
    assert str(lock["epoch"]) == state["dom_lock"]["epoch"].strip()
    assert lock["holder"] == state["dom_lock"]["holder"]
    assert r["reason"] == state["dom_refusal"]["reason"].strip()


def t_json(g, state):
    for i in range(6):  # new connections: several workers answer
        if i % 2:
            st, h, body = request(g.url + "/_fence/status?format=json")
        else:
            st, h, body = request(g.url + "/_fence/status", headers={"Accept": "application/json"})
        assert st == 200 and h["Content-Type"] == "application/json", (st, dict(h))
        assert g.data.encode() not in body
        check_json(json.loads(body), state)
    st, h, body = request(g.url + "/_fence/status")  # no Accept: HTML
    assert st == 200 and h["Content-Type"].startswith("text/html"), dict(h)
    assert "script-src" not in h["Content-Security-Policy"]
    assert h["Content-Security-Policy"].startswith("default-src 'none'"), dict(h)
    st, _, _ = request(g.url + "/_fence/status", "POST", b"{}")
    assert st == 405, st


def signed(g, creds, path):
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method="GET", url=g.url + path, data=b"")
    S3SigV4Auth(Credentials(*creds), "s3", "us-east-1").add_auth(req)
    return request(g.url + path, headers=dict(req.headers.items()))


def t_auth(_g, _state):
    cfg = {
        "unrouted_writes": "bucket_lock",
        "clients": [
            {"access_key": ADMIN[0], "secret_env": "ST_ADMIN_SECRET",
             "allow": [{"prefix": "/", "actions": ["read", "admin"]}]},
            {"access_key": WRITER[0], "secret_env": "ST_WRITER_SECRET",
             "allow": [{"prefix": "/", "actions": ["read", "write", "lock"]}]},
            {"access_key": BUCKET_ADMIN[0], "secret_env": "ST_BADMIN_SECRET",
             "allow": [{"prefix": "/%s/" % BUCKET, "actions": ["read", "write", "admin"]}]},
        ],
    }
    env = dict(os.environ, ST_ADMIN_SECRET=ADMIN[1], ST_WRITER_SECRET=WRITER[1],
               ST_BADMIN_SECRET=BUCKET_ADMIN[1])
    g = Fencegate(config=cfg, env=env)
    try:
        st, _, body = request(g.url + "/_fence/status")
        assert st == 403 and b"AccessDenied" in body, (st, body)
        st, _, body = signed(g, WRITER, "/_fence/status")
        assert st == 403 and b"admin" in body, (st, body)
        st, _, body = signed(g, BUCKET_ADMIN, "/_fence/status")
        assert st == 403, (st, body)  # admin on one bucket is not the whole page
        st, h, body = signed(g, ADMIN, "/_fence/status?format=json")
        assert st == 200 and h["Content-Type"] == "application/json", (st, body)
        doc = json.loads(body)
        for secret in (ADMIN[1], WRITER[1], BUCKET_ADMIN[1]):
            assert secret.encode() not in body
        assert g.data.encode() not in body and doc["storage"]["selfTest"] == "passed"
        st, h, body = signed(g, ADMIN, "/_fence/status")
        assert st == 200 and b"<h1>fencegate status</h1>" in body, st
        assert request(g.url + "/_fence/metrics")[0] == 200  # metrics stay open
    finally:
        g.close()


def t_http_mode(_g, _state):
    """HTTP mode (any HTTP API downstream): a forwarded write reaches the
    downstream, a write without a token does not; the page lists the lock
    and the refusal with the request path."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_httpmode import Recorder
    rec = Recorder()
    store = tempfile.mkdtemp(prefix="fencegate-status-locks-")
    g = None
    try:
        g = Fencegate("--mode", "http", "--upstream", rec.url, "--lock-store",
                      "file://" + store, data=False)
        st, _, body = request(g.url + "/_fence/locks/jobs/acquire", "POST",
                              json.dumps({"holder": "scheduler-1"}).encode())
        assert st == 200, body
        epoch = json.loads(body)["epoch"]
        st, _, _ = request(g.url + "/api/run/1", "PUT", b"x",
                           {"X-Fencing-Lock": "jobs", "X-Fencing-Token": str(epoch)})
        assert st == 200 and rec.wait_seen("/api/run/1"), st
        st, _, body = request(g.url + "/api/run/2", "PUT", b"x", {"X-Fencing-Lock": "jobs"})
        assert st == 428 and b"FencingTokenMissing" in body, (st, body)
        assert not rec.seen("/api/run/2")
        st, _, body = request(g.url + "/_fence/status?format=json")
        assert st == 200, st
        doc = json.loads(body)
        lock = [x for x in doc["locks"] if x["lock"] == "jobs"][0]
        assert lock["epoch"] == epoch and lock["holder"] == "scheduler-1", lock
        assert lock["forwarded"] == 1 and lock["refusedByReason"] == {"FencingTokenMissing": 1}
        r = doc["refusedWrites"][0]
        assert r["resource"] == "/api/run/2" and r["presentedEpoch"] is None, r
        assert r["currentEpoch"] == epoch, r
        assert store.encode() not in body  # the lock store's path is not shown
    finally:
        if g:
            g.close()
        rec.close()
        shutil.rmtree(store, ignore_errors=True)


def main():
    runner = Runner("test_status_page")
    g = Fencegate()
    state = {}
    try:
        runner.check("a lock, a forwarded and a refused write", lambda: state.update(
            zip(("epoch", "first"), setup(g))))
        runner.check("chromium renders locks, holder, refusal (escaped)", t_browser, g, state)
        runner.check("chromium screenshot", t_screenshot, g, state)
        runner.check("the JSON form agrees with the page", t_json, g, state)
        runner.check("with authentication: admin on / and a signature", t_auth, g, state)
        runner.check("HTTP mode: the lock and the refused path", t_http_mode, g, state)
    finally:
        g.close()
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
