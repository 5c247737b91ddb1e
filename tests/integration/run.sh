#!/bin/sh
# Integration and end-to-end tests: the lock library and fencectl against
# moto_server and a directory (run.py), then every tests/e2e/test_*.py.
set -u
here=$(dirname "$0")
fail=0
python3 "$here/run.py" || fail=1
for t in "$here"/../e2e/test_*.py; do
	[ -e "$t" ] || continue
	echo "== $t"
	python3 "$t" || fail=1
done
exit $fail
