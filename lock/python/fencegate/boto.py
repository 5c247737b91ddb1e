"""lock.attach(client) for boto3/botocore S3 clients: two event hooks. On
before-call of an object write, the X-Fencing-Token header (and
X-Fencing-Lock) join the request's headers, so SigV4 signs them; on
before-send (each attempt, retries included) a write whose lease is lost or
past its deadline raises LeaseLost instead of going out. Reads are left
alone. It does not decide anything about fencing: the proxy does."""

# The S3 operations that change an object (the proxy fences them).
WRITES = frozenset([
    "PutObject", "CopyObject", "DeleteObject", "DeleteObjects",
    "CreateMultipartUpload", "UploadPart", "UploadPartCopy",
    "CompleteMultipartUpload", "AbortMultipartUpload",
    "PutObjectTagging", "DeleteObjectTagging", "PutObjectAcl",
    "PutObjectRetention", "PutObjectLegalHold", "RestoreObject",
])

TOKEN = "X-Fencing-Token"


def _ids(lock):
    return ("fencegate-token-%x" % id(lock), "fencegate-check-%x" % id(lock))


def attach(lock, client, lock_name=True):
    sigver = getattr(client.meta.config, "signature_version", None)
    if sigver in ("s3", "v2"):
        raise ValueError("lock.attach needs a SigV4 client (SigV2 does not sign X-Fencing-Token)")

    def add_token(params, model, **_):
        if model.name not in WRITES:
            return
        epoch = lock.check()
        headers = params.setdefault("headers", {})
        headers[TOKEN] = str(epoch)
        if lock_name:
            headers["X-Fencing-Lock"] = lock.name

    def recheck(request, **_):
        if request.headers.get(TOKEN) is not None:
            lock.check()

    call_id, send_id = _ids(lock)
    client.meta.events.register("before-call.s3", add_token, unique_id=call_id)
    client.meta.events.register("before-send.s3", recheck, unique_id=send_id)
    return client


def detach(lock, client):
    call_id, send_id = _ids(lock)
    client.meta.events.unregister("before-call.s3", unique_id=call_id)
    client.meta.events.unregister("before-send.s3", unique_id=send_id)
