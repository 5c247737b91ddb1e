"""A TCP relay the tests put between fencegate and its upstream (moto,
radosgw), on a free 127.0.0.1 port, in threads the test bounds.

It records the head of every request it carries (moto closes after each
response, so a connection carries one request): the request line in
`lines` and (method, target, [(name, value), ...]) in `heads`, names
lowercased, before the upstream sees a byte of it. It can turn silent
(`silent = True`): connections are taken and their bytes read, nothing is
answered, until `loud()` or `close()`: S3 that accepts and never answers.
For the fault harness (tests/chaos/) it can also delay every chunk it
forwards (`delay` seconds), black-hole a share of new connections like
silence (`drop`, a probability), and reset a share of connections once
their answer starts (`reset_share`: the request reached the upstream, the
answer is lost); `record=False` keeps nothing; `host`/`target_host` bind
and connect elsewhere than loopback (a veth address). Standard library
only."""
import random
import socket
import threading
import time


class Relay:
    def __init__(self, target_port, host="127.0.0.1", target_host="127.0.0.1", record=True):
        self.target = target_port
        self.target_host = target_host
        self.record = record
        self.delay = 0.0
        self.drop = 0.0
        self.reset_share = 0.0  # not `reset`: that is the method below
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.url = "http://%s:%d" % (host, self.port)
        self.lock = threading.Lock()
        self.lines = []
        self.heads = []
        self.silent = False
        self.held = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    # ---- what was carried --------------------------------------------------

    def count(self):
        with self.lock:
            return len(self.lines)

    def reset(self):
        with self.lock:
            self.lines = []
            self.heads = []

    def take(self):
        """The heads recorded since the last take or reset, and forgets them."""
        with self.lock:
            out = self.heads
            self.lines, self.heads = [], []
        return out

    def to_path(self, path):
        """The request lines seen for path (query ignored): a worker that
        had not loaded a lock yet may list it, which is not a write."""
        with self.lock:
            return [ln for ln in self.lines if ln.split(" ")[1].split("?")[0] == path]

    # ---- silence -----------------------------------------------------------

    def loud(self):
        self.silent = False
        for c in self.held:
            c.close()
        self.held = []

    def close(self):
        self.closed = True
        self.loud()
        self.sock.close()

    # ---- the threads -------------------------------------------------------

    def _record(self, head):
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        fields = [(n.strip().lower(), v.strip()) for n, v in
                  (ln.split(":", 1) for ln in lines[1:] if ":" in ln)]
        with self.lock:
            self.lines.append(lines[0])
            self.heads.append((parts[0], parts[1] if len(parts) > 1 else "", fields))

    def _pipe(self, src, dst, record, cut=False):
        buf = b""
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if cut:  # the answer started: reset both sides, drop it
                    for s in (src, dst):
                        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
                        s.close()
                    return
                if record and b"\r\n\r\n" not in buf:
                    buf += data
                    if b"\r\n\r\n" in buf:
                        self._record(buf.split(b"\r\n\r\n", 1)[0])
                if self.delay:
                    time.sleep(self.delay)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def _swallow(self, c):
        try:
            while not self.closed and c.recv(65536):
                pass
        except OSError:
            pass

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            if self.silent or (self.drop and random.random() < self.drop):
                self.held.append(c)
                threading.Thread(target=self._swallow, args=(c,), daemon=True).start()
                continue
            try:
                u = socket.create_connection((self.target_host, self.target))
            except OSError:
                c.close()
                continue
            cut = bool(self.reset_share and random.random() < self.reset_share)
            threading.Thread(target=self._pipe, args=(c, u, self.record), daemon=True).start()
            threading.Thread(target=self._pipe, args=(u, c, False, cut), daemon=True).start()
