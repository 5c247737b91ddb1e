#!/usr/bin/env python3
"""End-to-end: a DeleteObjects naming plain keys (no <VersionId>) whose
epoch is superseded while the batch runs is refused key by key.

delete_one (proxy/fence/fencing_delete.c) deletes each plain key as a
fenced DELETE does (HEAD, refuse if written under a newer epoch, DELETE
If-Match), and between the HEAD and the DELETE asks superseded(): once the
lock has moved past the request's token, every key it reaches is refused
FencingTokenStale instead of deleted under an epoch that is no longer the
lock's. The objects here carry no newer epoch (moto's are written
directly, the embedded store's under the token itself), so that check
alone refuses them: without it every key would be deleted.
test_delete_versions.py does the same for keys named with a version
(delete_version); its race driver and answer check are reused here.

Two backends, each checked on its storage read directly:
- S3 mode in front of moto, behind tests/relay.py delaying every chunk
  (an unversioned bucket with its own lock): the lock moves once the relay
  has carried PLAIN_STARTED of the batch's DELETEs;
- the embedded store (no --upstream, a data directory): the batch is held
  at one key by the store's own per-key lock, taken by the test as another
  process would take it, and the lock moves while it is held, so the split
  is exact.
Prints 'N passed, N failed'."""
import fcntl
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from relay import Relay  # noqa: E402
from test_clients_s3 import boto3_client as client  # noqa: E402
from test_delete_versions import (RACE_DELAY_S, acquire, carried,  # noqa: E402
                                  superseded_answer, supersede_mid_batch)

PBUCKET = "plain-race"      # on moto, unversioned, its own lock
PLAIN_KEYS = 100            # one DeleteObjects (at most 1000)
PLAIN_STARTED = 15          # keys deleted upstream before the lock moves
EBUCKET = "plain-local"     # on the embedded store
LOCAL_KEYS = 40
LOCAL_HELD = 10             # the batch is held at the first free key from here


def body(key):
    return ("the body of %s\n" % key).encode()


def moto_objects(m, bucket, prefix):
    """Sorted (key, ETag, size) of every object under prefix, read from moto."""
    out, kw = [], {"Bucket": bucket, "Prefix": prefix}
    while True:
        page = m.list_objects_v2(**kw)
        out += [(o["Key"], o["ETag"], o["Size"]) for o in page.get("Contents", [])]
        if not page.get("IsTruncated"):
            return sorted(out)
        kw["ContinuationToken"] = page["NextContinuationToken"]


def t_s3():
    """A worker holding epoch E sends one DeleteObjects naming PLAIN_KEYS
    keys through a proxy whose upstream (moto) is behind a relay delaying
    every chunk by RACE_DELAY_S: each key costs a HEAD and a DELETE If-Match
    (README's cost table), tens of milliseconds, the batch seconds. Once the
    relay has carried PLAIN_STARTED of the batch's DELETEs, E's lease is
    released and E+1 acquired through the lock API, and the delay lifted
    (the rest of the batch need not be slow); the move lands mid-batch by
    construction, and the test says so if it did not.

    On moto itself: every key answered Deleted is gone, every one answered
    FencingTokenStale is still there with its body, nothing else under the
    prefix changed. On the relay: one DELETE (with If-Match) per Deleted
    key, in batch order, each after that key's HEAD, none for a refused
    key, at most one sent after the acquire answered (a key whose check
    passed just before the mark rose)."""
    moto = harness.Moto()
    relay = g = None
    try:
        m = moto.client()
        m.create_bucket(Bucket=PBUCKET)
        keys = ["plain/%03d" % i for i in range(PLAIN_KEYS)]
        for k in keys:
            m.put_object(Bucket=PBUCKET, Key=k, Body=body(k))
        held = moto_objects(m, PBUCKET, "plain/")
        assert [o[0] for o in held] == keys, held[:3]
        batch = [{"Key": k} for k in keys]
        relay = Relay(moto.port)
        g = harness.Fencegate("--upstream", relay.url, data=False)
        e1 = acquire(g, PBUCKET)

        def deletes():
            return carried(relay, ("DELETE",), PBUCKET, "plain/", False)

        seen = {}

        def moved():
            seen["learned"] = len(deletes())
            relay.delay = 0  # the move is in: the rest need not be slow

        relay.delay = RACE_DELAY_S
        e2, batch_running, res = supersede_mid_batch(
            g, PBUCKET, e1, batch, lambda: len(deletes()) >= PLAIN_STARTED, moved)
        sent, learned = deletes(), seen["learned"]
        ops = [(h[0], h[1].split("?")[0])
               for h in carried(relay, ("HEAD", "DELETE"), PBUCKET, "plain/", False)]
        deleted, stale = superseded_answer(res, batch)
        print("     epoch %d superseded by %d after %d deletes; answer: %d deleted, "
              "%d FencingTokenStale; upstream HEADs %d, DELETEs %d, %d after the "
              "acquire answered" % (e1, e2, learned, len(deleted), len(stale),
                                    len(ops) - len(sent), len(sent), len(sent) - learned))
        assert batch_running, "the acquire answered after the batch had ended"
        assert stale, "no key refused stale: the batch went on under a superseded epoch"
        assert len(deleted) >= PLAIN_STARTED, len(deleted)
        assert max(deleted) < min(stale), "a key deleted after one was refused"
        # on moto: the Deleted are gone, the refused still there with their
        # bodies, nothing else under the prefix changed
        gone = {keys[i] for i in deleted}
        assert moto_objects(m, PBUCKET, "plain/") == [o for o in held if o[0] not in gone]
        for i in stale:
            assert m.get_object(Bucket=PBUCKET, Key=keys[i])["Body"].read() == body(keys[i])
        # upstream: each Deleted key a HEAD then a DELETE If-Match, in batch
        # order; then at most HEADs of refused keys, once each, in order; no
        # DELETE once the move was learned but the one whose check may have
        # passed just before
        def path(i):
            return "/%s/%s" % (PBUCKET, keys[i])
        n = len(deleted)
        assert ops[:2 * n] == [op for i in deleted
                               for op in (("HEAD", path(i)), ("DELETE", path(i)))], ops[:4]
        assert ops[2 * n:] == [("HEAD", path(i)) for i in stale[:len(ops) - 2 * n]], \
            "after the last Deleted key, more than refused keys' HEADs: %s" % ops[2 * n:][:4]
        assert all(dict(h[2]).get("if-match") for h in sent), "a DELETE without If-Match"
        assert len(sent) - learned <= 1, "%d deletes sent after the acquire answered" % (
            len(sent) - learned)
    finally:
        if relay:
            relay.delay = 0
        if g:
            g.close()
        if relay:
            relay.close()
        moto.close()


def lock_file(key):
    """The name of the embedded store's per-key lock file for key, under
    BUCKET/.fencegate/locks/ (lock/store/store_fs.c key_hash: FNV-1a from
    its own start value, modulo FS_LOCK_FILES = 256). Taking it with flock
    is what another process writing key does."""
    # store_fs.c's start value: FNV's offset basis (14695981039346656037)
    # without its last digit; the store's names are what the test needs
    h = 1469598103934665603
    for c in key.encode():
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%02x" % (h % 256)


def stored(root, prefix):
    """{key: body} of every object file under root/prefix, read from disk."""
    out = {}
    for d, _, files in os.walk(os.path.join(root, prefix)):
        for name in files:
            path = os.path.join(d, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = f.read()
    return out


def t_embedded():
    """The same batch on the embedded store, made exact: the test holds the
    store's lock file (flock LOCK_EX) of key H, the first key from
    LOCAL_HELD on whose lock file no earlier key of the batch and no lock
    operation falls. The batch deletes the keys before H, then waits in
    H's HEAD; once those are gone from disk the lock moves, then the flock
    is released. So the keys before H are Deleted and H and every key after
    it FencingTokenStale, each still on disk with its body."""
    g = harness.Fencegate()
    held = {}
    try:
        client(g).create_bucket(Bucket=EBUCKET)
        e1 = acquire(g, EBUCKET)
        root = os.path.join(g.data, EBUCKET)
        locks = os.path.join(root, ".fencegate", "locks")
        # the lock files the lock protocol took so far, and those of the
        # next epochs' lock files (README: locks/BUCKET/lock-...)
        busy = set(os.listdir(locks)) | {lock_file("locks/%s/lock-%010d.json" % (EBUCKET, e))
                                         for e in range(e1, e1 + 3)}
        keys = ["plain/%03d" % i for i in range(LOCAL_KEYS)]
        c = client(g, e1)
        before = set(os.listdir(locks))
        for k in keys:
            c.put_object(Bucket=EBUCKET, Key=k, Body=body(k))
        assert stored(root, "plain") == {k: body(k) for k in keys}
        # the writes took the lock files of their keys and of "plain", and
        # no other: lock_file() names them as the store does
        assert set(os.listdir(locks)) - before == \
            {lock_file(k) for k in keys + ["plain"]} - before, "lock_file() is not the store's"
        h = next(i for i in range(LOCAL_HELD, LOCAL_KEYS)
                 if lock_file(keys[i]) not in busy | {lock_file(k) for k in keys[:i]})
        fd = os.open(os.path.join(locks, lock_file(keys[h])), os.O_RDWR | os.O_CREAT, 0o644)
        held["fd"] = fd
        fcntl.flock(fd, fcntl.LOCK_EX)

        def release():
            os.close(held.pop("fd"))

        e2, batch_running, res = supersede_mid_batch(
            g, EBUCKET, e1, [{"Key": k} for k in keys],
            lambda: not any(os.path.exists(os.path.join(root, k)) for k in keys[:h]),
            release)
        deleted, stale = superseded_answer(res, [{"Key": k} for k in keys])
        print("     epoch %d superseded by %d while the batch waited at key %d; answer: "
              "%d deleted, %d FencingTokenStale" % (e1, e2, h, len(deleted), len(stale)))
        assert batch_running, "the batch was not held at key %d" % h
        assert deleted == list(range(h)), "deleted: %s" % deleted
        assert stale == list(range(h, LOCAL_KEYS)), "refused: %s" % stale
        # on disk: the keys before H gone, H and the rest there with bodies
        assert stored(root, "plain") == {k: body(k) for k in keys[h:]}
    finally:
        if "fd" in held:
            os.close(held.pop("fd"))
        g.close()


def main():
    r = harness.Runner("e2e delete-plain")
    r.check("S3 mode on moto: a plain-key batch whose epoch is superseded while it "
            "runs deletes the keys before the move, refuses the rest FencingTokenStale "
            "(moto keeps them)", t_s3)
    r.check("embedded store: the same batch held at one key by the store's key lock "
            "while the lock moves: the keys before it deleted, it and the rest refused",
            t_embedded)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
