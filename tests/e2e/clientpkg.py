"""Installs the lock-client packages the way a user does, into scratch
directories, for the e2e tests (test_client_python.py, test_client_node.py,
test_examples.py): the Python one as a wheel built offline by Debian's
python3 (python3-wheel) and pip-installed with --target; the Node one
npm-installed from the folder (copied: --install-links) with
@aws-sdk/client-s3 (from the registry or npm's cache). Each function returns what to put on the path, or raises
AssertionError with the tool's output. It runs no test itself."""
import glob
import os
import shutil
import sys

import harness

PY_PKG = os.path.join(harness.ROOT, "lock", "python")
JS_PKG = os.path.join(harness.ROOT, "lock", "js")
NPM_FLAGS = ["--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"]


def install_python(tmp):
    """Builds the wheel from a copy of lock/python (setuptools writes build/
    next to the sources) and installs it into tmp/site; returns tmp/site."""
    dist, site, src = (os.path.join(tmp, d) for d in ("dist", "site", "src"))
    shutil.copytree(PY_PKG, src)
    p = harness.run(["/usr/bin/python3", "-m", "pip", "wheel", "--no-build-isolation",
                     "--no-deps", "-w", dist, src], timeout=120)
    assert p.returncode == 0, "wheel (needs Debian's python3-wheel): " + p.stdout + p.stderr
    wheels = glob.glob(os.path.join(dist, "fencegate-*.whl"))
    assert len(wheels) == 1, os.listdir(dist)
    p = harness.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps",
                     "--target", site, wheels[0]], timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return site


def install_node(tmp):
    """The README's `npm install --install-links PATH/lock/js
    @aws-sdk/client-s3`, run in a fresh project tmp/app; returns
    tmp/app/node_modules. (Without --install-links npm would link the folder
    and leave its dependencies uninstalled.)"""
    app = os.path.join(tmp, "app")
    os.mkdir(app)
    with open(os.path.join(app, "package.json"), "w") as f:
        f.write('{"name": "scratch-app", "private": true}\n')
    p = harness.run(["npm", "install", "--prefix", app, "--install-links"] + NPM_FLAGS +
                    [JS_PKG, "@aws-sdk/client-s3"], timeout=300)
    assert p.returncode == 0, "npm install (needs the npm registry or its cache): " + \
        p.stdout + p.stderr
    return os.path.join(app, "node_modules")
