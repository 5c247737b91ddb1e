#!/usr/bin/env python3
"""The README's walkthroughs run as written, in the reader's order: the
shell blocks of "Five minutes with fencectl", "Five minutes with the
proxy", the config check and the install-and-build of examples/hold.c are
read out of README.md and executed line by line in a scratch directory
(as $HOME), with only the ports, bin/, examples/, deploy/ and `make` (-C
the tree, DATA= and PREFIX= in the scratch directory) pointed at this
tree. A line ending in `&` starts in the background as pasted, `make run &`
included, and nothing here waits for it: the README's own next line does
(a reader's paste races the server otherwise). Background processes get a
session of their own and are stopped by its id at the end; moto is the
harness's. A line whose comment starts with "run;" is a foreground server
a reader stops with Ctrl-C, not a step. The comment after a command is its expected outcome:
"prints N", "exit N", an HTTP status for `curl -i`, a JSON epoch or error
code for `curl -s`, text it must print; a comment line under a command is
the start of what it must say on stderr."""
import json
import os
import re
import shlex
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

README = os.path.join(harness.ROOT, "README.md")


def sh_blocks(section):
    """The ```sh blocks between a '## section' heading and the next one."""
    text = open(README).read()
    start = text.index("\n## " + section)
    end = text.find("\n## ", start + 4)
    body = text[start:end if end > 0 else len(text)]
    return re.findall(r"```sh\n(.*?)```", body, re.S)


def commands(block):
    """(command, comment, stderr lines) in order, continuations joined."""
    out, cur = [], ""
    for line in block.splitlines():
        if cur:
            cur += " " + line.strip()
        elif line.startswith("#"):
            if out:
                out[-1][2].append(line.lstrip("#").strip())
            continue
        else:
            cur = line
        if cur.endswith("\\"):
            cur = cur[:-1].rstrip()
            continue
        m = re.search(r"\s{2,}#\s?(.*)$", cur)
        cmd, note = (cur[:m.start()], m.group(1).strip()) if m else (cur, "")
        if cmd.strip():
            out.append((cmd.strip(), note, []))
        cur = ""
    return out


class Walk:
    def __init__(self, moto=None):
        self.dir = harness.TempDir()
        # a reader's shell: not inside make test's make, no endpoint set
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("AWS_ENDPOINT_URL", "MAKEFLAGS", "MFLAGS", "MAKELEVEL",
                                 "FENCE_RESULTS")}
        self.env["PWD"] = self.dir.path
        self.env["HOME"] = self.dir.path
        self.ports = {"8080": str(harness.free_port()), "8081": str(harness.free_port())}
        if moto:
            self.ports["5000"] = str(moto.port)
        self.servers = []

    def subst(self, cmd):
        for d in ("deploy", "examples"):
            cmd = re.sub(r"(^|\s)%s/" % d, r"\1" + os.path.join(harness.ROOT, d) + "/", cmd)
        cmd = cmd.replace("file:///tmp/locks", "file://" + os.path.join(self.dir.path, "locks"))
        for old, new in self.ports.items():
            cmd = cmd.replace("127.0.0.1:" + old, "127.0.0.1:" + new)
        # make in this tree (O= where bin/ is), run and install into the scratch directory
        out = os.path.dirname(os.path.abspath(harness.BIN))
        cmd = re.sub(r"^make(\s|$)", "make -C %s --no-print-directory O=%s DATA=%s\\1" % (
            shlex.quote(harness.ROOT), shlex.quote(out),
            shlex.quote(os.path.join(self.dir.path, "fencegate-data"))), cmd)
        if cmd.startswith("make ") and " run" in cmd:
            cmd = cmd.replace(" run", " run PORT=" + self.ports["8080"], 1)
        return re.sub(r"(^|\s)bin/", r"\1" + harness.BIN + "/", cmd)

    def start(self, cmd):
        """A line ending in &: started as the shell would, not waited for."""
        proc = subprocess.Popen(["bash", "-c", "exec " + cmd[:-1]], cwd=self.dir.path,
                                env=self.env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        self.servers.append(proc)

    def run(self, cmd, note, err_lines):
        if note.startswith("run;"):
            return  # a foreground server is not a step
        if cmd.startswith("moto_server"):
            return  # the harness's moto, on its own port
        if cmd.startswith("export "):
            for kv in shlex.split(cmd[7:]):
                k, v = kv.split("=", 1)
                self.env[k] = os.path.expandvars(v.replace("$PWD", self.dir.path)
                                                 .replace("$HOME", self.dir.path))
            return
        cmd = self.subst(cmd)
        if cmd.endswith("&"):
            self.start(cmd)
            return
        p = subprocess.run(["bash", "-c", cmd], cwd=self.dir.path, env=self.env,
                           capture_output=True, text=True, timeout=600)
        self.check(cmd, note, err_lines, p)

    def check(self, cmd, note, err_lines, p):
        what = "%s\n  expected: %s\n  rc %d\n  stdout: %s\n  stderr: %s" % (
            cmd, note, p.returncode, p.stdout[-800:], p.stderr[-800:])
        m = re.search(r"\bexit (\d+)", note)
        want_rc = int(m.group(1)) if m else 0
        assert p.returncode == want_rc, what
        m = re.search(r"\bprints (\S+?)[,.]?(\s|$)", note)
        if m:
            assert p.stdout.strip() == m.group(1), what
        if cmd.startswith("curl") and " -i " in cmd:
            m = re.match(r"(\d{3})\b", note)
            status = re.match(r"HTTP/\S+ (\d{3})", p.stdout)
            assert m and status and status.group(1) == m.group(1), what
        elif cmd.startswith("curl") and re.match(r"\{|\d{3}\b|epoch", note):
            doc = json.loads(p.stdout)
            m = re.search(r'epoch"?:? ?(\d+)', note)
            if m:
                assert doc.get("epoch") == int(m.group(1)), what
            m = re.search(r"\b\d{3} ([A-Z][A-Za-z]+)", note)
            if m:
                assert doc.get("error") == m.group(1), what
        m = re.match(r"([a-z_]+: \S+)", note)
        if m and not cmd.startswith("curl") and "exit" not in note and "prints" not in note:
            assert m.group(1) in p.stdout, what
        for line in err_lines:
            head = line.split(";")[0]
            assert head in p.stderr, what

    def close(self):
        for proc in self.servers:
            try:  # make run's make and the fencegate it execs: one session
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            harness.stop(proc)
        self.dir.close()


def walk(section, moto=None, block=None):
    blocks = sh_blocks(section)
    assert blocks, "no shell block under " + section
    w = Walk(moto)
    try:
        for b in blocks if block is None else [blocks[block]]:
            for cmd, note, err in commands(b):
                w.run(cmd, note, err)
    finally:
        w.close()


def t_fencectl():
    walk("Five minutes with fencectl", block=0)


def t_proxy():
    walk("Five minutes with the proxy", block=0)


def t_config_check():
    walk("Running it for real: config, authentication, TLS, HTTP mode", block=0)


def t_install_hold():
    walk("Two commands", block=1)


def t_in_front_of_s3(moto):
    walk("Five minutes with the proxy", moto, block=1)


def main():
    r = harness.Runner("e2e readme")
    moto = harness.Moto()
    try:
        r.check("README: make install under $HOME, then build and run examples/hold.c",
                t_install_hold)
        r.check("README: five minutes with fencectl", t_fencectl)
        r.check("README: five minutes with the proxy (embedded store)", t_proxy)
        r.check("README: in front of S3 (moto), aws cli with the token as metadata",
                t_in_front_of_s3, moto)
        r.check("README: the example config passes -t with the secrets it names",
                t_config_check)
    finally:
        moto.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
