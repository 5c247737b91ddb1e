#!/bin/sh
# Checks that no #include runs back up a layer. The layers, lowest first:
#   wire < lock < policy < proxy/ops < proxy/http < proxy/s3 < proxy/fence
#   < proxy/local < proxy/main.c, proxy/cli.c, proxy/workers.c
# A file may include its own folder's headers and those of lower layers.
# Prints every offending line and exits 1, or prints "layering: ok".
set -u
cd "$(dirname "$0")/.."
rank() {
	case "$1" in
	wire/*) echo 1 ;; lock/*) echo 2 ;; policy/*) echo 3 ;;
	ops/* | proxy/ops/*) echo 4 ;; http/* | proxy/http/*) echo 5 ;;
	s3/* | proxy/s3/*) echo 6 ;; fence/* | proxy/fence/*) echo 7 ;;
	local/* | proxy/local/*) echo 8 ;;
	proxy/main.c | proxy/cli.[ch] | proxy/workers.[ch]) echo 9 ;;
	*) echo 0 ;;
	esac
}
bad=0
for f in wire/*.[ch] lock/*.[ch] policy/*.[ch] proxy/*/*.[ch] proxy/main.c proxy/cli.[ch] proxy/workers.[ch]; do
	r=$(rank "$f")
	for inc in $(sed -n 's/^#include "\([^"]*\/[^"]*\)"/\1/p' "$f"); do
		ri=$(rank "$inc")
		if [ "$ri" = 0 ] || [ "$ri" -gt "$r" ]; then
			echo "layering: $f includes \"$inc\" (a higher or unknown layer)"
			bad=1
		fi
	done
done
[ $bad = 0 ] && echo "layering: ok"
exit $bad
