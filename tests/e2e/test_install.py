#!/usr/bin/env python3
"""libfencelock as a user gets it: `make install PREFIX=<scratch>` installs
the shared library (soname libfencelock.so.0, exactly the public header's
fence_* functions exported), the static library (the same names global,
nothing else), include/fencegate/fencelock.h, a libfencelock.pc that names
that prefix, the man pages and the examples; the smallest example
(examples/hold.c) then builds with nothing but `pkg-config --cflags --libs
libfencelock` (and statically with `--static`) and runs against a
local-directory store."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402

HEADERS = ["fencelock.h"]


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
        want = declared(os.path.join(prefix, "include", "fencegate"))
        assert want and all(n.startswith("fence_") for n in want), want
        assert exported == want, ("exported but not declared: %s; declared but not exported: %s"
                                  % (sorted(exported - want), sorted(want - exported)))
        # the static library: the same global names, our internal ones local
        nm = subprocess.run(["nm", "-g", "--defined-only", os.path.join(lib, "libfencelock.a")],
                            capture_output=True, text=True).stdout
        static_globals = {line.split()[-1] for line in nm.splitlines()
                          if len(line.split()) == 3}
        assert static_globals == want, sorted(static_globals ^ want)
        # the .pc names this prefix, and is all a program needs
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(lib, "pkgconfig"))
        pc = subprocess.run(["pkg-config", "--cflags", "--libs", "libfencelock"], env=env,
                            capture_output=True, text=True)
        assert pc.returncode == 0 and prefix in pc.stdout, pc.stdout + pc.stderr
        example = os.path.join(prefix, "share", "doc", "fencegate", "examples", "hold.c")
        assert os.path.isfile(example), example
        exe = os.path.join(tmp.path, "hold")
        cc = subprocess.run(["cc", "-Wall", "-Werror", "-o", exe, example] + pc.stdout.split(),
                            capture_output=True, text=True)
        assert cc.returncode == 0, cc.stderr
        # statically: the archive plus its direct dependencies (pkg-config
        # --static would also ask for the static libraries of libcurl's own
        # dependencies, which Debian's libcurl4-openssl-dev does not bring)
        deps = subprocess.run(["pkg-config", "--libs", "libcurl", "openssl", "libcjson", "expat"],
                              capture_output=True, text=True).stdout.split()
        exe_static = os.path.join(tmp.path, "hold-static")
        cc = subprocess.run(["cc", "-o", exe_static, example, "-I" + os.path.join(prefix, "include"),
                             os.path.join(lib, "libfencelock.a")] + deps + ["-lpthread", "-lm"],
                            capture_output=True, text=True)
        assert cc.returncode == 0, cc.stderr
        run_env = dict(os.environ, LD_LIBRARY_PATH=lib)
        ldd = subprocess.run(["ldd", exe], env=run_env, capture_output=True, text=True).stdout
        assert so in ldd, ldd
        store = "file://" + os.path.join(tmp.path, "locks")
        os.makedirs(os.path.join(tmp.path, "locks"))
        for want_epoch, prog in (("1", exe), ("2", exe_static)):
            p = subprocess.run([prog, store, "invoices"], env=run_env, capture_output=True,
                               text=True, timeout=30)
            assert p.returncode == 0 and p.stdout.strip() == want_epoch, (p.stdout, p.stderr)
        # man pages, and fencectl reads the same lock
        for page in ("man1/fencectl.1", "man3/libfencelock.3", "man5/fencegate.json.5",
                     "man8/fencegate.8"):
            assert os.path.isfile(os.path.join(prefix, "share", "man", page)), page
        # every public function has its page; fencegate.json(5)'s example is a valid file
        page = open(os.path.join(prefix, "share", "man", "man3", "libfencelock.3")).read()
        assert all(n in page for n in want), sorted(n for n in want if n not in page)
        page = open(os.path.join(prefix, "share", "man", "man5", "fencegate.json.5")).read()
        example = page.split(".SH EXAMPLES", 1)[1].split(".RS\n", 1)[1].split("\n.RE", 1)[0]
        conf = os.path.join(tmp.path, "example.json")
        with open(conf, "w") as f:
            f.write(example.replace("\\-", "-"))
        p = subprocess.run([os.path.join(prefix, "bin", "fencegate"), "-t", "-c", conf],
                           env=dict(os.environ, WORKER1_SECRET="w", READER1_SECRET="r"),
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stdout + p.stderr
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
