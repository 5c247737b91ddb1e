#!/usr/bin/env python3
"""libfencelock as a user gets it: `make install PREFIX=<scratch>` installs
the shared library (soname libfencelock.so.0, only the installed headers'
functions exported), the headers, a libfencelock.pc that names that
prefix, and the man pages; the C example (examples/worker.c) then builds
with nothing but `pkg-config --cflags --libs libfencelock` and runs against
a local-directory store."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

HEADERS = ["lock.h", "store.h", "timesrc.h", "lockhttp.h"]


def declared(include_dir):
    """The functions and variables the installed headers declare."""
    names = set()
    for h in HEADERS:
        text = open(os.path.join(include_dir, h)).read()
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        for m in re.finditer(r"^(?!static|typedef|#|\s)[^;{}()]*?\b([a-z][a-z0-9_]*)\s*\([^;{}]*\)\s*;",
                             text, re.M):
            names.add(m.group(1))
        for m in re.finditer(r"^extern [^;(]*?\b([a-z][a-z0-9_]*)\s*(\[[^\]]*\])?\s*;", text, re.M):
            names.add(m.group(1))
    return names


def install(prefix):
    p = subprocess.run(["make", "-s", "install", "PREFIX=" + prefix], cwd=harness.ROOT,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr


def t_install_and_link():
    tmp = harness.TempDir()
    try:
        prefix = os.path.join(tmp.path, "usr")
        install(prefix)
        lib = os.path.join(prefix, "lib")
        so = os.path.join(lib, "libfencelock.so.0")
        assert os.path.isfile(so) and os.path.islink(os.path.join(lib, "libfencelock.so"))
        soname = subprocess.run(["objdump", "-p", so], capture_output=True, text=True).stdout
        assert re.search(r"SONAME\s+libfencelock\.so\.0\b", soname), soname
        # exported: exactly what the headers declare
        nm = subprocess.run(["nm", "-D", "--defined-only", so], capture_output=True,
                            text=True).stdout
        exported = {line.split()[-1].split("@")[0] for line in nm.splitlines()
                    if line.split() and line.split()[-1] != "FENCELOCK_0"}
        want = declared(os.path.join(prefix, "include", "fencelock"))
        assert exported == want, ("exported but not declared: %s; declared but not exported: %s"
                                  % (sorted(exported - want), sorted(want - exported)))
        # the .pc names this prefix, and is all a program needs
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(lib, "pkgconfig"))
        pc = subprocess.run(["pkg-config", "--cflags", "--libs", "libfencelock"], env=env,
                            capture_output=True, text=True)
        assert pc.returncode == 0 and prefix in pc.stdout, pc.stdout + pc.stderr
        exe = os.path.join(tmp.path, "worker")
        cc = subprocess.run(["cc", "-o", exe, os.path.join(harness.ROOT, "examples", "worker.c")]
                            + pc.stdout.split(), capture_output=True, text=True)
        assert cc.returncode == 0, cc.stderr
        run_env = dict(os.environ, LD_LIBRARY_PATH=lib)
        ldd = subprocess.run(["ldd", exe], env=run_env, capture_output=True, text=True).stdout
        assert so in ldd, ldd
        store = "file://" + os.path.join(tmp.path, "locks")
        os.makedirs(os.path.join(tmp.path, "locks"))
        for want_epoch in ("1", "2"):
            p = subprocess.run([exe, store, "invoices"], env=run_env, capture_output=True,
                               text=True, timeout=30)
            assert p.returncode == 0 and p.stdout.strip() == want_epoch, (p.stdout, p.stderr)
        # man pages, and fencectl reads the same lock
        for page in ("man1/fencectl.1", "man8/fencegate.8"):
            assert os.path.isfile(os.path.join(prefix, "share", "man", page)), page
        p = subprocess.run([os.path.join(prefix, "bin", "fencectl"), "--store", store, "status",
                            "invoices", "--json"], capture_output=True, text=True)
        assert p.returncode == 0 and '"epoch":2' in p.stdout, p.stdout + p.stderr
    finally:
        tmp.close()


def main():
    r = harness.Runner("e2e install")
    r.check("make install: shared library, headers, pkg-config, man pages; the C example "
            "links with pkg-config alone", t_install_and_link)
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
