"""fencegate.Lock: one lease on a lock of fencegate's lock HTTP API, held by
this process. It acquires (an epoch: the fencing token), renews on a daemon
thread every ttl/3, and keeps the lease's end by this process's monotonic
clock, so a worker that was paused (GC, SIGSTOP, a stalled network) knows
its lease is over without asking anyone. It does not fence writes: the
proxy does, from the token the writes carry (lock.attach, boto.py).

States: idle (no epoch), held (epoch set, lost clear, deadline ahead),
lost (lost set: renewal refused, or the deadline passed — final until the
next acquire), released (epoch kept for reference, deadline None)."""
import threading
import time

from .errors import FencegateError, LeaseLost, LockHeld
from .transport import Caller, lock_path


def _default_holder():
    import os
    import socket
    return "%s:%d" % (socket.gethostname(), os.getpid())


class Lock:
    """A lease on lock `name` at the fencegate `endpoint` (http[s]://host:port).

    ttl: lease length in seconds; holder: a label for people (default
    host:pid); wait: seconds `with` waits for a held lock; verify: CA bundle
    path, True, False, or None for AWS_CA_BUNDLE/SSL_CERT_FILE/system;
    credentials: None for the AWS chain (botocore), False to send unsigned
    calls, or (key, secret[, token]); region: for SigV4 (default AWS_REGION,
    the profile's, else us-east-1); timeout: seconds per HTTP call.
    clock and transport are for tests."""

    def __init__(self, endpoint, name, ttl=30.0, holder=None, wait=0.0, verify=None,
                 credentials=None, region=None, timeout=10.0, transport=None,
                 clock=time.monotonic, sleep=time.sleep):
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self.name = name
        self.ttl = float(ttl)
        self.holder = holder or _default_holder()
        self.wait = wait
        self.timeout = timeout
        self.lost = threading.Event()
        self.lost_reason = None
        self.last_error = None        # the last renewal failure that was retried
        self._caller = Caller(endpoint, credentials, region, verify, timeout, transport)
        self._clock = clock
        self._sleep = sleep
        self._mu = threading.Lock()
        self._epoch = None
        self._deadline = None
        self._stop = threading.Event()
        self._thread = None

    # ---- state ---------------------------------------------------------

    @property
    def epoch(self):
        """The fencing token of the lease last acquired, or None."""
        return self._epoch

    @property
    def deadline(self):
        """When the lease ends by this process's monotonic clock (the clock
        given, time.monotonic by default), or None when not held."""
        return self._deadline

    def remaining(self):
        """Seconds left on the lease by the monotonic clock (0 if none)."""
        d = self._deadline
        return max(0.0, d - self._clock()) if d is not None and not self.lost.is_set() else 0.0

    def _lose(self, reason):
        with self._mu:
            if not self.lost.is_set():
                self.lost_reason = reason
                self.lost.set()

    def check(self):
        """Returns the epoch while the lease is held and ahead of its
        deadline; otherwise marks it lost and raises LeaseLost."""
        with self._mu:
            epoch, deadline = self._epoch, self._deadline
        if epoch is None or deadline is None:
            raise LeaseLost("lock %r is not held" % self.name, epoch=epoch)
        if not self.lost.is_set() and self._clock() >= deadline:
            self._lose("the lease of epoch %d passed its deadline before a renewal" % epoch)
        if self.lost.is_set():
            raise LeaseLost("lease on lock %r (epoch %d) lost: %s" %
                            (self.name, epoch, self.lost_reason), epoch=epoch)
        return epoch

    def _refused(self, op, epoch, status, obj):
        """The exception for a renewal or release that did not succeed: a
        LeaseLost (and lost set) when the proxy says the epoch is no longer
        current, else a FencegateError."""
        if status == 409 and obj.get("error") == "LockLost":
            self._lose("%s refused: epoch %s is current" % (op, obj.get("currentEpoch")))
            return LeaseLost(obj.get("message") or "lease lost", epoch=epoch,
                             current_epoch=obj.get("currentEpoch"))
        return self._failed(op, status, obj)

    def _failed(self, op, status, obj):
        return FencegateError("%s of lock %r: HTTP %d %s: %s" %
                              (op, self.name, status, obj.get("error") or "",
                               obj.get("message") or ""), status=status, code=obj.get("error"))

    # ---- calls ---------------------------------------------------------

    def acquire(self, wait=0.0):
        """Takes the lock; returns the epoch. If another worker holds it,
        polls for up to `wait` seconds, then raises LockHeld (with holder,
        epoch, retry_after). Other refusals raise FencegateError."""
        end = self._clock() + wait
        ttl_ms = max(1, int(self.ttl * 1000))
        while True:
            t0 = self._clock()
            status, obj = self._caller.call("POST", lock_path(self.name, "acquire"),
                                            {"ttlMs": ttl_ms, "holder": self.holder})
            if status == 200:
                with self._mu:
                    self._epoch = int(obj["epoch"])
                    self._deadline = t0 + self.ttl   # sent at t0: ends no later
                    self.lost.clear()
                    self.lost_reason = None
                return self._epoch
            if status != 409 or obj.get("error") != "LockHeld":
                raise self._failed("acquire", status, obj)
            retry = float(obj.get("retryAfterMs") or 1000) / 1000.0
            left = end - self._clock()
            if left <= 0:
                raise LockHeld(obj.get("message") or "lock %r is held" % self.name,
                               holder=obj.get("holder"), epoch=obj.get("epoch"),
                               retry_after=retry)
            self._sleep(max(0.05, min(retry, 1.0, left)))

    def renew(self):
        """Extends the lease by ttl from now. Raises LeaseLost (and sets
        lost) if the proxy says another epoch took over or the deadline
        already passed; FencegateError for other failures (lease unchanged)."""
        epoch = self.check()
        t0 = self._clock()
        timeout = max(0.1, min(self.timeout, self._deadline - t0))
        status, obj = self._caller.call("POST", lock_path(self.name, "renew"),
                                        {"epoch": epoch, "ttlMs": max(1, int(self.ttl * 1000))},
                                        timeout=timeout)
        if status == 200:
            with self._mu:
                if self._epoch == epoch and not self.lost.is_set():
                    self._deadline = t0 + self.ttl
            return self.check()
        raise self._refused("renewal", epoch, status, obj)

    def release(self):
        """Stops renewing and ends the lease. Raises LeaseLost if the proxy
        says the epoch was no longer ours, FencegateError on other errors."""
        self._stop_keeping()
        epoch = self._epoch
        if epoch is None:
            return
        status, obj = self._caller.call("POST", lock_path(self.name, "release"),
                                        {"epoch": epoch})
        with self._mu:
            self._deadline = None
        if status == 200:
            return
        raise self._refused("release", epoch, status, obj)

    def _release_quietly(self):
        """A lost lease may still be the latest (nobody took over): release
        it so others need not wait for it to lapse; any answer is fine."""
        epoch = self._epoch
        with self._mu:
            self._deadline = None
        if epoch is not None:
            try:
                self._caller.call("POST", lock_path(self.name, "release"), {"epoch": epoch})
            except FencegateError:
                pass

    def status(self):
        """The lock's status as the proxy reports it (a dict)."""
        status, obj = self._caller.call("GET", lock_path(self.name))
        if status != 200:
            raise self._failed("status", status, obj)
        return obj

    # ---- renewal thread -------------------------------------------------

    def keep(self):
        """Starts renewing on a daemon thread every ttl/3. A refused renewal
        or a deadline that passes sets `lost` and ends the thread; other
        failures are retried (sooner) until the deadline."""
        self._stop_keeping()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep, args=(self._stop,),
                                        name="fencegate-renew-%s" % self.name, daemon=True)
        self._thread.start()

    def _keep(self, stop):
        interval = self.ttl / 3.0
        due = self._clock() + interval
        while True:
            deadline = self._deadline
            if deadline is None or self.lost.is_set():
                return
            if stop.wait(max(0.0, min(due, deadline) - self._clock())):
                return
            if self._clock() >= deadline:
                self._lose("the lease passed its deadline before a renewal")
                return
            if self._clock() < due:
                continue
            try:
                self.renew()
                due = self._clock() + interval
            except LeaseLost:
                return
            except FencegateError as e:
                self.last_error = e
                due = self._clock() + min(interval / 3.0, 1.0)

    def _stop_keeping(self):
        self._stop.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join()
        self._thread = None

    # ---- with ------------------------------------------------------------

    def __enter__(self):
        self.acquire(self.wait)
        self.keep()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._stop_keeping()
        try:
            self.check()
        except LeaseLost:
            self._release_quietly()
            if exc_type is None:
                raise
            return False
        try:
            self.release()
        except FencegateError:
            if exc_type is None:
                raise
        return False

    def attach(self, client, lock_name=True):
        """Puts this lock's token (and, with lock_name, its name) on every
        write of boto3/botocore S3 client `client`, and makes such a write
        raise LeaseLost instead of being sent once the lease is lost or past
        its deadline. Returns the client."""
        from .boto import attach
        return attach(self, client, lock_name)

    def detach(self, client):
        """Undoes attach(client)."""
        from .boto import detach
        detach(self, client)
