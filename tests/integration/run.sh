#!/bin/sh
# Integration and end-to-end tests: the lock library and fencectl against
# moto_server and a directory (run.py), then every tests/e2e/test_*.py (or
# the files named as arguments). Each runs through tests/suite.py, which
# records its count for make test's verdict; one failing file does not stop
# the others.
set -u
here=$(dirname "$0")
suite="$here/../suite.py"
fail=0
if [ $# -eq 0 ]; then
	"$suite" run integration python3 "$here/run.py" || fail=1
	set -- "$here"/../e2e/test_*.py
fi
for t in "$@"; do
	[ -e "$t" ] || continue
	"$suite" run "e2e $(basename "$t" .py)" python3 "$t" || fail=1
done
exit $fail
