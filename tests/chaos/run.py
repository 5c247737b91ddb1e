#!/usr/bin/env python3
"""The chaos harness's driver (`make chaos`): installs the Python lock
client as a wheel (tests/e2e/clientpkg.py), starts the cluster
(cluster.py), starts LANES lanes of WORKERS worker processes (worker.py;
a lane is one bucket, its lock and its counters), then runs TRIALS trials
of each fault type (faults.py): the worker faults on each lane's own
thread, the cluster faults one at a time on another, all while the
workers keep working. Then it stops the workers, reads every counter and
lock file straight from storage, runs checker.py over the history, and
prints one line per fault type and, last, `chaos: T trials, V
violations`. Exit status 1 when V > 0 (with --expect-violations: 1 when
V == 0, for the UNFENCED control), 2 when the harness itself failed.

A violation is charged to the trial of its lane (or else the cluster
trial) whose window, plus 3 s, holds its time; "(no trial)" counts the
others (a skewed worker finishes its long cycle after its trial ends). Every process it started
is stopped by PID, and the namespace removed, also on SIGINT/SIGTERM.
Bounded: each fault is bounded (faults.py), each worker by --seconds."""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import checker  # noqa: E402
import cluster as clustermod  # noqa: E402
import faults  # noqa: E402

GRACE_S = 3.0


class WorkerProc:
    """One worker.py process; a thread reads its stdout ("acq E"/"rel E")."""

    def __init__(self, lane, name, extra_env=None, extra_args=()):
        a = lane.args
        self.lane, self.name = lane, name
        self.holding, self.acquired = None, 0
        argv = [sys.executable, os.path.join(HERE, "worker.py"), "--name", name,
                "--bucket", lane.bucket, "--replicas", ",".join(lane.urls),
                "--storage", lane.storage_url, "--ttl", "1.0", "--keys", str(a.keys),
                "--seconds", str(a.worker_seconds),
                "--history", os.path.join(lane.dir, "%s.%d.jsonl" % (name.split("/")[1],
                                                                    len(lane.procs)))]
        argv += list(extra_args) + (["--unfenced"] if a.unfenced else [])
        env = dict(os.environ, PYTHONPATH=lane.site, **(extra_env or {}))
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(os.path.join(lane.dir, "stderr.log"), "ab"),
                                  env=env, text=True, bufsize=1)
        self.pid = self.p.pid
        lane.procs.append(self)
        if lane.closed:               # Lane.close ran meanwhile (a fault thread)
            self.close(timeout=0)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            parts = line.split()
            if len(parts) == 2 and parts[0] == "acq":
                self.holding = int(parts[1])
                self.acquired += 1
                self.lane.on_acquire(self, self.holding)
            elif len(parts) == 2 and parts[0] == "rel":
                self.holding = None

    def send(self, cmd):
        try:
            self.p.stdin.write(cmd + "\n")
            self.p.stdin.flush()
        except OSError:
            pass

    def kill9(self):
        if self.p.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
            self.p.wait()
        self.holding = None

    def close(self, timeout=3.0):
        if self.p.poll() is None:
            try:
                os.kill(self.pid, signal.SIGCONT)
                self.p.stdin.write("quit\n")
                self.p.stdin.flush()
                self.p.wait(timeout)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill9()


class Lane:
    """A bucket, its lock and its workers; knows who holds the lock."""

    def __init__(self, args, bucket, urls, storage_url, site, run_dir):
        self.args, self.bucket, self.urls = args, bucket, urls
        self.storage_url, self.site = storage_url, site
        self.dir = os.path.join(run_dir, bucket)
        os.mkdir(self.dir)
        self.procs, self.workers, self.skewed = [], [], None
        self.closed = False
        self.cv = threading.Condition()
        self.last = (0, None)          # (epoch, worker) of the newest acquisition
        self.serial = 0
        for _ in range(args.workers):
            self.workers.append(self.spawn())

    def spawn(self, prefix="w", **kw):
        if self.closed:
            raise RuntimeError("%s is closing" % self.bucket)
        self.serial += 1
        return WorkerProc(self, "%s/%s%d" % (self.bucket, prefix, self.serial), **kw)

    def replace(self, w):
        self.workers[self.workers.index(w)] = self.spawn()

    def on_acquire(self, w, epoch):
        with self.cv:
            if epoch > self.last[0]:
                self.last = (epoch, w)
            self.cv.notify_all()

    def holder(self, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for w in self.workers:
                if w.holding is not None and w.p.poll() is None:
                    return w
            time.sleep(0.02)
        return None

    def wait_takeover(self, epoch, w, timeout):
        """True once a worker other than w acquired an epoch above epoch."""
        with self.cv:
            return self.cv.wait_for(lambda: self.last[0] > epoch and self.last[1] is not w,
                                    timeout)

    def close(self):
        self.closed = True
        for w in list(self.procs):
            w.close(timeout=1.0)


class Trials:
    def __init__(self):
        self.mu = threading.Lock()
        self.done = []                 # (type, lane or None, t0, t1, note)
        self.errors = []

    def run(self, kind, target, lane, rng):
        t0 = time.monotonic()
        try:
            note = faults.BY_NAME[kind](target, rng)
        except Exception as e:  # noqa: BLE001 - a broken fault fails the run
            with self.mu:
                self.errors.append("%s: %r" % (kind, e))
            return
        with self.mu:
            if note is not None:
                self.done.append((kind, lane, t0, time.monotonic(), note))


def schedule(kinds, trials, rng):
    order = [k for _ in range(trials) for k in kinds]
    rng.shuffle(order)
    return order


def read_storage(storage, buckets, keys):
    """finals {(lane, key): body or None}, lockfiles {lane: {epoch: leaderId}}."""
    s3 = storage.client()
    finals, lockfiles = {}, {}
    for b in buckets:
        for k in range(keys):
            key = "ctr/k%d" % k
            try:
                finals[(b, key)] = json.loads(s3.get_object(Bucket=b, Key=key)["Body"].read())
            except s3.exceptions.NoSuchKey:
                finals[(b, key)] = None
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=b, Prefix="locks/%s/" % b)
        for page in pages:
            for o in page.get("Contents", []):
                doc = json.loads(s3.get_object(Bucket=b, Key=o["Key"])["Body"].read())
                epoch = int(o["Key"].rsplit("lock-", 1)[1].split(".")[0])
                lockfiles.setdefault(b, {})[epoch] = doc.get("leaderId")
    return finals, lockfiles


def charge(violations, done):
    """{trial index: [violations]} and the violations no trial window holds."""
    by_trial, loose = {}, []
    for v in violations:
        best = None
        for i, (kind, lane, t0, t1, _) in enumerate(done):
            if t0 <= v["t"] <= t1 + GRACE_S and lane in (v["lane"], None):
                if best is None or (done[best][1] is None and lane is not None) or \
                        (done[best][1] == lane and t0 > done[best][2]):
                    best = i
        if best is None:
            loose.append(v)
        else:
            by_trial.setdefault(best, []).append(v)
    return by_trial, loose


def report(args, done, violations, stats, kinds, skipped, seconds):
    by_trial, loose = charge(violations, done)
    print("chaos: %s backend, %d replicas, %d lanes x %d workers, fence %s, %.0f s"
          % (args.backend, args.replicas, args.lanes, args.workers,
             "OFF (workers read and write storage directly)" if args.unfenced else "on",
             seconds))
    print("  writes %(writes)d (acknowledged %(acked)d, refused as stale by the proxy "
          "%(refused)d, refused by the client after its lease %(lease_lost)d, unknown "
          "%(unknown)d), epochs granted %(epochs)d, in flight at a takeover %(in_flight)d"
          % stats)
    for k in kinds:
        idx = [i for i, d in enumerate(done) if d[0] == k]
        nv = sum(len(by_trial.get(i, [])) for i in idx)
        extra = " (skipped: %s)" % skipped[k] if k in skipped else ""
        print("  %-13s %5d trials %5d violations%s" % (k, len(idx), nv, extra))
    if loose:
        print("  %-13s %5s        %5d violations" % ("(no trial)", "", len(loose)))
    for v in violations[:args.show]:
        print("  VIOLATION %s: %s" % (v["kind"], v["text"]))
    if len(violations) > args.show:
        print("  ... %d more (%s)" % (len(violations) - args.show,
                                     "histories in %s" % args.out if args.out
                                     else "--out DIR keeps the histories"))
    print("chaos: %d trials, %d violations" % (len(done), len(violations)))


def main():
    p = argparse.ArgumentParser(description="fault campaign over real processes")
    p.add_argument("--trials", type=int, default=1000, help="trials per fault type")
    p.add_argument("--backend", choices=("moto", "rgw"), default="moto")
    p.add_argument("--unfenced", action="store_true")
    p.add_argument("--expect-violations", action="store_true")
    p.add_argument("--lanes", type=int, default=3)
    p.add_argument("--workers", type=int, default=2, help="workers per lane")
    p.add_argument("--replicas", type=int, default=3)
    p.add_argument("--keys", type=int, default=2)
    p.add_argument("--types", default=",".join(faults.WORKER_FAULTS + faults.CLUSTER_FAULTS))
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--out", help="keep the run directory (histories, logs) here")
    p.add_argument("--show", type=int, default=20, help="violations printed in full")
    p.add_argument("--no-netns", action="store_true")
    p.add_argument("--max-seconds", type=float, default=6 * 3600,
                   help="start no trial after this long (the report says how many ran)")
    args = p.parse_args()
    kinds = [k for k in args.types.split(",") if k]
    bad = [k for k in kinds if k not in faults.BY_NAME]
    if bad:
        p.error("unknown fault types: %s" % ", ".join(bad))
    # each worker outlives the campaign's worst case, never by much
    per_lane = args.trials * 3 * 6.0 / args.lanes + args.trials * 6 * 2.5
    args.worker_seconds = 120 + min(per_lane, args.max_seconds)
    problems = checker.selftest()
    if problems:
        print("chaos: the checker's self-test failed: %s" % problems)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    run_dir = args.out or tempfile.mkdtemp(prefix="fencegate-chaos-")
    os.makedirs(run_dir, exist_ok=True)
    cl, lanes, t_start = None, [], time.monotonic()
    try:
        import clientpkg
        site = clientpkg.install_python(tempfile.mkdtemp(dir=run_dir, prefix="pkg-"))
        cl = clustermod.Cluster(run_dir, args.backend, args.replicas, args.lanes,
                                use_netns=not args.no_netns)
        storage_url = cl.storage.url
        lanes = [Lane(args, b, cl.urls, storage_url, site, run_dir) for b in cl.buckets]
        rng = random.Random(args.seed)
        skipped = {}
        if "partition" in kinds and cl.partitionable() is None:
            skipped["partition"] = "no network namespace (needs root and ip netns)"
        trials = Trials()
        stop_at = time.monotonic() + args.max_seconds
        wk = [k for k in kinds if k in faults.WORKER_FAULTS]
        ck = [k for k in kinds if k in faults.CLUSTER_FAULTS and k not in skipped]
        plan = schedule(wk, args.trials, rng)
        threads = []
        for i, lane in enumerate(lanes):
            mine = plan[i::len(lanes)]
            lrng = random.Random("%d-%d" % (args.seed, i))

            def lane_loop(lane=lane, mine=mine, lrng=lrng):
                for k in mine:
                    if time.monotonic() > stop_at:
                        return
                    trials.run(k, lane, lane.bucket, lrng)
                    time.sleep(lrng.uniform(0.05, 0.3))
            threads.append(threading.Thread(target=lane_loop, daemon=True))
        crng = random.Random("%d-c" % args.seed)

        def cluster_loop():
            for n, k in enumerate(schedule(ck, args.trials, crng)):
                if time.monotonic() > stop_at:
                    return
                if n % 100 == 99:
                    print("chaos: %.0f s, %d trials done" % (time.monotonic() - t_start,
                                                            len(trials.done)), flush=True)
                trials.run(k, cl, None, crng)
                time.sleep(crng.uniform(0.05, 0.3))
        threads.append(threading.Thread(target=cluster_loop, daemon=True))
        print("chaos: seed %d, run directory %s" % (args.seed, run_dir), flush=True)
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(1.0, stop_at + 60 - time.monotonic()))
        time.sleep(1.0)
        for lane in lanes:
            lane.close()
        if trials.errors:
            print("chaos: the harness failed: %s" % "; ".join(trials.errors[:5]))
            return 2
        finals, lockfiles = read_storage(cl.storage, cl.buckets, args.keys)
        with open(os.path.join(run_dir, "storage.json"), "w") as f:   # kept with --out
            json.dump({"finals": [[b, k, v] for (b, k), v in finals.items()],
                       "lockfiles": lockfiles}, f)
        hist = [os.path.join(lane.dir, f) for lane in lanes for f in os.listdir(lane.dir)
                if f.endswith(".jsonl")]
        violations, stats = checker.check(checker.load(hist), finals, lockfiles,
                                          clustermod.REFRESH_MS / 1000.0 + 0.1)
        violations.sort(key=lambda v: v["t"])
        report(args, sorted(trials.done, key=lambda d: d[2]), violations, stats, kinds,
               skipped, time.monotonic() - t_start)
        if args.expect_violations:
            return 0 if violations else 1
        return 1 if violations else 0
    finally:
        for lane in lanes:
            lane.close()
        if cl is not None:
            cl.close()
        if not args.out:
            shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
