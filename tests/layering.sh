#!/bin/sh
# Checks that no #include runs back up a layer. The layers, lowest first:
#   wire < lock/store < lock/core < lock/lib < lock/cli < policy < proxy/ops
#   < proxy/http < proxy/s3 < proxy/fence < proxy/local
#   < proxy/main.c, proxy/cli.c, proxy/workers.c
# A file may include its own folder's headers and those of lower layers,
# except two rooms of lock/ that are ends, not layers: lock/lib (the
# installed API, fencelock.h) and lock/cli (fencectl) may be included only
# from their own room or from lock/cli; the proxy and policy build on
# lock/core and lock/store, never on the library's API or the CLI.
# Prints every offending line and exits 1, or prints "layering: ok".
set -u
cd "$(dirname "$0")/.."
rank() {
	case "$1" in
	wire/*) echo 1 ;;
	lock/store/*) echo 2 ;; lock/core/*) echo 3 ;;
	lock/lib/*) echo 4 ;; lock/cli/*) echo 5 ;;
	policy/*) echo 6 ;;
	ops/* | proxy/ops/*) echo 7 ;; http/* | proxy/http/*) echo 8 ;;
	s3/* | proxy/s3/*) echo 9 ;; fence/* | proxy/fence/*) echo 10 ;;
	local/* | proxy/local/*) echo 11 ;;
	proxy/main.c | proxy/cli.[ch] | proxy/workers.[ch]) echo 12 ;;
	*) echo 0 ;;
	esac
}
bad=0
for f in wire/*.[ch] lock/*/*.[ch] policy/*.[ch] proxy/*/*.[ch] proxy/main.c proxy/cli.[ch] proxy/workers.[ch]; do
	r=$(rank "$f")
	for inc in $(sed -n 's/^#include "\([^"]*\/[^"]*\)"/\1/p' "$f"); do
		ri=$(rank "$inc")
		if [ "$ri" = 0 ] || [ "$ri" -gt "$r" ]; then
			echo "layering: $f includes \"$inc\" (a higher or unknown layer)"
			bad=1
		elif { [ "$ri" = 4 ] || [ "$ri" = 5 ]; } && [ "$r" != "$ri" ] && [ "$r" != 5 ]; then
			echo "layering: $f includes \"$inc\" (lock/lib and lock/cli are ends, not layers)"
			bad=1
		fi
	done
done
[ $bad = 0 ] && echo "layering: ok"
exit $bad
