#!/bin/sh
# Installs the Debian packages fencegate needs to build and test, only those
# that are missing. Run by `make` before it builds; safe to run again.
# The test set includes chromium: tests/e2e/test_status_page.py loads the
# status page in it, headless. The test set also installs the JavaScript SDK the client suite drives
# (tests/js/package.json, unpinned) into tests/js/node_modules with npm.
# The test set includes iproute2, iptables and faketime: the fault harness
# (tests/chaos/, make chaos) partitions a replica in a network namespace
# and skews a worker's clock with libfaketime.
# The rgw set is Ceph's radosgw with the one monitor and one OSD that
# tests/radosgw.py starts on loopback (ceph-common comes with them); the
# test set includes it.
# Usage: deploy/install-deps.sh [build|test|bench|rgw]
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)

# The AWS SDK for JavaScript (tests/js) when it is not installed yet. npm
# comes with Debian's nodejs/npm packages (or a node build that bundles it).
js_sdk() {
	[ -d "$here/tests/js/node_modules/@aws-sdk/client-s3" ] &&
		[ -d "$here/tests/js/node_modules/@aws-sdk/lib-storage" ] &&
		[ -d "$here/tests/js/node_modules/@aws-sdk/s3-request-presigner" ] && return 0
	echo "install-deps: installing the AWS SDK for JavaScript into tests/js (npm)" >&2
	if ! (cd "$here/tests/js" && npm install --no-audit --no-fund \
		--no-package-lock --loglevel=error >&2); then
		echo "install-deps: 'npm install' in tests/js failed (no network to the npm registry?)" >&2
		exit 1
	fi
}

build="gcc make pkg-config libevent-dev libcurl4-openssl-dev libssl-dev
libcjson-dev libexpat1-dev libhttp-parser-dev"
# python3-wheel (+ pip, setuptools): the lock/python wheel is built offline
# with Debian's python3 (tests/e2e/clientpkg.py); chromium: the status page's
# browser test
test="libcmocka-dev clang libclang-rt-14-dev curl s3cmd rclone groff-base
python3-pip python3-setuptools python3-wheel chromium iproute2 iptables faketime"
bench="nginx-light haproxy wrk"
rgw="radosgw ceph-mon ceph-osd"

want=$build
# npm: only when no npm is on PATH (a node build that bundles npm conflicts
# with Debian's npm package)
command -v npm >/dev/null 2>&1 || test="$test nodejs npm"
case "${1:-build}" in
build) ;;
test) want="$build $test $rgw" ;;
bench) want="$build $test $rgw $bench" ;;
rgw) want=$rgw ;;
*) echo "install-deps: unknown set '$1' (build, test, bench, rgw)" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in
	*" installed") ;;
	*) missing="$missing $p" ;;
	esac
done
if [ -z "$missing" ]; then
	case "${1:-build}" in build|rgw) ;; *) js_sdk ;; esac
	exit 0
fi

echo "install-deps: installing missing Debian packages:$missing" >&2
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		SUDO="sudo -n"
	else
		echo "install-deps: need root to install:$missing" >&2
		echo "install-deps: run as root: apt-get install -y$missing" >&2
		exit 1
	fi
else
	SUDO=""
fi
export DEBIAN_FRONTEND=noninteractive
# make -j runs the build and the test sets at once: one apt at a time
if [ -z "${FENCE_DEPS_LOCKED:-}" ] && command -v flock >/dev/null 2>&1; then
	export FENCE_DEPS_LOCKED=1
	exec flock /tmp/fencegate-install-deps.lock "$0" "$@"
fi
if ! $SUDO apt-get install -y --no-install-recommends $missing >/dev/null 2>&1; then
	if ! $SUDO apt-get update -qq >/dev/null 2>&1; then
		echo "install-deps: 'apt-get update' failed (no network to the Debian mirror?)" >&2
		exit 1
	fi
	if ! $SUDO apt-get install -y --no-install-recommends $missing; then
		echo "install-deps: 'apt-get install$missing' failed" >&2
		exit 1
	fi
fi
case "${1:-build}" in build|rgw) ;; *) js_sdk ;; esac
