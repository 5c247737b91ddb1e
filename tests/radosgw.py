"""A real S3 server for the suite: Ceph's radosgw on a single-node cluster.

Radosgw() starts, in a scratch directory and on free 127.0.0.1 ports, one
ceph-mon, one ceph-osd on memstore (RAM, no disk), and radosgw (beast
frontend), with authentication off inside the cluster (it is loopback
only) and an S3 user whose keys are harness.CREDS ("test"/"test"), so a
test swaps Moto() for Radosgw() and keeps everything else. close() stops
the three processes by their PIDs and removes the directory.

It does not install anything (deploy/install-deps.sh rgw does) and it
does not skip: a missing package is a RuntimeError naming the command to
run. It does not tune Ceph beyond what one node on loopback needs, and it
runs no ceph-mgr (pools, objects and users work without one)."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid

from harness import CREDS, free_port, stop, wait_port

BINARIES = ("ceph-mon", "ceph-osd", "monmaptool", "radosgw", "radosgw-admin", "ceph")
START_TIMEOUT = 90.0


def missing_binaries():
    """The Ceph programs not on PATH (empty when radosgw can start)."""
    return [b for b in BINARIES if shutil.which(b) is None]


class Radosgw:
    """A single-node Ceph cluster and radosgw on loopback, for tests."""

    def __init__(self, keep_dir=False):
        missing = missing_binaries()
        if missing:
            raise RuntimeError("radosgw is not installed (missing %s): run "
                               "'deploy/install-deps.sh rgw' as root" % " ".join(missing))
        self.t0 = time.monotonic()
        self.dir = tempfile.mkdtemp(prefix="fence-rgw-")
        self.keep_dir = keep_dir
        self.procs = []
        self.mon_port = free_port()
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.conf = os.path.join(self.dir, "ceph.conf")
        try:
            self._write_conf()
            self._start_mon()
            self._start_osd()
            self._start_rgw()
            self._make_user()
        except Exception as e:
            tail = self._log_tail()
            self.close()
            raise RuntimeError("%s\n%s" % (e, tail)) from e
        self.start_seconds = time.monotonic() - self.t0

    # ---- set-up -----------------------------------------------------------

    def _write_conf(self):
        d = self.dir
        for sub in ("mon", "osd", "run", "log", "rgw"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        self.fsid = str(uuid.uuid4())
        with open(self.conf, "w") as f:
            f.write("""[global]
fsid = %(fsid)s
mon host = v1:127.0.0.1:%(mon)d
public addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
ms bind msgr2 = false
run dir = %(d)s/run
admin socket = %(d)s/run/$name.asok
pid file = %(d)s/run/$name.pid
log file = %(d)s/log/$name.log
keyring = /dev/null
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
mon data avail warn = 1
mon data avail crit = 0
[mon]
mon data = %(d)s/mon/$name
[osd]
osd data = %(d)s/osd/$name
osd objectstore = memstore
memstore device bytes = 536870912
osd max object name len = 460
osd max object namespace len = 64
osd class load list = *
osd class default list = *
# the OSD sends no placement commands of its own at start (one sent
# before it has the monmap is refused "wrong fsid" and kills it): the
# harness places it in the CRUSH map itself
osd crush update on start = false
osd class update on start = false
[client]
rgw data = %(d)s/rgw
rgw frontends = beast endpoint=127.0.0.1:%(rgw)d
rgw dns name = 127.0.0.1
rgw thread pool size = 32
rgw enable usage log = false
""" % {"fsid": self.fsid, "mon": self.mon_port, "d": d, "rgw": self.port})

    def _log_tail(self, lines=12):
        """The last lines of every daemon's output and log, for a failure."""
        out = []
        logdir = os.path.join(self.dir, "log")
        for name in sorted(os.listdir(logdir)) if os.path.isdir(logdir) else []:
            with open(os.path.join(logdir, name), errors="replace") as f:
                text = f.read().splitlines()[-lines:]
            out.append("--- %s\n%s" % (name, "\n".join(text)))
        return "\n".join(out)

    def _spawn(self, name, argv):
        log = open(os.path.join(self.dir, "log", name + ".out"), "wb")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
        log.close()
        p.name = name
        self.procs.append(p)
        return p

    def _run(self, argv, timeout=60):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError("%s failed (%d): %s%s" % (" ".join(argv[:3]), r.returncode,
                                                       r.stdout[-500:], r.stderr[-800:]))
        return r.stdout

    def ceph(self, *args, timeout=60):
        """Runs the ceph CLI against this cluster; its stdout."""
        return self._run(["ceph", "-c", self.conf, "--connect-timeout", "20"] + list(args),
                         timeout=timeout)

    def _start_mon(self):
        monmap = os.path.join(self.dir, "monmap")
        self._run(["monmaptool", "--create", "--fsid", self.fsid, "--addv", "a",
                   "[v1:127.0.0.1:%d]" % self.mon_port, monmap])
        self._run(["ceph-mon", "-c", self.conf, "--mkfs", "-i", "a", "--monmap", monmap])
        self.mon = self._spawn("mon.a", ["ceph-mon", "-f", "-c", self.conf, "-i", "a"])
        wait_port(self.mon_port, self.mon, timeout=30)

    def _start_osd(self):
        osd_uuid = str(uuid.uuid4())
        osd_id = self.ceph("osd", "create", osd_uuid).strip()
        if osd_id != "0":
            raise RuntimeError("ceph osd create gave id %r" % osd_id)
        self.ceph("osd", "crush", "add", "osd.0", "1.0", "root=default", "host=localhost")
        os.makedirs(os.path.join(self.dir, "osd", "osd.0"), exist_ok=True)
        self._run(["ceph-osd", "-c", self.conf, "-i", "0", "--mkfs", "--osd-uuid", osd_uuid],
                  timeout=60)
        self.osd = self._spawn("osd.0", ["ceph-osd", "-f", "-c", self.conf, "-i", "0"])
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline:
            if self.osd.poll() is not None:
                raise RuntimeError("ceph-osd exited with %s: see %s" %
                                   (self.osd.returncode, self.dir))
            st = json.loads(self.ceph("osd", "stat", "-f", "json"))
            if st.get("num_up_osds", st.get("osdmap", {}).get("num_up_osds")) == 1:
                return
            time.sleep(0.5)
        raise RuntimeError("ceph-osd did not come up in 45 s: see %s" % self.dir)

    def _start_rgw(self):
        self.rgw = self._spawn("client.rgw", ["radosgw", "-f", "-c", self.conf,
                                              "-n", "client.rgw"])
        self.proc = self.rgw  # what a test freezes to stall "the S3 server", as Moto.proc
        wait_port(self.port, self.rgw, timeout=60)

    def _make_user(self):
        self._run(["radosgw-admin", "-c", self.conf, "user", "create", "--uid=fencetest",
                   "--display-name=fencegate tests",
                   "--access-key=" + CREDS["AWS_ACCESS_KEY_ID"],
                   "--secret=" + CREDS["AWS_SECRET_ACCESS_KEY"]])

    # ---- what tests use ---------------------------------------------------

    def client(self):
        import boto3
        from botocore.config import Config
        return boto3.client("s3", endpoint_url=self.url, region_name="us-east-1",
                            aws_access_key_id=CREDS["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=CREDS["AWS_SECRET_ACCESS_KEY"],
                            config=Config(s3={"addressing_style": "path"},
                                          retries={"max_attempts": 2}))

    def create_bucket(self, name):
        self.client().create_bucket(Bucket=name)

    def close(self):
        # radosgw first (it talks to the others), then the OSD, the monitor
        for p in reversed(self.procs):
            stop(p, signal.SIGTERM, timeout=15)
        self.procs = []
        if not self.keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def start_checked(runner):
    """Starts a Radosgw as a check of runner ("radosgw starts"): a radosgw
    that cannot start is a failed check, never a skip. The Radosgw, or
    None when it failed."""
    holder = {}

    def start():
        holder["rgw"] = Radosgw()
        print("radosgw up in %.1f s" % holder["rgw"].start_seconds)
    runner.check("radosgw starts", start)
    return holder.get("rgw")


if __name__ == "__main__":
    # python3 tests/radosgw.py: start, say how long it took, make a bucket, stop
    g = Radosgw()
    try:
        print("radosgw up on %s in %.1f s" % (g.url, g.start_seconds))
        g.create_bucket("probe-bucket")
        print("buckets:", [b["Name"] for b in g.client().list_buckets()["Buckets"]])
    finally:
        g.close()
