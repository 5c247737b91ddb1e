#!/usr/bin/env python3
"""End-to-end concurrency test of fencing across two fencegate replicas.

Starts a real moto_server and two fencegate replicas (A, B) in front of one
bucket. A driver thread keeps taking the next epoch of the bucket's lock,
through A's or B's lock API or by writing lock files straight to moto, so one
replica often learns of an epoch only by refreshing or verifying; six writer
threads (leaders on the newest epoch, zombies lagging behind, one that runs
ahead) hammer four keys through a random replica for a bounded time. Every
write and lock event is recorded with monotonic invocation/completion times,
then history_check.py judges the history and the final objects read straight
from moto. It does not measure speed and does not test multipart or deletes.
Seeded (CONCURRENCY_SEED); every process is stopped by its PID; prints
'N passed, N failed'."""
import hashlib
import http.client
import json
import os
import random
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import history_check  # noqa: E402

BUCKET = "fence-concurrency"
RAW_BUCKET = "fence-concurrency-raw"   # the unfenced control run's bucket
KEYS = ["data/k0", "data/k1", "data/k2", "data/k3"]
WRITERS = ["leader", "leader", "leader", "zombie", "zombie", "ahead"]
MAX_WRITES = int(os.environ.get("CONCURRENCY_WRITES", "400"))
MAX_SECONDS = float(os.environ.get("CONCURRENCY_SECONDS", "15"))
SEED = int(os.environ.get("CONCURRENCY_SEED", "20240611"))
EPOCH_PERIOD_S = 0.2           # mean time between epoch changes
LEASE_MS = 60000               # leases never lapse during the run
HTTP_TIMEOUT_S = 20.0


class Gate:
    """A fencegate replica on a free loopback port, fronting moto."""

    def __init__(self, name, upstream):
        self.name = name
        self.port = harness.free_port()
        self.errlog = open(os.devnull, "wb") if not os.environ.get("FENCE_DEBUG") else None
        env = dict(os.environ, **harness.CREDS)
        self.proc = subprocess.Popen(
            [os.path.join(harness.BIN, "fencegate"), "--listen", "127.0.0.1:%d" % self.port,
             "--upstream", upstream], stderr=self.errlog, env=env)
        harness.wait_port(self.port, self.proc)

    def alive(self):
        return self.proc.poll() is None

    def close(self):
        rc = harness.stop(self.proc)
        if self.errlog:
            self.errlog.close()
        return rc


# ---- requests --------------------------------------------------------------

def signed_headers(method, port, path, body, extra):
    """SigV4 headers for a request to 127.0.0.1:port (the proxy re-signs for
    upstream; signing here keeps the client an ordinary S3 client)."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method=method, url="http://127.0.0.1:%d%s" % (port, path),
                     data=body, headers=dict(extra))
    req.headers["X-Amz-Content-SHA256"] = hashlib.sha256(body).hexdigest()
    S3SigV4Auth(Credentials("test", "test"), "s3", "us-east-1").add_auth(req)
    return dict(req.headers.items())


class Conn:
    """One keep-alive connection to one replica (one per thread per replica),
    writing to one bucket; lock API calls name the bucket's lock."""

    def __init__(self, port, bucket=BUCKET):
        self.port = port
        self.bucket = bucket
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=HTTP_TIMEOUT_S)

    def request(self, method, path, body=b"", headers=None):
        """Returns (status, {lowercased header: value}, body); status 0 and the
        exception text as body when no answer came."""
        try:
            self.c.request(method, path, body=body, headers=headers or {})
            r = self.c.getresponse()
            data = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data
        except (OSError, http.client.HTTPException) as e:
            self.c.close()
            return 0, {}, repr(e).encode()

    def put_object(self, key, body, token=None):
        extra = {"Content-Type": "application/octet-stream"}
        if token is not None:
            extra["X-Fencing-Token"] = str(token)
        path = "/%s/%s" % (self.bucket, key)
        return self.request("PUT", path, body, signed_headers("PUT", self.port, path, body, extra))

    def lock_api(self, verb, doc):
        body = json.dumps(doc).encode()
        return self.request("POST", "/_fence/locks/%s/%s" % (self.bucket, verb), body,
                            {"Content-Type": "application/json"})

    def close(self):
        self.c.close()


def error_field(body, xml_tag, json_key):
    """A field of an S3 XML or JSON error body, or None."""
    m = re.search(rb"<" + xml_tag + rb">([^<]*)</" + xml_tag + rb">", body)
    if m:
        return m.group(1).decode("utf-8", "replace")
    try:
        return json.loads(body).get(json_key)
    except (ValueError, AttributeError):
        return None


def lock_file_key(bucket, epoch):
    """With no config, lock BUCKET lives in bucket BUCKET under locks/BUCKET/."""
    return "locks/%s/lock-%010d.json" % (bucket, epoch)


# ---- the workload ----------------------------------------------------------

class History:
    """Thread-safe record of writes and lock events, plus the shared state the
    threads read: the epochs that exist so far and the write budget."""

    def __init__(self, budget, seconds):
        self.mu = threading.Lock()
        self.writes = []
        self.locks = []
        self.epochs = []            # epochs whose lock file exists, in order
        self.budget = budget
        self.deadline = time.monotonic() + seconds
        self.stop = threading.Event()
        self.errors = []            # driver failures (not fencing verdicts)

    def take_write(self):
        with self.mu:
            if self.budget <= 0 or time.monotonic() >= self.deadline or self.stop.is_set():
                return False
            self.budget -= 1
            return True

    def latest(self):
        with self.mu:
            return self.epochs[-1]

    def add_write(self, rec):
        with self.mu:
            self.writes.append(rec)

    def add_lock(self, rec):
        with self.mu:
            self.locks.append(rec)
            if rec["kind"] == "create" and rec["ok"]:
                self.epochs.append(rec["epoch"])


class Driver:
    """Takes epoch after epoch: releases the current one (through the replica
    that granted it, or by rewriting its file as expired), or sometimes leaves
    it live and creates the next file directly, as a lock breaker would."""

    def __init__(self, hist, targets, bucket, moto_s3, rng, use_api):
        self.hist = hist
        self.bucket = bucket
        self.s3 = moto_s3
        self.rng = rng
        self.use_api = use_api
        self.conns = {name: Conn(port, bucket) for name, port in targets}
        self.epoch = 0
        self.via = None
        self.etag = None            # of the current epoch's file when written directly

    def _event(self, kind, epoch, via, t_inv, ok, detail=""):
        self.hist.add_lock({"kind": kind, "epoch": epoch, "via": via, "t_inv": t_inv,
                            "t_done": time.monotonic(), "ok": ok, "detail": detail})
        if not ok:
            self.hist.errors.append("%s of epoch %d via %s failed: %s"
                                    % (kind, epoch, via, detail))
        return ok

    def release(self):
        t = time.monotonic()
        if self.via in self.conns:
            st, _, body = self.conns[self.via].lock_api("release", {"epoch": self.epoch})
            return self._event("release", self.epoch, self.via, t, st == 200,
                               "%d %s" % (st, body[:200]))
        payload = json.dumps({"leaderId": "driver", "validityMs": LEASE_MS, "expired": True})
        try:
            self.s3.put_object(Bucket=self.bucket, Key=lock_file_key(self.bucket, self.epoch),
                               Body=payload,
                               IfMatch=self.etag, ContentType="application/json")
            return self._event("release", self.epoch, "direct", t, True)
        except Exception as e:  # noqa: BLE001 - reported as a driver error
            return self._event("release", self.epoch, "direct", t, False, repr(e))

    def take_next(self, via):
        nxt = self.epoch + 1
        t = time.monotonic()
        if via in self.conns:
            st, _, body = self.conns[via].lock_api(
                "acquire", {"ttlMs": LEASE_MS, "holder": "driver-%d" % nxt})
            got = None
            if st == 200:
                try:
                    got = json.loads(body).get("epoch")
                except ValueError:
                    pass
            if got != nxt:
                return self._event("create", nxt, via, t, False,
                                   "acquire answered %d %s (want epoch %d)"
                                   % (st, body[:200], nxt))
            self.etag = None
        else:
            payload = json.dumps({"leaderId": "driver-%d" % nxt, "validityMs": LEASE_MS,
                                  "expired": False})
            try:
                r = self.s3.put_object(Bucket=self.bucket, Key=lock_file_key(self.bucket, nxt),
                                       Body=payload,
                                       IfNoneMatch="*", ContentType="application/json")
            except Exception as e:  # noqa: BLE001 - reported as a driver error
                return self._event("create", nxt, "direct", t, False, repr(e))
            self.etag = r["ETag"]
        self.epoch, self.via = nxt, via
        return self._event("create", nxt, via, t, True)

    def step(self):
        choices = ["A", "B", "direct", "direct"] if self.use_api else ["direct"]
        via = self.rng.choice(choices)
        # A direct create may leave the current epoch live (a break); the
        # lock API needs the latest epoch released first.
        if via != "direct" or self.rng.random() < 0.5:
            if not self.release():
                return False
        return self.take_next(via)

    def run(self):
        try:
            while not self.hist.stop.is_set():
                if self.hist.stop.wait(EPOCH_PERIOD_S * (0.5 + self.rng.random())):
                    break
                if not self.step():
                    self.hist.stop.set()
        finally:
            for c in self.conns.values():
                c.close()


def writer(wid, role, hist, targets, bucket, rng):
    """Writes unique bodies to random keys through random replicas until the
    budget or the deadline runs out. leader: the newest epoch; zombie: keeps
    an epoch and catches up only now and then; ahead: sometimes newest+1,
    which may not exist yet."""
    conns = {name: Conn(port, bucket) for name, port in targets}
    held = hist.latest()
    seq = 0
    try:
        while hist.take_write():
            latest = hist.latest()
            if role == "leader":
                epoch = latest
            elif role == "zombie":
                if rng.random() < 0.15:
                    held = latest
                epoch = held
            else:
                epoch = latest + 1 if rng.random() < 0.3 else latest
            key = rng.choice(KEYS)
            replica = rng.choice(sorted(conns))
            seq += 1
            body = json.dumps({"writer": wid, "epoch": epoch, "seq": seq}).encode()
            t_inv = time.monotonic()
            st, hdrs, resp = conns[replica].put_object(key, body, token=epoch)
            t_done = time.monotonic()
            hist.add_write({"id": "w%d-%d" % (wid, seq), "writer": wid, "role": role,
                            "key": key, "epoch": epoch, "replica": replica,
                            "t_inv": t_inv, "t_done": t_done, "status": st,
                            "code": error_field(resp, b"Code", "error") if st >= 300 else None,
                            "message": error_field(resp, b"Message", "message")
                            if st >= 300 else None,
                            "fence_epoch": hdrs.get("x-fencing-epoch"),
                            "detail": resp[:300] if st >= 300 or st == 0 else b""})
    finally:
        for c in conns.values():
            c.close()


def read_final(s3, bucket):
    """Each key's object read straight from moto (not through a proxy)."""
    from botocore.exceptions import ClientError
    final = {}
    for key in KEYS:
        try:
            r = s3.get_object(Bucket=bucket, Key=key)
        except ClientError as e:
            if e.response["Error"]["Code"] in ("NoSuchKey", "404"):
                final[key] = None
                continue
            raise
        final[key] = {"body": r["Body"].read(),
                      "meta_epoch": r.get("Metadata", {}).get("fencing-epoch")}
    return final


def summarize(hist, final, elapsed):
    ws = hist.writes
    by_status = {}
    for w in ws:
        label = str(w["status"]) + (" " + w["code"] if w.get("code") else "")
        by_status[label] = by_status.get(label, 0) + 1
    acked = [w for w in ws if history_check.acked(w)]
    print("  seed %d, %.1fs, %d writes (%.0f/s), %d acknowledged"
          % (SEED, elapsed, len(ws), len(ws) / max(elapsed, 1e-6), len(acked)))
    print("  answers: " + ", ".join("%s: %d" % kv for kv in sorted(by_status.items())))
    by_object = sum(1 for w in ws if w["status"] == 409 and "object was last written"
                    in (w.get("message") or ""))
    print("  409 because the object had a newer epoch (compare-and-swap): %d" % by_object)
    slow = {}
    for w in ws:
        if w["status"] >= 500:
            slow[w.get("message")] = slow.get(w.get("message"), 0) + 1
    for msg, n in sorted(slow.items(), key=lambda kv: -kv[1]):
        print("  5xx %dx: %s" % (n, msg))
    for rep in ("A", "B"):
        mine = [w for w in ws if w["replica"] == rep]
        print("  replica %s: %d writes, %d acknowledged"
              % (rep, len(mine), sum(1 for w in mine if history_check.acked(w))))
    made = [ev for ev in hist.locks if ev["kind"] == "create" and ev["ok"]]
    vias = {}
    for ev in made:
        vias[ev["via"]] = vias.get(ev["via"], 0) + 1
    print("  epochs 1..%d taken (%s), %d releases"
          % (made[-1]["epoch"] if made else 0,
             ", ".join("%s: %d" % kv for kv in sorted(vias.items())),
             sum(1 for ev in hist.locks if ev["kind"] == "release" and ev["ok"])))
    # Writes acknowledged although a newer epoch existed when they were sent:
    # legal where no newer epoch had reached that key (a lagging replica).
    behind = 0
    for w in acked:
        newest = max((ev["epoch"] for ev in made if ev["t_done"] < w["t_inv"]), default=0)
        behind += w["epoch"] < newest
    print("  acknowledged while a newer epoch existed (lagging replica, legal): %d" % behind)
    for key in KEYS:
        obj = final.get(key)
        if obj is None:
            print("  %s: no object" % key)
            continue
        top = max((w["epoch"] for w in acked if w["key"] == key), default=None)
        print("  %s: final epoch %s (max acknowledged %s), body %s"
              % (key, obj["meta_epoch"], top, obj["body"][:60].decode("utf-8", "replace")))


# ---- checks ----------------------------------------------------------------

def test_checker_selftest():
    problems = history_check.selftest()
    assert not problems, "the history checker misses bad histories:\n  " + "\n  ".join(problems)


def probe_fencing(gates):
    """Fencing is live on both replicas: a PUT without a token answers 428."""
    for g in gates:
        c = Conn(g.port)
        st, _, body = c.put_object("probe/no-token", b"x")
        c.close()
        assert st == 428, ("fencing is not available on replica %s: PUT without "
                           "X-Fencing-Token answered %d (want 428 FencingTokenMissing): %r"
                           % (g.name, st, body[:200]))


def probe_lock_api(gates, events):
    """Returns True when both replicas serve the lock API (an acquire of epoch
    1 through A and its release through B, appended to events), False when
    it is absent (404)."""
    a, b = Conn(gates[0].port), Conn(gates[1].port)
    try:
        t = time.monotonic()
        st, _, body = a.lock_api("acquire", {"ttlMs": LEASE_MS, "holder": "probe"})
        if st == 404:
            return False
        assert st == 200 and json.loads(body).get("epoch") == 1, \
            "acquire through A: %d %r (want 200, epoch 1)" % (st, body[:200])
        events.append({"kind": "create", "epoch": 1, "via": "A", "t_inv": t,
                       "t_done": time.monotonic(), "ok": True, "detail": "probe"})
        t = time.monotonic()
        st, _, body = b.lock_api("release", {"epoch": 1})
        assert st == 200, "release of epoch 1 through B: %d %r" % (st, body[:200])
        events.append({"kind": "release", "epoch": 1, "via": "B", "t_inv": t,
                       "t_done": time.monotonic(), "ok": True, "detail": "probe"})
        return True
    finally:
        a.close()
        b.close()


def run_workload(moto, targets, bucket, use_api, probe_events, budget=MAX_WRITES,
                 seconds=MAX_SECONDS):
    """Runs driver + writers (through targets, [(name, port)]) to the budget,
    returns (history, final, seconds)."""
    s3 = moto.client()
    hist = History(budget, seconds)
    rng = random.Random(SEED)
    # An epoch exists before anyone writes: 2 after the probe's 1, else 1.
    drv = Driver(hist, targets, bucket, s3, random.Random(rng.random()), use_api)
    for ev in probe_events:
        hist.add_lock(ev)
    if use_api:
        drv.epoch = 1
        assert drv.take_next("A"), hist.errors
    else:
        assert drv.take_next("direct"), hist.errors
    t0 = time.monotonic()
    hist.deadline = t0 + seconds
    threads = [threading.Thread(target=drv.run, name="driver")]
    for wid, role in enumerate(WRITERS):
        threads.append(threading.Thread(target=writer, name="writer-%d" % wid,
                                        args=(wid, role, hist, targets, bucket,
                                              random.Random(rng.random()))))
    for t in threads[1:]:
        t.start()
    threads[0].start()
    for t in threads[1:]:
        t.join(seconds + 3 * HTTP_TIMEOUT_S)
    hist.stop.set()
    threads[0].join(3 * HTTP_TIMEOUT_S)
    assert not any(t.is_alive() for t in threads), "a workload thread did not finish"
    elapsed = time.monotonic() - t0
    return hist, read_final(s3, bucket), elapsed


def test_history(moto, gates, state):
    assert state["fencing"], "not run: fencing is not available (see the 428 probe above)"
    targets = [(g.name, g.port) for g in gates]
    hist, final, elapsed = run_workload(moto, targets, BUCKET, state["api"], state["events"])
    summarize(hist, final, elapsed)
    assert not hist.errors, "epoch driver failed:\n  " + "\n  ".join(hist.errors)
    violations = history_check.check_history(hist.writes, hist.locks, final)
    if violations:
        dump = os.environ.get("CONCURRENCY_DUMP")
        if dump:
            with open(dump, "w") as f:
                json.dump({"writes": hist.writes, "locks": hist.locks,
                           "final": {k: v and {"body": v["body"].decode("utf-8", "replace"),
                                               "meta_epoch": v["meta_epoch"]}
                                     for k, v in final.items()}},
                          f, indent=1, default=lambda b: b.decode("utf-8", "replace"))
        raise AssertionError("%d fencing violations:\n  %s"
                             % (len(violations), "\n  ".join(violations[:30])))
    # The run must have exercised what it claims to: contention and epochs.
    acked = [w for w in hist.writes if history_check.acked(w)]
    rejected = [w for w in hist.writes if w["status"] == 409]
    epochs = {ev["epoch"] for ev in hist.locks if ev["kind"] == "create" and ev["ok"]}
    assert len(hist.writes) >= 100, "only %d writes: the run proves little" % len(hist.writes)
    assert len(acked) >= 20 and len(rejected) >= 10, \
        "too little contention: %d acknowledged, %d rejected" % (len(acked), len(rejected))
    assert len(epochs) >= 5, "only %d epochs taken" % len(epochs)
    for rep in ("A", "B"):
        assert any(w["replica"] == rep and history_check.acked(w) for w in hist.writes), \
            "no write acknowledged through replica %s" % rep


def test_unfenced_control(moto):
    """The same workload written straight to moto, with no proxy: the recorded
    history must be caught by the checker (zombies overwrite newer epochs), or
    the recording and checking above prove nothing."""
    moto.create_bucket(RAW_BUCKET)
    targets = [("A", moto.port), ("B", moto.port)]
    hist, final, elapsed = run_workload(moto, targets, RAW_BUCKET, False, [],
                                        budget=150, seconds=6.0)
    assert not hist.errors, "epoch driver failed:\n  " + "\n  ".join(hist.errors)
    order = history_check.check_key_order(hist.writes)
    fin = history_check.check_final(hist.writes, final)
    print("  unfenced: %d writes in %.1fs, %d epochs; checker: %d ordering and %d "
          "final-state violations" % (len(hist.writes), elapsed, len(hist.epochs),
                                      len(order), len(fin)))
    if order:
        print("  e.g. " + order[0])
    assert order, "an unfenced history with zombie writers passed the ordering rule"
    assert fin, "unfenced final objects (no fencing-epoch metadata) passed the final-state rule"


def health_ok(gates):
    for g in gates:
        assert g.alive(), "replica %s exited with %r" % (g.name, g.proc.returncode)
        c = Conn(g.port)
        st, _, body = c.request("GET", "/_fence/health")
        c.close()
        assert st == 200, "replica %s health: %d %r" % (g.name, st, body[:200])


def main():
    r = harness.Runner("e2e concurrency")
    r.check("history checker catches hand-made bad histories", test_checker_selftest)
    moto = harness.Moto()
    gates = []
    try:
        moto.create_bucket(BUCKET)
        gates = [Gate("A", moto.url), Gate("B", moto.url)]
        state = {"fencing": False, "api": False, "events": []}

        def fencing():
            probe_fencing(gates)
            state["fencing"] = True

        def lock_api():
            assert state["fencing"], "not run: fencing is not available"
            state["api"] = probe_lock_api(gates, state["events"])
            assert state["api"], ("lock API absent (POST /_fence/locks/%s/acquire -> 404); "
                                  "the workload below takes epochs by lock files only"
                                  % BUCKET)

        r.check("fencing on both replicas (write without token -> 428)", fencing)
        r.check("lock API: acquire through A, release through B", lock_api)
        r.check("%d writers, %d keys, two replicas, moving epochs: history is fenced"
                % (len(WRITERS), len(KEYS)),
                test_history, moto, gates, state)
        r.check("both replicas alive and healthy", health_ok, gates)
        r.check("control: the same workload without the proxy is caught",
                test_unfenced_control, moto)
    finally:
        for g in gates:
            g.close()
        moto.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
