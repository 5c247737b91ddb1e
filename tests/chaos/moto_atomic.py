#!/usr/bin/env python3
"""moto_server with its PutObject handled one at a time, for the chaos
harness (tests/chaos/cluster.py).

moto checks a PUT's If-None-Match / If-Match and then stores the object
in two steps on one of its request threads, so two concurrent conditional
creates of one key can both answer 200 (3 pairs in 3,000 in a run here;
the later body wins). S3 makes the check and the write one step, and the
lock protocol relies on it: on stock moto the checker once saw an epoch
granted twice, both grants made by moto. Serialising the handler (the
body was read before it runs, so no network wait is held) gives moto the
atomic conditional create that S3 has, and the harness then judges
fencegate, not the mock. Everything else is moto_server as it is; the
arguments are moto_server's."""
import sys
import threading

from moto.s3.responses import S3Response
from moto.server import main

_one_put = threading.Lock()
_put_object = S3Response.put_object


def put_object(self):
    with _one_put:
        return _put_object(self)


S3Response.put_object = put_object

if __name__ == "__main__":
    sys.exit(main())
