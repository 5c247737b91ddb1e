#!/usr/bin/env python3
"""A chaos worker (tests/chaos/): a real process using the shipped Python
lock client (the installed `fencegate` wheel: fencegate.Lock, lock.keep,
lock.attach on a boto3 client) to run read-modify-write steps on counter
objects of its lane's bucket, through a random fencegate replica.

Each cycle: acquire the lane's lock (ttl TTL, through replica R), keep it
renewed, MIN_STEPS to STEPS times read a counter key and put back n+1
with the token on (lock.attach), then release. Every operation is appended to the history
file as one JSON line, invoke, sent (a write passed the client's lease
check and leaves) and then ok / fail (definitely not applied) / unknown
(maybe applied), with epoch, key, value, ids and times: `t` is the
real CLOCK_MONOTONIC and `wall` the real CLOCK_REALTIME read by the raw
system call, so a worker under faketime records true times while its lock
client lives by the skewed clock. Lock calls are recorded by wrapping the
client's transport (renewals from its keep thread included, with the
storage-clock `expiresAtMs` the proxy answers).

A counter object's body is JSON {"n", "id", "prev", "epoch", "w"}: n is the
count read plus one, prev the id of the body that was read, so the checker
can rebuild the order in which storage applied writes.

--wall-lease: the lock client keeps its lease on time.time (Lock(clock=)),
the wall clock, which the driver skews with faketime (libfaketime with
FAKETIME_DONT_FAKE_MONOTONIC=1, since faking CLOCK_MONOTONIC with
libfaketime 0.9.10 hangs Python's timed lock waits; with it set,
time.sleep fails with EINVAL and select() waits are scaled, so this file
sleeps with Event.wait and reads stdin on a thread).

stdin takes "run", "idle" (finish the cycle, hold no lock, wait) and
"quit"; stdout reports "acq E", "rel E" (lock held / not held) for the
driver. --unfenced: counters are read and written straight on storage (the
lease is still taken through the replicas and checked by lock.attach).
Bounded by --seconds and --cycles. It judges nothing: checker.py does."""
import argparse
import ctypes
import json
import os
import random
import threading
import sys
import time

_libc = ctypes.CDLL(None, use_errno=True)
SYS_CLOCK_GETTIME = 228  # x86_64


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def real_clock(clock_id):
    """clock_gettime by the raw system call: libfaketime does not see it."""
    ts = _Timespec()
    if _libc.syscall(SYS_CLOCK_GETTIME, clock_id, ctypes.byref(ts)) != 0:
        return time.monotonic() if clock_id == 1 else time.time()
    return ts.tv_sec + ts.tv_nsec / 1e9


class History:
    """Appends one JSON line per event (O_APPEND: a kill -9 loses at most
    the line being written, which the checker skips)."""

    def __init__(self, path, name):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.name = name
        self.pid = os.getpid()

    def add(self, **rec):
        rec.update(w=self.name, pid=self.pid, t=real_clock(1), wall=real_clock(0),
                   fake_wall=time.time())
        os.write(self.fd, (json.dumps(rec, sort_keys=True) + "\n").encode())


def record_lock_calls(lock, hist, replica):
    """Wraps lock's transport so each lock API call is in the history."""
    import fencegate
    orig = lock._caller.call

    def call(method, path, payload=None, timeout=None):
        op = path.rsplit("/", 1)[-1] if method == "POST" else "status"
        epoch = (payload or {}).get("epoch")
        hist.add(op=op, type="invoke", epoch=epoch, replica=replica)
        try:
            status, obj = orig(method, path, payload, timeout=timeout)
        except fencegate.FencegateError as e:
            hist.add(op=op, type="unknown", epoch=epoch, replica=replica, error=str(e)[:200])
            raise
        if status == 200:
            hist.add(op=op, type="ok", epoch=obj.get("epoch", epoch), replica=replica,
                     expires=obj.get("expiresAtMs"), ttl=obj.get("ttlMs"),
                     holder=obj.get("holder"))
        else:
            hist.add(op=op, type="fail", epoch=epoch, replica=replica, status=status,
                     code=obj.get("error"), current=obj.get("currentEpoch", obj.get("epoch")))
        return status, obj
    lock._caller.call = call


def s3_client(url):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                        aws_access_key_id="test", aws_secret_access_key="test",
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1, "mode": "standard"},
                                      connect_timeout=2, read_timeout=3))


def classify(exc):
    """(type, status, code) of a failed S3 call: fail = not applied (the
    proxy refused it, or the client never sent it), unknown = maybe."""
    import botocore.exceptions as be
    import fencegate
    if isinstance(exc, fencegate.LeaseLost):
        return "fail", 0, "LeaseLost"
    if isinstance(exc, be.ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        code = exc.response.get("Error", {}).get("Code")
        if 400 <= status < 500 or (status == 503 and code in ("SlowDown",
                                                              "ServiceUnavailable")):
            return "fail", status, code
        return "unknown", status, code
    return "unknown", 0, type(exc).__name__


class Worker:
    def __init__(self, a):
        self.a = a
        self.hist = History(a.history, a.name)
        self.rng = random.Random("%s-%d" % (a.name, os.getpid()))
        self.seq = 0
        self.running = not a.idle
        self.deadline = time.monotonic() + a.seconds
        self.clients = {}
        self.cur = None               # (id, key, epoch) of the write being sent
        for url in [a.storage] if a.unfenced else a.replicas:
            self.client(url)          # before any lease: creating one takes seconds
        self.woken = threading.Event()
        self.quit = False
        threading.Thread(target=self.read_stdin, daemon=True).start()

    def sleep(self, seconds):
        threading.Event().wait(seconds)

    def read_stdin(self):
        for line in sys.stdin:
            self.running = line.strip() == "run"
            self.quit = line.strip() == "quit"
            self.woken.set()
            if self.quit:
                return
        self.quit = True
        self.woken.set()

    def client(self, url):
        if url not in self.clients:
            c = s3_client(url)
            # after lock.attach's lease check (register_last): when the
            # write leaves, at the latest; the checker's bound on when a
            # replica decided it
            c.meta.events.register_last("before-send.s3", self.sent)
            self.clients[url] = c
        return self.clients[url]

    def sent(self, request, **_):
        if self.cur is not None and request.method == "PUT":
            self.hist.add(op="write", type="sent", id=self.cur[0], key=self.cur[1],
                          epoch=self.cur[2])

    def rmw(self, s3, lock, key, epoch):
        """One read-modify-write of key; False when the cycle should end."""
        b = self.a.bucket
        self.hist.add(op="read", type="invoke", key=key, epoch=epoch)
        try:
            doc = json.loads(s3.get_object(Bucket=b, Key=key)["Body"].read())
        except Exception as e:  # noqa: BLE001 - every failure is recorded
            code = getattr(e, "response", {}).get("Error", {}).get("Code")
            if code in ("NoSuchKey", "404"):
                doc = {"n": 0, "id": None}
            else:
                self.hist.add(op="read", type="fail", key=key, epoch=epoch, code=str(code))
                return False
        self.hist.add(op="read", type="ok", key=key, epoch=epoch, value=doc["n"],
                      id=doc["id"])
        self.seq += 1
        wid = "%s-%d-%d" % (self.a.name, os.getpid(), self.seq)
        body = {"n": doc["n"] + 1, "id": wid, "prev": doc["id"], "epoch": epoch,
                "w": self.a.name}
        self.hist.add(op="write", type="invoke", key=key, epoch=epoch, value=body["n"],
                      id=wid, prev=doc["id"])
        self.cur = (wid, key, epoch)
        try:
            s3.put_object(Bucket=b, Key=key, Body=json.dumps(body).encode(),
                          ContentType="application/json")
        except Exception as e:  # noqa: BLE001 - every failure is recorded
            self.cur = None
            typ, status, code = classify(e)
            self.hist.add(op="write", type=typ, key=key, epoch=epoch, value=body["n"],
                          id=wid, prev=doc["id"], status=status, code=code)
            return False
        self.cur = None
        self.hist.add(op="write", type="ok", key=key, epoch=epoch, value=body["n"],
                      id=wid, prev=doc["id"], status=200)
        return True

    def cycle(self):
        import fencegate
        a = self.a
        replica = self.rng.randrange(len(a.replicas))
        url = a.replicas[replica]
        lock = fencegate.Lock(url, a.bucket, ttl=a.ttl, holder="%s.%d" % (a.name, os.getpid()),
                              credentials=("test", "test"), timeout=2.0, sleep=self.sleep,
                              clock=time.time if a.wall_lease else time.monotonic)
        record_lock_calls(lock, self.hist, replica)
        try:
            epoch = lock.acquire(wait=self.rng.uniform(0.1, 1.0) * a.wait)
        except fencegate.FencegateError:
            self.sleep(self.rng.uniform(0.01, 0.1))
            return
        print("acq %d" % epoch, flush=True)
        lock.keep()
        s3 = self.client(a.storage if a.unfenced else url)
        lock.attach(s3)
        try:
            for _ in range(self.rng.randint(min(a.min_steps, a.steps), a.steps)):
                key = "ctr/k%d" % self.rng.randrange(a.keys)
                if not self.rmw(s3, lock, key, epoch):
                    break
                self.sleep(self.rng.uniform(0, 0.03))
        finally:
            lock.detach(s3)
            try:
                lock.release()        # a lapsed lease may still be the newest
            except fencegate.FencegateError:
                pass
            print("rel %d" % epoch, flush=True)

    def run(self):
        for _ in range(self.a.cycles):
            if time.monotonic() > self.deadline:
                break
            if self.quit:
                break
            if self.running:
                self.cycle()
                self.sleep(self.rng.uniform(0, 0.05))
            else:
                self.woken.wait(0.5)
                self.woken.clear()
        return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--name", required=True)
    p.add_argument("--bucket", required=True)
    p.add_argument("--replicas", required=True, type=lambda s: s.split(","))
    p.add_argument("--storage", required=True)
    p.add_argument("--history", required=True)
    p.add_argument("--ttl", type=float, default=1.0)
    p.add_argument("--wait", type=float, default=2.0,
                   help="longest acquire wait, in lease-clock seconds")
    p.add_argument("--steps", type=int, default=3, help="most steps per lock cycle")
    p.add_argument("--min-steps", type=int, default=1, help="fewest steps per lock cycle")
    p.add_argument("--keys", type=int, default=2)
    p.add_argument("--seconds", type=float, default=3600)
    p.add_argument("--cycles", type=int, default=100000)
    p.add_argument("--unfenced", action="store_true")
    p.add_argument("--wall-lease", action="store_true",
                   help="keep the lease on the wall clock (for faketime skew)")
    p.add_argument("--idle", action="store_true", help="start idle (wait for 'run')")
    return Worker(p.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())
