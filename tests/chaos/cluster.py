"""The chaos harness's cluster (tests/chaos/): one storage server (moto
with its conditional creates made atomic, moto_atomic.py, or radosgw with
BACKEND=rgw), 2-3 bin/fencegate replicas in S3 mode in front
of it, each through its own fault-injecting relay (tests/relay.py), and,
where network namespaces work (root), the last replica inside a namespace
of its own joined to the host by a veth pair, so iptables in that
namespace can cut it from storage while workers still reach it.

Everything is created on start and removed by close(), also after a
failure (the driver calls close() from `finally` and on SIGINT/SIGTERM):
processes stopped by their PIDs, the namespace and veth deleted (the
iptables rules live and die in the namespace). It injects no fault itself
(faults.py does) and judges nothing."""
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import harness  # noqa: E402
from relay import Relay  # noqa: E402

REFRESH_MS = 100          # --lock-refresh: the staleness a write may be decided on
UPSTREAM_TIMEOUT = "1s"   # silence resolves as 504 within this


def wait_addr(host, port, proc=None, timeout=15.0):
    """Returns once host:port accepts a connection; RuntimeError otherwise."""
    import socket
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("process exited with %s before listening" % proc.returncode)
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("nothing listens on %s:%d after %.0fs" % (host, port, timeout))


def sh(*argv):
    """Runs a command; returns True when it exited 0."""
    return subprocess.run(argv, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


class Netns:
    """A network namespace and a veth pair: host side HOST_IP, namespace
    side NS_IP (a /30 of 10.231.0.0/16 chosen from our PID). create()
    returns False (and leaves nothing) where this is not allowed."""

    def __init__(self):
        pid = os.getpid()
        self.name = "fgchaos%d" % pid
        self.host_if, self.ns_if = "fgc%dh" % pid, "fgc%dn" % pid
        sub = pid % 16000
        base = "10.231.%d." % (sub // 64)
        off = (sub % 64) * 4
        self.host_ip, self.ns_ip = base + str(off + 1), base + str(off + 2)
        self.made = False
        self.rules = []

    def create(self):
        if os.geteuid() != 0 or not sh("ip", "netns", "add", self.name):
            return False
        self.made = True
        ok = (sh("ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if)
              and sh("ip", "link", "set", self.ns_if, "netns", self.name)
              and sh("ip", "addr", "add", self.host_ip + "/30", "dev", self.host_if)
              and sh("ip", "link", "set", self.host_if, "up")
              and self.run("ip", "addr", "add", self.ns_ip + "/30", "dev", self.ns_if)
              and self.run("ip", "link", "set", self.ns_if, "up")
              and self.run("ip", "link", "set", "lo", "up")
              # fencegate without clients listens on loopback only: the
              # namespace's loopback, reached from the host through NS_IP
              and self.run("sysctl", "-qw", "net.ipv4.conf.all.route_localnet=1")
              and self.run("iptables", "-t", "nat", "-A", "PREROUTING", "-d", self.ns_ip,
                           "-p", "tcp", "-j", "DNAT", "--to-destination", "127.0.0.1"))
        if not ok:
            self.close()
        return ok

    def run(self, *argv):
        return sh("ip", "netns", "exec", self.name, *argv)

    def prefix(self):
        return ["ip", "netns", "exec", self.name]

    def cut(self, port):
        """Drops TCP between the namespace and HOST_IP:port both ways."""
        rules = [["OUTPUT", "-d", self.host_ip, "-p", "tcp", "--dport", str(port), "-j", "DROP"],
                 ["INPUT", "-s", self.host_ip, "-p", "tcp", "--sport", str(port), "-j", "DROP"]]
        for r in rules:
            if not self.run("iptables", "-I", *r):
                raise RuntimeError("iptables -I %s failed in %s" % (" ".join(r), self.name))
            self.rules.append(r)

    def heal(self):
        while self.rules:
            self.run("iptables", "-D", *self.rules.pop())

    def close(self):
        if self.made:
            self.heal()
            sh("ip", "netns", "del", self.name)
            sh("ip", "link", "del", self.host_if)   # gone with the namespace already
            self.made = False


class Replica:
    """One fencegate in S3 mode on host:port, its upstream a relay."""

    def __init__(self, index, host, relay, run_dir, netns=None):
        self.index = index
        self.host = host
        self.listen = "127.0.0.1" if netns is not None else host
        self.port = harness.free_port() if netns is None else 18000 + index
        self.relay = relay
        self.netns = netns
        self.url = "http://%s:%d" % (host, self.port)
        self.log = os.path.join(run_dir, "replica%d.log" % index)
        self.proc = None
        self.restarts = 0
        self.closed = False

    def start(self, wait=True):
        if self.closed:
            raise RuntimeError("replica %d: the cluster is closing" % self.index)
        argv = [os.path.join(harness.BIN, "fencegate"), "--listen",
                "%s:%d" % (self.listen, self.port), "--upstream", self.relay.url,
                "--workers", "1", "--store-threads", "2",
                "--lock-refresh", "%dms" % REFRESH_MS, "--upstream-timeout", UPSTREAM_TIMEOUT,
                "--connect-timeout", "1s", "--access-log", "off", "--log-level", "warn"]
        if self.netns is not None:
            argv = self.netns.prefix() + argv
        with open(self.log, "ab") as err:
            self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err,
                                         env=dict(os.environ, **harness.CREDS))
        if self.closed:          # close() ran meanwhile (a fault thread)
            harness.stop(self.proc, timeout=5)
        elif wait:
            self.wait_ready()

    def wait_ready(self, timeout=20.0):
        wait_addr(self.host, self.port, self.proc, timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/_fence/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except (OSError, urllib.error.HTTPError):
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("replica %d not ready (see %s)" % (self.index, self.log))

    def kill9(self):
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, 9)
            self.proc.wait()

    def close(self):
        self.closed = True
        harness.stop(self.proc, timeout=5)


class Cluster:
    def __init__(self, run_dir, backend="moto", replicas=3, lanes=3, use_netns=True):
        self.run_dir = run_dir
        self.relays, self.replicas, self.netns = [], [], None
        self.buckets = ["chaos-lane%d" % i for i in range(lanes)]
        self.storage = None
        try:
            self._start(backend, replicas, use_netns)
        except BaseException:
            self.close()
            raise

    def _start(self, backend, n, use_netns):
        if backend == "rgw":
            import radosgw
            self.storage = radosgw.Radosgw()
        else:
            # moto's conditional creates made atomic, as S3's are
            self.storage = harness.Moto(command=(sys.executable,
                                                 os.path.join(HERE, "moto_atomic.py")))
        for b in self.buckets:
            self.storage.create_bucket(b)
        if use_netns:
            ns = Netns()
            self.netns = ns if ns.create() else None
        for i in range(n):
            inside = self.netns is not None and i == n - 1
            host = self.netns.host_ip if inside else "127.0.0.1"
            relay = Relay(self.storage.port, host=host, record=False)
            self.relays.append(relay)
            r = Replica(i, self.netns.ns_ip if inside else "127.0.0.1", relay, self.run_dir,
                        self.netns if inside else None)
            self.replicas.append(r)
            r.start()

    @property
    def urls(self):
        return [r.url for r in self.replicas]

    def partitionable(self):
        """The replica that iptables can cut from storage, or None."""
        return self.replicas[-1] if self.netns is not None else None

    def close(self):
        for r in self.replicas:
            r.close()
        for rel in self.relays:
            rel.close()
        if self.netns is not None:
            self.netns.close()
        if self.storage is not None:
            self.storage.close()
            self.storage = None
