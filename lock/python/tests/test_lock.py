"""Unit tests of the fencegate Python client, with no network: a fake
transport answers as the proxy's lock API does, a fake clock moves time, and
a botocore client sends nowhere (a before-send hook answers). Run with the
package importable, e.g. PYTHONPATH=lock/python python3 -m unittest
discover -s lock/python/tests. It does not test the proxy: the e2e suite
(tests/e2e/test_client_python.py) does."""
import hashlib
import json
import threading
import time
import unittest

import fencegate

try:
    import botocore  # noqa: F401 - signing and attach need it
except ImportError:
    botocore = None


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def sleep(self, s):
        self.now += s


class FakeProxy:
    """A transport: records each call, answers from a list of
    (status, body) or a function of (op, payload)."""

    def __init__(self, answers=None, fn=None):
        self.calls = []
        self.answers = list(answers or [])
        self.fn = fn
        self.mu = threading.Lock()

    def __call__(self, method, url, headers, body, timeout):
        payload = json.loads(body) if body else None
        op = url.rsplit("/", 1)[1]
        with self.mu:
            self.calls.append((method, url, dict(headers), payload, body))
        if self.fn:
            status, obj = self.fn(op, payload)
        else:
            status, obj = self.answers.pop(0)
        raw = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        return status, {}, raw

    def ops(self):
        with self.mu:
            return [c[1].rsplit("/", 1)[1] for c in self.calls]


GRANT = {"lock": "jobs", "epoch": 7, "holder": "w1", "ttlMs": 30000}
HELD = {"error": "LockHeld", "message": "held", "holder": "w0", "epoch": 6,
        "retryAfterMs": 2500}
LOST = {"error": "LockLost", "message": "epoch 7 is not current", "lock": "jobs",
        "epoch": 7, "currentEpoch": 8}


def new_lock(proxy, clock=None, **kw):
    clock = clock or Clock()
    return fencegate.Lock("http://gate:8080", "jobs", holder="w1", credentials=False,
                          transport=proxy, clock=clock, sleep=clock.sleep, **kw)


class AcquireTest(unittest.TestCase):
    def test_grant_sets_epoch_and_deadline_from_the_send_time(self):
        clock = Clock()
        proxy = FakeProxy([(200, GRANT)])
        lk = new_lock(proxy, clock, ttl=12.5)
        self.assertEqual(lk.acquire(), 7)
        self.assertEqual(lk.epoch, 7)
        self.assertEqual(lk.deadline, 1000.0 + 12.5)
        method, url, headers, payload, _ = proxy.calls[0]
        self.assertEqual((method, url), ("POST", "http://gate:8080/_fence/locks/jobs/acquire"))
        self.assertEqual(payload, {"ttlMs": 12500, "holder": "w1"})
        self.assertEqual(headers["Content-Type"], "application/json")
        self.assertNotIn("Authorization", headers)
        self.assertFalse(lk.lost.is_set())

    def test_held_raises_lockheld_with_the_holder(self):
        lk = new_lock(FakeProxy([(409, HELD)]))
        with self.assertRaises(fencegate.LockHeld) as cm:
            lk.acquire()
        self.assertEqual((cm.exception.holder, cm.exception.epoch), ("w0", 6))
        self.assertEqual(cm.exception.retry_after, 2.5)
        self.assertIsNone(lk.epoch)

    def test_wait_polls_until_free(self):
        clock = Clock()
        proxy = FakeProxy([(409, HELD), (409, HELD), (200, GRANT)])
        lk = new_lock(proxy, clock)
        self.assertEqual(lk.acquire(wait=5.0), 7)
        self.assertEqual(proxy.ops(), ["acquire"] * 3)
        self.assertAlmostEqual(clock.now, 1002.0)   # polled every second at most
        self.assertEqual(lk.deadline, 1002.0 + 30.0)

    def test_wait_gives_up(self):
        clock = Clock()
        lk = new_lock(FakeProxy(fn=lambda op, p: (409, HELD)), clock)
        with self.assertRaises(fencegate.LockHeld):
            lk.acquire(wait=2.5)
        self.assertLessEqual(clock.now, 1002.5 + 1e-9)

    def test_other_errors_are_not_lockheld(self):
        xml = (b"<?xml version='1.0'?><Error><Code>AccessDenied</Code>"
               b"<Message>no lock permission</Message></Error>")
        lk = new_lock(FakeProxy([(403, xml)]))
        with self.assertRaises(fencegate.FencegateError) as cm:
            lk.acquire()
        self.assertNotIsInstance(cm.exception, fencegate.LockHeld)
        self.assertEqual((cm.exception.status, cm.exception.code), (403, "AccessDenied"))
        self.assertIn("no lock permission", str(cm.exception))

    def test_json_error_body(self):
        lk = new_lock(FakeProxy([(503, {"error": "ServiceUnavailable", "message": "store down"})]))
        with self.assertRaises(fencegate.FencegateError) as cm:
            lk.acquire()
        self.assertEqual(cm.exception.code, "ServiceUnavailable")

    def test_network_failure(self):
        def down(*a):
            raise ConnectionRefusedError("refused")
        lk = new_lock(down)
        with self.assertRaises(fencegate.FencegateError) as cm:
            lk.acquire()
        self.assertIsNone(cm.exception.status)


class RenewReleaseTest(unittest.TestCase):
    def test_renew_sends_epoch_and_ttl_and_extends(self):
        clock = Clock()
        proxy = FakeProxy([(200, GRANT), (200, GRANT)])
        lk = new_lock(proxy, clock, ttl=9.0)
        lk.acquire()
        clock.now += 5
        lk.renew()
        self.assertEqual(proxy.calls[1][3], {"epoch": 7, "ttlMs": 9000})
        self.assertEqual(lk.deadline, 1005.0 + 9.0)

    def test_renew_refused_is_lost(self):
        proxy = FakeProxy([(200, GRANT), (409, LOST)])
        lk = new_lock(proxy)
        lk.acquire()
        with self.assertRaises(fencegate.LeaseLost) as cm:
            lk.renew()
        self.assertEqual(cm.exception.current_epoch, 8)
        self.assertTrue(lk.lost.is_set())
        with self.assertRaises(fencegate.LeaseLost):
            lk.check()

    def test_past_deadline_is_lost_without_asking(self):
        clock = Clock()
        proxy = FakeProxy([(200, GRANT)])
        lk = new_lock(proxy, clock, ttl=3.0)
        lk.acquire()
        self.assertEqual(lk.check(), 7)
        clock.now += 3.0
        with self.assertRaises(fencegate.LeaseLost):
            lk.check()
        with self.assertRaises(fencegate.LeaseLost):
            lk.renew()
        self.assertEqual(proxy.ops(), ["acquire"])   # no renewal was sent
        self.assertTrue(lk.lost.is_set())

    def test_a_failed_renewal_keeps_the_lease(self):
        proxy = FakeProxy([(200, GRANT), (503, {"error": "ServiceUnavailable", "message": "x"})])
        lk = new_lock(proxy)
        lk.acquire()
        with self.assertRaises(fencegate.FencegateError):
            lk.renew()
        self.assertFalse(lk.lost.is_set())
        self.assertEqual(lk.check(), 7)

    def test_release(self):
        proxy = FakeProxy([(200, GRANT), (200, dict(GRANT, released=True))])
        lk = new_lock(proxy)
        lk.acquire()
        lk.release()
        self.assertEqual(proxy.calls[1][3], {"epoch": 7})
        self.assertIsNone(lk.deadline)
        with self.assertRaises(fencegate.LeaseLost):
            lk.check()


class WithTest(unittest.TestCase):
    def test_acquires_and_releases(self):
        proxy = FakeProxy([(200, GRANT), (200, GRANT)])
        with new_lock(proxy) as lk:
            self.assertEqual(lk.epoch, 7)
        self.assertEqual(proxy.ops(), ["acquire", "release"])

    def test_lost_inside_raises_at_exit_after_a_quiet_release(self):
        clock = Clock()
        proxy = FakeProxy([(200, GRANT), (409, LOST)])
        with self.assertRaises(fencegate.LeaseLost):
            with new_lock(proxy, clock, ttl=60.0) as lk:
                clock.now += 61.0
        self.assertEqual(proxy.ops(), ["acquire", "release"])   # refused: still LeaseLost
        self.assertTrue(lk.lost.is_set())

    def test_body_exception_wins_and_releases(self):
        proxy = FakeProxy([(200, GRANT), (200, GRANT)])
        with self.assertRaises(KeyError):
            with new_lock(proxy):
                raise KeyError("x")
        self.assertEqual(proxy.ops(), ["acquire", "release"])

    def test_held_raises_on_entry(self):
        with self.assertRaises(fencegate.LockHeld):
            with new_lock(FakeProxy([(409, HELD)])):
                self.fail("entered")


class KeepTest(unittest.TestCase):
    """The renewal thread, on the real monotonic clock with short leases."""

    def real_lock(self, proxy, ttl):
        return fencegate.Lock("http://gate:8080", "jobs", ttl=ttl, credentials=False,
                              transport=proxy)

    def test_renews_every_third_of_the_ttl(self):
        proxy = FakeProxy(fn=lambda op, p: (200, GRANT))
        lk = self.real_lock(proxy, 0.3)
        lk.acquire()
        lk.keep()
        time.sleep(0.75)
        lk.release()
        renews = proxy.ops().count("renew")
        self.assertGreaterEqual(renews, 4)
        self.assertLessEqual(renews, 8)
        self.assertFalse(lk.lost.is_set())

    def test_refused_renewal_sets_lost(self):
        state = {"n": 0}

        def fn(op, p):
            state["n"] += 1
            return (409, LOST) if op == "renew" else (200, GRANT)
        lk = self.real_lock(FakeProxy(fn=fn), 0.3)
        lk.acquire()
        lk.keep()
        self.assertTrue(lk.lost.wait(2.0))
        self.assertIn("renewal refused", lk.lost_reason)

    def test_unreachable_proxy_loses_at_the_deadline(self):
        def fn(op, p):
            if op == "renew":
                return 503, {"error": "ServiceUnavailable", "message": "down"}
            return 200, GRANT
        proxy = FakeProxy(fn=fn)
        lk = self.real_lock(proxy, 0.4)
        t0 = time.monotonic()
        lk.acquire()
        lk.keep()
        self.assertTrue(lk.lost.wait(2.0))
        self.assertGreaterEqual(time.monotonic() - t0, 0.39)
        self.assertIn("deadline", lk.lost_reason)
        self.assertGreaterEqual(proxy.ops().count("renew"), 2)   # it retried
        self.assertIsNotNone(lk.last_error)


@unittest.skipIf(botocore is None, "botocore not installed")
class SigningTest(unittest.TestCase):
    def test_lock_calls_are_sigv4_signed_for_s3(self):
        proxy = FakeProxy([(200, GRANT)])
        lk = fencegate.Lock("http://127.0.0.1:8080", "jobs", holder="w1", region="eu-west-1",
                            credentials=("AKIDTEST", "secret"), transport=proxy)
        lk.acquire()
        headers, body = proxy.calls[0][2], proxy.calls[0][4]
        auth = headers["Authorization"]
        self.assertTrue(auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDTEST/"), auth)
        self.assertIn("/eu-west-1/s3/aws4_request", auth)
        self.assertIn("x-amz-content-sha256", auth.split("SignedHeaders=")[1])
        self.assertEqual(headers["X-Amz-Content-SHA256"], hashlib.sha256(body).hexdigest())


def text(v):
    return v.decode() if isinstance(v, bytes) else v


class RawResponse:
    def stream(self, **_):
        yield b""


@unittest.skipIf(botocore is None, "botocore not installed")
class AttachTest(unittest.TestCase):
    """A real botocore client whose requests a before-send hook answers."""

    def setUp(self):
        import botocore.session
        from botocore.awsrequest import AWSResponse
        self.sent = []
        self.clock = Clock()
        session = botocore.session.Session()
        self.s3 = session.create_client("s3", endpoint_url="http://127.0.0.1:9", region_name="us-east-1",
                                        aws_access_key_id="k", aws_secret_access_key="s")

        def answer(request, **_):
            self.sent.append(request)
            return AWSResponse(request.url, 200, {"ETag": '"e"'}, RawResponse())
        self.lock = new_lock(FakeProxy([(200, GRANT)]), self.clock, ttl=10.0)
        self.lock.acquire()
        self.lock.attach(self.s3)
        self.s3.meta.events.register_last("before-send.s3", answer)

    def test_writes_carry_the_signed_token_and_lock(self):
        self.s3.put_object(Bucket="jobs", Key="k", Body=b"v")
        self.s3.delete_objects(Bucket="jobs", Delete={"Objects": [{"Key": "k"}]})
        self.s3.copy_object(Bucket="jobs", Key="k2", CopySource="jobs/k")
        self.assertEqual(len(self.sent), 3)
        for req in self.sent:
            self.assertEqual(text(req.headers["X-Fencing-Token"]), "7")
            self.assertEqual(text(req.headers["X-Fencing-Lock"]), "jobs")
            signed = text(req.headers["Authorization"]).split("SignedHeaders=")[1]
            self.assertIn("x-fencing-token", signed)
            self.assertIn("x-fencing-lock", signed)

    def test_reads_are_left_alone(self):
        self.s3.head_object(Bucket="jobs", Key="k")
        self.assertNotIn("X-Fencing-Token", self.sent[0].headers)

    def test_past_the_deadline_a_write_is_not_sent(self):
        self.clock.now += 10.0
        with self.assertRaises(fencegate.LeaseLost):
            self.s3.put_object(Bucket="jobs", Key="k", Body=b"v")
        self.assertEqual(self.sent, [])
        self.assertTrue(self.lock.lost.is_set())
        self.s3.head_object(Bucket="jobs", Key="k")   # reads still go
        self.assertEqual(len(self.sent), 1)

    def test_detach(self):
        self.lock.detach(self.s3)
        self.s3.put_object(Bucket="jobs", Key="k", Body=b"v")
        self.assertNotIn("X-Fencing-Token", self.sent[0].headers)


if __name__ == "__main__":
    unittest.main()
