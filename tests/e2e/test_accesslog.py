#!/usr/bin/env python3
"""End-to-end: the access log's fields, request by request.

fencegate -c CONFIG on the embedded store with authentication on writes its
access log to a file; each request below is sent with http.client (so the
test knows its local port) and its line is found and checked field by field
(README "Access log"): remoteAddr is the client's address and port,
accessKey the key that signed it ("-" when it was not authenticated, even a
refused request of a known key shows the key), userAgent, path (the lock
API's /_fence/ path, so acquire and release can be told apart), query (a
presigned URL's signature redacted), bytesIn/bytesOut and durationMs. In
HTTP mode accessKey is the bearer client's name."""
import http.client
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

BUCKET = "logbkt"
WRITER = ("AKIDLOGWRITER001", "log-writer-secret-1")
READER = ("AKIDLOGREADER001", "log-reader-secret-1")
AGENT = "fencegate-e2e/1.0 (access log; \"quoted\")"


def config(dirpath, access):
    clients = []
    for creds, actions in ((WRITER, ["read", "write", "lock"]), (READER, ["read"])):
        secret = os.path.join(dirpath, creds[0] + ".secret")
        with open(secret, "w") as f:
            f.write(creds[1] + "\n")
        clients.append({"access_key": creds[0], "secret_file": secret,
                        "allow": [{"prefix": "/" + BUCKET, "actions": actions}]})
    return {"unrouted_writes": "bucket_lock",
            "locks": [{"name": BUCKET, "store": "s3://" + BUCKET,
                       "prefix": "locks/%s/lock-" % BUCKET}],
            "clients": clients, "log": {"access_log": access}}


def signed(g, creds, method, path, body=b"", extra=None):
    """SigV4 headers, extra headers signed too (a write's X-Fencing-Token
    must be signed)."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method=method, url=g.url + path, data=body, headers=dict(extra or {}))
    S3SigV4Auth(Credentials(*creds), "s3", "us-east-1").add_auth(req)
    return dict(req.headers.items())


def presigned_path(g, creds, path):
    from botocore.auth import S3SigV4QueryAuth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method="GET", url=g.url + path)
    S3SigV4QueryAuth(Credentials(*creds), "s3", "us-east-1", expires=300).add_auth(req)
    return req.url[len(g.url):]


class Client:
    """One request on its own connection: status, body and local port."""

    def __init__(self, g, method, path, body=b"", headers=None):
        c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=10)
        try:
            c.connect()
            self.local = "127.0.0.1:%d" % c.sock.getsockname()[1]
            h = dict(headers or {})
            h["User-Agent"] = AGENT
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            self.status, self.body = r.status, r.read()
        finally:
            c.close()


def line_of(access, client):
    """The one access-log line of the request client sent (its port is
    unique while the test runs)."""
    def find():
        with open(access) as f:
            lines = [json.loads(x) for x in f if x.strip()]
        return [e for e in lines if e["remoteAddr"] == client.local]
    found = harness.wait_for("access-log line from %s" % client.local, find)
    assert len(found) == 1, found
    return found[0]


def check_common(e, client, method, path, query=None):
    assert e["method"] == method and e["path"] == path, e
    assert e["query"] == query, e
    assert e["userAgent"] == AGENT, e
    assert e["status"] == client.status, (e, client.status)
    assert e["bytesOut"] == len(client.body), (e, len(client.body))
    assert isinstance(e["durationMs"], float) and e["durationMs"] >= 0, e
    assert e["requestId"].startswith("req-") and e["time"].endswith("Z"), e


def t_signed_list(g, access):
    path = "/%s?list-type=2&prefix=a%%2Fb" % BUCKET
    c = Client(g, "GET", path, headers=signed(g, WRITER, "GET", path))
    assert c.status == 200, (c.status, c.body)
    e = line_of(access, c)
    check_common(e, c, "GET", "/" + BUCKET, "list-type=2&prefix=a%2Fb")
    assert e["accessKey"] == WRITER[0] and e["bytesIn"] == 0, e
    assert e["bucket"] == BUCKET, e


def t_lock_api_paths(g, access):
    body = b'{"ttlMs":60000,"holder":"log-e2e"}'
    path = "/_fence/locks/%s/acquire" % BUCKET
    acq = Client(g, "POST", path, body, signed(g, WRITER, "POST", path, body))
    assert acq.status == 200, (acq.status, acq.body)
    epoch = json.loads(acq.body)["epoch"]
    e = line_of(access, acq)
    check_common(e, acq, "POST", path)
    assert e["accessKey"] == WRITER[0] and e["bytesIn"] == len(body), e
    assert e["verdict"] == "lock_api" and e["bucket"] is None, e

    body = json.dumps({"epoch": epoch}).encode()
    path = "/_fence/locks/%s/release" % BUCKET
    rel = Client(g, "POST", path, body, signed(g, WRITER, "POST", path, body))
    assert rel.status == 200, (rel.status, rel.body)
    e = line_of(access, rel)
    check_common(e, rel, "POST", path)
    assert e["bytesIn"] == len(body), e


def t_put_bytes(g, access):
    body = b"x" * 1234
    path = "/%s/reports/r1.txt" % BUCKET
    token = Client(g, "POST", "/_fence/locks/%s/acquire" % BUCKET, b'{"ttlMs":60000}',
                   signed(g, WRITER, "POST", "/_fence/locks/%s/acquire" % BUCKET,
                          b'{"ttlMs":60000}'))
    assert token.status == 200, (token.status, token.body)
    epoch = json.loads(token.body)["epoch"]
    h = signed(g, WRITER, "PUT", path, body, {"X-Fencing-Token": str(epoch)})
    c = Client(g, "PUT", path, body, h)
    assert c.status == 200, (c.status, c.body)
    e = line_of(access, c)
    check_common(e, c, "PUT", path)
    assert e["bytesIn"] == 1234 and e["key"] == "reports/r1.txt", e
    assert e["presentedEpoch"] == epoch and e["verdict"] == "forward", e


def t_not_authenticated(g, access):
    anon = Client(g, "GET", "/%s/reports/r1.txt" % BUCKET)
    assert anon.status == 403, anon.status
    e = line_of(access, anon)
    check_common(e, anon, "GET", "/%s/reports/r1.txt" % BUCKET)
    assert e["accessKey"] == "-", e

    path = "/%s/reports/r1.txt" % BUCKET
    bad = Client(g, "GET", path, headers=signed(g, (WRITER[0], "wrong-secret"), "GET", path))
    assert bad.status == 403, bad.status
    assert line_of(access, bad)["accessKey"] == "-"


def t_refused_known_key(g, access):
    path = "/%s/reports/r2.txt" % BUCKET
    h = signed(g, READER, "PUT", path, b"no", {"X-Fencing-Token": "1"})
    c = Client(g, "PUT", path, b"no", h)
    assert c.status == 403, (c.status, c.body)
    e = line_of(access, c)
    assert e["accessKey"] == READER[0] and e["status"] == 403, e


def t_presigned_redacted(g, access):
    path = presigned_path(g, READER, "/%s/reports/r1.txt" % BUCKET)
    signature = path.split("X-Amz-Signature=", 1)[1].split("&", 1)[0]
    c = Client(g, "GET", path)
    assert c.status == 200 and c.body == b"x" * 1234, (c.status, c.body[:200])
    e = line_of(access, c)
    assert e["accessKey"] == READER[0], e
    assert "X-Amz-Signature=REDACTED" in e["query"], e
    assert "X-Amz-Credential=" + READER[0] in e["query"], e
    with open(access) as f:
        assert signature not in f.read(), "the presigned signature reached the log"


def t_http_mode_client_name():
    from test_auth import Downstream
    down = Downstream()
    tmp = harness.TempDir()
    g = None
    try:
        access = os.path.join(tmp.path, "access.log")
        token = os.path.join(tmp.path, "worker.token")
        with open(token, "w") as f:
            f.write("tok-log-worker-0123456789\n")
        g = harness.Fencegate(data=False, config={
            "mode": "http", "upstream": {"endpoint": down.url},
            "lock_store": "file://" + tmp.path,
            "locks": [{"name": "jobs", "store": "file://" + tmp.path,
                       "prefix": "locks/jobs/lock-"}],
            "routes": [{"prefix": "/api/", "lock": "jobs"}],
            "clients": [{"name": "worker-7", "token_file": token,
                         "allow": [{"prefix": "/api/", "actions": ["read"]}]}],
            "log": {"access_log": access}})
        c = Client(g, "GET", "/api/items?page=2",
                   headers={"Authorization": "Bearer tok-log-worker-0123456789"})
        assert c.status == 200, (c.status, c.body)
        e = line_of(access, c)
        check_common(e, c, "GET", "/api/items", "page=2")
        assert e["accessKey"] == "worker-7", e
        with open(access) as f:
            assert "tok-log-worker" not in f.read(), "the bearer token reached the log"
    finally:
        if g:
            g.close()
        down.close()
        tmp.close()


def main():
    r = harness.Runner("e2e accesslog")
    tmp = harness.TempDir()
    access = os.path.join(tmp.path, "access.log")
    g = harness.Fencegate(config=config(tmp.path, access))
    try:
        os.makedirs(os.path.join(g.data, BUCKET), exist_ok=True)
        r.check("signed list: address, access key, user agent, query, bytes, duration",
                t_signed_list, g, access)
        r.check("lock API: acquire and release logged with their /_fence/ paths",
                t_lock_api_paths, g, access)
        r.check("fenced PUT: bytesIn, key, epoch, verdict", t_put_bytes, g, access)
        r.check("anonymous and wrongly signed: accessKey \"-\"", t_not_authenticated, g, access)
        r.check("refused but authenticated: the key is logged", t_refused_known_key, g, access)
        r.check("presigned GET: signature redacted in the query", t_presigned_redacted, g,
                access)
    finally:
        g.close()
        tmp.close()
    r.check("http mode: the bearer client's name as accessKey", t_http_mode_client_name)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
