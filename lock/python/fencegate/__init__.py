"""fencegate: the lock client for workers that write through a fencegate
proxy. `Lock` takes a lease (an epoch, the fencing token) from the proxy's
lock HTTP API, renews it on a thread and knows its end by the monotonic
clock; `lock.attach(s3_client)` puts the token on every write of a boto3
client and refuses to send one once the lease is gone.

    with fencegate.Lock("http://127.0.0.1:8080", "invoices") as lock:
        s3 = lock.attach(boto3.client("s3", endpoint_url=...))
        ...  # reads and writes; a zombie's write never lands
"""
from .errors import FencegateError, LeaseLost, LockHeld
from .lock import Lock

__all__ = ["Lock", "FencegateError", "LockHeld", "LeaseLost"]
__version__ = "0.1.0"
