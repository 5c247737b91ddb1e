"""The chaos harness's faults (tests/chaos/): each function injects one
fault and undoes it before it returns, so every fault is bounded in time
(a takeover is awaited 5 s at most, a skewed worker's
first lease 30 s). It returns a short note for the
report. It judges nothing (checker.py does) and starts no cluster
(cluster.py does); worker processes come from the driver's Lane.

Worker faults (one lane: its workers share one lock and its counters):
  pause        SIGSTOP the lock holder until another worker took a newer
               epoch (its lease lapsed), then SIGCONT: a zombie wakes up
  kill-holder  kill -9 the lock holder, wait for the takeover, start a
               new worker in its place
  skew         a worker whose wall clock is stepped back and slowed
               (faketime "-20s x0.05") and that keeps its lease on that
               clock works in the lane for 3 s after its first lease
               (then finishes its cycle), 100-150 steps per lease (ended
               by the first refused write): it believes in its lease 20
               times too long
Cluster faults (a replica or its path to storage):
  kill-replica kill -9 a replica, restart it after 0-0.3 s
  delay        its relay delays every chunk by 50-400 ms for 0.3-0.8 s
  loss         its relay black-holes 30% of new connections
  reset        its relay resets 50% of connections once the answer starts
               (the request reached storage, the answer is lost)
  silence      its relay takes connections and never answers
  partition    iptables in the replica's namespace drops its traffic to
               storage for 0.5-1.5 s (only the replica in the namespace)"""
import os
import signal
import time

WORKER_FAULTS = ("pause", "kill-holder", "skew")
CLUSTER_FAULTS = ("kill-replica", "delay", "loss", "reset", "silence", "partition")
TAKEOVER_S = 5.0      # a 1 s lease is taken over 2-3 s after its last renewal
SKEW = "-20s x0.05"
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def _victim(lane, rng):
    w = lane.holder(timeout=2.0)
    return w if w is not None else rng.choice(lane.workers)


def pause(lane, rng):
    w = _victim(lane, rng)
    epoch = w.holding or 0
    os.kill(w.pid, signal.SIGSTOP)
    try:
        took = lane.wait_takeover(epoch, w, TAKEOVER_S)
        time.sleep(rng.uniform(0.05, 0.3))   # let the new holder write
    finally:
        os.kill(w.pid, signal.SIGCONT)
    return "%s paused holding epoch %d; %s" % (w.name, epoch,
                                               "taken over" if took else "no takeover")


def kill_holder(lane, rng):
    w = _victim(lane, rng)
    epoch = w.holding or 0
    w.kill9()
    took = lane.wait_takeover(epoch, w, TAKEOVER_S)
    lane.replace(w)
    return "%s killed holding epoch %d; %s" % (w.name, epoch,
                                               "taken over" if took else "no takeover")


def skew(lane, rng):
    if lane.skewed is None or lane.skewed.p.poll() is not None:
        env = {"LD_PRELOAD": FAKETIME_LIB, "FAKETIME": SKEW,
               "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
        lane.skewed = lane.spawn(extra_env=env, prefix="skewed", extra_args=[
            "--wall-lease", "--wait", "0.1", "--min-steps", "100", "--steps", "150", "--idle"])
    w = lane.skewed
    before = w.acquired
    w.send("run")
    try:
        end = time.monotonic() + 30.0      # its first start takes seconds
        while w.acquired == before and time.monotonic() < end and w.p.poll() is None:
            time.sleep(0.05)
        time.sleep(3.0)
    finally:
        w.send("idle")
    return "%s (faketime %s) acquired %d times" % (w.name, SKEW, w.acquired - before)


def kill_replica(cluster, rng):
    r = rng.choice(cluster.replicas)
    r.kill9()
    time.sleep(rng.uniform(0, 0.3))
    r.start(wait=True)
    r.restarts += 1
    return "replica %d killed and restarted" % r.index


def _relay_fault(cluster, rng, what, **attrs):
    i = rng.randrange(len(cluster.relays))
    rel = cluster.relays[i]
    for k, v in attrs.items():
        setattr(rel, k, v)
    try:
        time.sleep(rng.uniform(0.3, 0.8))
    finally:
        rel.delay, rel.drop, rel.reset_share = 0.0, 0.0, 0.0
        rel.loud()
    return "replica %d: %s" % (i, what)


def delay(cluster, rng):
    d = rng.uniform(0.05, 0.4)
    return _relay_fault(cluster, rng, "delay %.0f ms" % (d * 1000), delay=d)


def loss(cluster, rng):
    return _relay_fault(cluster, rng, "30% of connections black-holed", drop=0.3)


def reset(cluster, rng):
    return _relay_fault(cluster, rng, "50% of connections reset", reset_share=0.5)


def silence(cluster, rng):
    return _relay_fault(cluster, rng, "silent", silent=True)


def partition(cluster, rng):
    r = cluster.partitionable()
    if r is None:
        return None
    cluster.netns.cut(r.relay.port)
    try:
        time.sleep(rng.uniform(0.5, 1.5))
    finally:
        cluster.netns.heal()
    return "replica %d cut from storage (iptables in %s)" % (r.index, cluster.netns.name)


BY_NAME = {"pause": pause, "kill-holder": kill_holder, "skew": skew,
           "kill-replica": kill_replica, "delay": delay, "loss": loss, "reset": reset,
           "silence": silence, "partition": partition}
