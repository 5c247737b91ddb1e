#!/usr/bin/env python3
"""The self-test's verdict on backends that cannot run here, each played
by a small scripted S3 server (in memory, threaded, on a free loopback
port; it checks no signature) with one flaw of a known backend:

  aws       If-Match on a missing key answers 404, and the first
            conditional write of each key answers 409
            ConditionalRequestConflict (retried)
  minio     DELETE ignores If-Match (deletes anyway)
  racy      If-None-Match is check-then-act with a pause between: racing
            writers all win (SeaweedFS, versitygw posix, rustfs)
  oci       If-None-Match ignored (overwrites)
  b2        conditional writes answered 501 NotImplemented
  quoted    a quoted If-Match answers 412 even when it matches (radosgw 16)

`fencectl check --json` must name each flaw, pass the lock protocol where
it is safe, and say which operations the proxy refuses; and the lock
client must still renew and release where the flaw is only the spelling.
Prints 'N passed, N failed'."""
import email.utils
import hashlib
import http.server
import json
import os
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

FENCECTL = os.path.join(harness.BIN, "fencectl")


class Store:
    def __init__(self, flaw):
        self.flaw = flaw
        self.objects = {}      # path -> (body, etag)
        self.uploads = {}      # upload id -> path
        self.seen_409 = set()
        self.mu = threading.Lock()


def make_handler(store):
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def reply(self, status, body=b"", headers=()):
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def error(self, status, code):
            self.reply(status, ("<Error><Code>%s</Code><Message>%s</Message></Error>"
                                % (code, code)).encode(), [("Content-Type", "application/xml")])

        def body(self):
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n)

        def split(self):
            u = urllib.parse.urlsplit(self.path)
            return u.path, urllib.parse.parse_qs(u.query, keep_blank_values=True)

        def cond_ok(self, path):
            """None when the conditions hold, else the error to answer."""
            inm = self.headers.get("If-None-Match")
            im = self.headers.get("If-Match")
            cur = store.objects.get(path)
            if (inm or im) and store.flaw == "b2":
                return (501, "NotImplemented")
            if (inm or im) and store.flaw == "aws" and path not in store.seen_409:
                store.seen_409.add(path)
                return (409, "ConditionalRequestConflict")
            if inm == "*" and cur is not None and store.flaw != "oci":
                return (412, "PreconditionFailed")
            if im is not None:
                if cur is None:
                    return (404, "NoSuchKey") if store.flaw == "aws" else \
                        (412, "PreconditionFailed")
                want = im if store.flaw == "quoted" else im.strip('"')
                have = cur[1] if store.flaw == "quoted" else cur[1].strip('"')
                if store.flaw == "quoted":
                    have = have.strip('"')  # compares the header as sent
                if want != have:
                    return (412, "PreconditionFailed")
            return None

        def do_HEAD(self):
            path, _ = self.split()
            cur = store.objects.get(path)
            if cur is None:
                return self.error(404, "NoSuchKey")
            self.reply(200, cur[0], [("ETag", cur[1]), ("Last-Modified", cur[2])])

        def do_GET(self):
            path, q = self.split()
            if "list-type" not in q:
                return self.do_HEAD()
            base = path.rstrip("/") + "/"
            prefix = base + q.get("prefix", [""])[0]
            after = base + q.get("start-after", [""])[0]
            keys = sorted(k for k in list(store.objects) if k.startswith(prefix) and k > after)
            items = "".join("<Contents><Key>%s</Key><ETag>%s</ETag><Size>%d</Size>"
                            "<LastModified>2026-01-01T00:00:00.000Z</LastModified></Contents>"
                            % (k[len(base):], store.objects[k][1], len(store.objects[k][0]))
                            for k in keys)
            self.reply(200, ("<ListBucketResult><IsTruncated>false</IsTruncated>"
                             "<KeyCount>%d</KeyCount>%s</ListBucketResult>"
                             % (len(keys), items)).encode(), [("Content-Type", "application/xml")])

        def write(self, path, data):
            etag = '"%s"' % hashlib.md5(data).hexdigest()
            store.objects[path] = (data, etag, email.utils.formatdate(usegmt=True))
            return etag

        def do_PUT(self):
            path, q = self.split()
            data = self.body()
            if "uploadId" in q:
                return self.reply(200, b"", [("ETag", '"%s"' % hashlib.md5(data).hexdigest())])
            src = self.headers.get("x-amz-copy-source")
            if src:
                data = store.objects.get(urllib.parse.unquote(src), (b"",))[0]
            if store.flaw == "racy":
                # check, pause, write: what a store without atomic conditions does
                err = self.cond_ok(path)
                time.sleep(0.05)
                if err:
                    return self.error(*err)
                return self.reply(200, b"", [("ETag", self.write(path, data))])
            with store.mu:
                err = self.cond_ok(path)
                if err:
                    return self.error(*err)
                etag = self.write(path, data)
            self.reply(200, b"", [("ETag", etag)])

        def do_DELETE(self):
            path, q = self.split()
            if "uploadId" in q:
                return self.reply(204)
            with store.mu:
                if store.flaw != "minio":
                    err = self.cond_ok(path)
                    if err:
                        return self.error(*err)
                store.objects.pop(path, None)
            self.reply(204)

        def do_POST(self):
            path, q = self.split()
            data = self.body()
            if "uploads" in q:
                uid = "up%d" % len(store.uploads)
                store.uploads[uid] = path
                return self.reply(200, ("<InitiateMultipartUploadResult><UploadId>%s"
                                        "</UploadId></InitiateMultipartUploadResult>" % uid)
                                  .encode())
            with store.mu:
                err = self.cond_ok(path)
                if err:
                    return self.error(*err)
                self.write(path, data)
            self.reply(200, b"<CompleteMultipartUploadResult/>")
    return H


class Scripted:
    def __init__(self, flaw):
        self.store = Store(flaw)
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(self.store))
        self.srv.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()

    def ctl(self, *args):
        env = dict(os.environ, **harness.CREDS)
        env["AWS_ENDPOINT_URL"] = self.url
        env.pop("FENCE_S3_DIALECT", None)
        return harness.run([FENCECTL, "--store", "s3://bkt"] + list(args), env=env, timeout=60)


def check_json(flaw, want_rc):
    s = Scripted(flaw)
    try:
        p = s.ctl("check", "--json")
        if p.returncode != want_rc:
            raise AssertionError("%s: exit %d, expected %d\n%s\n%s" % (flaw, p.returncode, want_rc,
                                                                       p.stdout, p.stderr))
        return (json.loads(p.stdout) if p.stdout.strip() else None), p.stderr, s
    except BaseException:
        s.close()
        raise


def caps_of(j):
    return {k: v["ok"] for k, v in j["capabilities"].items()}


def test_aws():
    j, err, s = check_json("aws", 0)
    s.close()
    assert j["ok"] and caps_of(j)["put_if_match_quoted"] and caps_of(j)["delete_if_match"], j
    assert all(v == "ok" for v in j["operations"].values()), j["operations"]


def test_minio():
    j, err, s = check_json("minio", 0)
    s.close()
    c = caps_of(j)
    assert j["ok"] and not c["delete_if_match"] and c["put_if_none_match"], j
    assert j["operations"]["delete"] == "backend ignores If-Match on DELETE", j["operations"]
    assert j["operations"]["put"] == "ok" and j["operations"]["lock"] == "ok", j["operations"]
    assert "deleted the object" in j["capabilities"]["delete_if_match"]["seen"], j


def test_racy():
    j, err, s = check_json("racy", 1)
    s.close()
    assert not caps_of(j)["race"], j
    assert "racing" in err and "won a round" in err, err
    assert j["operations"]["lock"].startswith("backend let more than one"), j


def test_oci():
    j, err, s = check_json("oci", 1)
    s.close()
    assert not caps_of(j)["put_if_none_match"], j
    assert "If-None-Match on PUT" in err, err
    assert all(v != "ok" for v in j["operations"].values()), j["operations"]


def test_b2():
    j, err, s = check_json("b2", 1)
    s.close()
    assert j is None and "self-test" in err and "creating probe" in err, err


def test_quoted():
    j, err, s = check_json("quoted", 0)
    try:
        c = caps_of(j)
        assert j["ok"] and j["if_match"] == "bare", j
        assert not c["put_if_match_quoted"] and c["put_if_match_bare"], j
        # the lock client learns the spelling: renew and release work
        p = s.ctl("acquire", "L")
        assert p.returncode == 0, p.stderr
        e = p.stdout.strip()
        for cmd in ("renew", "release"):
            p = s.ctl(cmd, "L", e)
            assert p.returncode == 0, "%s: %s" % (cmd, p.stderr)
    finally:
        s.close()


def main():
    r = harness.Runner("e2e dialects (scripted upstreams)")
    for name, fn in (("aws: 404 on a missing If-Match, 409 retried", test_aws),
                     ("minio: DELETE If-Match ignored", test_minio),
                     ("racy: two racing writers win", test_racy),
                     ("oci: If-None-Match ignored", test_oci),
                     ("b2: NotImplemented", test_b2),
                     ("quoted If-Match refused (radosgw 16)", test_quoted)):
        r.check(name, fn)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
