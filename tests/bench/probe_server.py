#!/usr/bin/env python3
"""A tiny stateful S3 responder for the bench's backend self-test keys
and the locks' epoch marks (fencing-marks/LOCK/high-water.json).

fencegate refuses a store that ignores conditional writes: it creates a
probe key twice with If-None-Match: * and needs 412 the second time, and
writes and deletes it with a wrong If-Match expecting 412. The nginx stand-in forwards
only those probe keys here; it carries none of the measured traffic.
Usage: probe_server.py PORT (listens on 127.0.0.1 only).
"""
import hashlib
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

OBJECTS = {}
LOCK = threading.Lock()


def s3_error(code, message):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code>'
            '<Message>%s</Message></Error>' % (code, message)).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # head and body leave in two writes: without this, Nagle and the
    # peer's delayed ACK hold every answer ~40 ms
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):
        # a handful of requests per run: keep them for BENCH_KEEP=1
        sys.stderr.write("probe: %s\n" % (fmt % args))

    def reply(self, status, body=b"", headers=None):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if status not in (204, 304):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def do_PUT(self):
        data = self.body()
        key = self.path.split("?", 1)[0]
        inm = self.headers.get("If-None-Match")
        im = self.headers.get("If-Match")
        with LOCK:
            cur = OBJECTS.get(key, (None, b""))[0]
            if inm is not None and cur is not None:
                return self.reply(412, s3_error("PreconditionFailed", "key exists"))
            if im is not None:
                if cur is None:
                    return self.reply(404, s3_error("NoSuchKey", "no such key"))
                if im != cur and im != "*":
                    return self.reply(412, s3_error("PreconditionFailed", "etag"))
            etag = '"%s"' % hashlib.md5(data).hexdigest()
            OBJECTS[key] = (etag, data)
        self.reply(200, b"", {"ETag": etag})

    def do_GET(self):
        key = self.path.split("?", 1)[0]
        with LOCK:
            cur, data = OBJECTS.get(key, (None, b""))
        if cur is None:
            return self.reply(404, s3_error("NoSuchKey", "no such key"))
        self.reply(200, data, {"ETag": cur})

    do_HEAD = do_GET

    def do_DELETE(self):
        key = self.path.split("?", 1)[0]
        im = self.headers.get("If-Match")
        with LOCK:
            cur = OBJECTS.get(key, (None, b""))[0]
            if im is not None:
                if cur is None:
                    return self.reply(404, s3_error("NoSuchKey", "no such key"))
                if im != cur:
                    return self.reply(412, s3_error("PreconditionFailed", "etag"))
            OBJECTS.pop(key, None)
        self.reply(204)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
