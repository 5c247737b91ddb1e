#!/usr/bin/env python3
"""The worker examples (examples/) run against the embedded default: the
shell one (fencectl run through the proxy's S3 API), the Python one (boto3
and the fencegate package, installed from a wheel into a scratch target),
the Node one (@aws-sdk/client-s3 and the fencegate package, installed as
the README says — `npm install --prefix examples` — in a scratch copy of
the clone's examples/ and lock/js) and the C one (libfencelock's public API
with its keeper thread, libcurl for the data). Each is a read-modify-write
step on one counter object:
run one after another they count up, and every step is fenced — after
they ran, a write with the first epoch is refused and the counter keeps
its value (read back through the proxy, and from the data directory)."""
import os
import shutil
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import clientpkg  # noqa: E402
import harness  # noqa: E402

EX = os.path.join(harness.ROOT, "examples")
BUCKET = "examples"


def run(argv, env, what):
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, "%s: rc %d\n%s\n%s" % (what, p.returncode, p.stdout, p.stderr)
    return p.stdout.strip()


def build_c_worker(tmp):
    """examples/worker.c against the build tree's static library (whose only
    global names are the public API's: it is linked whole here)."""
    exe = os.path.join(tmp, "worker")
    libs = subprocess.run(["pkg-config", "--libs", "libcurl", "openssl", "libcjson", "expat"],
                          capture_output=True, text=True).stdout.split()
    inc = os.path.join(tmp, "include")
    os.makedirs(inc)
    os.symlink(os.path.join(harness.ROOT, "lock", "lib"), os.path.join(inc, "fencegate"))
    p = subprocess.run(["cc", "-Wall", "-Werror", "-o", exe, os.path.join(EX, "worker.c"),
                        "-I" + inc, os.path.join(harness.ROOT, "lib", "libfencelock.a")] + libs +
                       ["-lpthread", "-lm"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return exe


def node_clone(tmp):
    """examples/ and lock/js copied as a clone has them, then the README's
    `npm install --prefix examples`; returns the copy of worker.cjs."""
    clone = os.path.join(tmp, "clone")
    shutil.copytree(EX, os.path.join(clone, "examples"),
                    ignore=shutil.ignore_patterns("node_modules"))
    shutil.copytree(clientpkg.JS_PKG, os.path.join(clone, "lock", "js"),
                    ignore=shutil.ignore_patterns("node_modules"))
    p = harness.run(["npm", "install", "--prefix", os.path.join(clone, "examples")] +
                    clientpkg.NPM_FLAGS, timeout=300)
    assert p.returncode == 0, "npm install --prefix examples: " + p.stdout + p.stderr
    return os.path.join(clone, "examples", "worker.cjs")


def t_workers():
    g = harness.Fencegate("--access-log", "off")
    tmp = harness.TempDir()
    try:
        urllib.request.urlopen(urllib.request.Request(g.url + "/" + BUCKET, method="PUT"))
        env = dict(os.environ, FENCEGATE=g.url, FENCECTL=os.path.join(harness.BIN, "fencectl"),
                   PYTHONPATH=clientpkg.install_python(tmp.path),
                   AWS_ACCESS_KEY_ID="worker", AWS_SECRET_ACCESS_KEY="worker",
                   AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED="true")
        env.pop("AWS_ENDPOINT_URL", None)
        env.pop("NODE_PATH", None)
        steps = [
            ("shell", [os.path.join(EX, "worker.sh"), BUCKET, "counter"]),
            ("python", [sys.executable, os.path.join(EX, "worker.py"), BUCKET, "counter"]),
            ("c", [build_c_worker(tmp.path), BUCKET, "counter"]),
        ]
        if shutil.which("node"):
            steps.append(("node", ["node", node_clone(tmp.path), BUCKET, "counter"]))
        else:
            print("note: node not installed, the Node example not run")
        for n, (what, argv) in enumerate(steps * 2, start=1):
            out = run(argv, env, what)
            assert out == str(n), "%s printed %r, expected %d" % (what, out, n)
        st, body = g.get("/%s/counter" % BUCKET)
        assert st == 200 and body == str(len(steps) * 2).encode(), (st, body)
        # every step was fenced: the first epoch is stale now, nothing stored
        req = urllib.request.Request(g.url + "/%s/counter" % BUCKET, data=b"zombie",
                                     method="PUT", headers={"X-Fencing-Token": "1"})
        try:
            urllib.request.urlopen(req)
            raise AssertionError("a write with epoch 1 was accepted")
        except urllib.error.HTTPError as e:
            assert e.code == 409, e.code
        st, body = g.get("/%s/counter" % BUCKET)
        assert body == str(len(steps) * 2).encode(), body
    finally:
        tmp.close()
        g.close()


def t_readme_copies():
    """The README's copies of worker.py and worker.cjs are the files' code."""
    import re
    with open(os.path.join(harness.ROOT, "README.md")) as f:
        text = f.read()
    start = text.index("\n## Workers in Python and Node")
    section = text[start:text.index("\n## ", start + 1)]
    for lang, name, code_starts in (("python", "worker.py", "import "),
                                    ("js", "worker.cjs", "const ")):
        blocks = re.findall(r"```%s\n(.*?)```" % lang, section, re.S)
        with open(os.path.join(EX, name)) as f:
            src = f.read()
        code = src[src.index("\n" + code_starts) + 1:]
        assert blocks == [code], "README's %s differs from examples/%s" % (lang, name)


def main():
    r = harness.Runner("e2e examples")
    r.check("examples: shell, Python, Node and C workers count up, fenced", t_workers)
    r.check("the README shows examples/worker.py and worker.cjs as they are", t_readme_copies)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
