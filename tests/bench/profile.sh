#!/usr/bin/env bash
# profile.sh — user-space instructions per request of one or more fencegate
# builds under callgrind, against the bench's own stand-in (run.sh
# BENCH_HOLD=1): a fixed small load on one keep-alive connection, counters
# zeroed after a warm-up and dumped after each case, so the numbers repeat
# from run to run on a shared machine (wall time does not). Prints, per
# build and case, the total and the inclusive cost of a few functions.
# It measures; it changes nothing and judges nothing.
#
# Usage: tests/bench/profile.sh BIN_DIR [BIN_DIR...]
# Environment: PROFILE_REQUESTS (1000), PROFILE_CASES ("get put1k putnew
# stale uncached"), PROFILE_FUNCS (a regex of function names to show inclusive),
# PROFILE_KEEP (a directory to copy the callgrind dumps into).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
N=${PROFILE_REQUESTS:-1000}
CASES=${PROFILE_CASES:-"get put1k putnew stale uncached"}
FUNCS=${PROFILE_FUNCS:-'^(metrics_add|metrics_set|metrics_observe|sigv4_signer_authorization|sigv4_authorization|signing_key_get|preq_sign|proxy_req_head_target|head_run|pthread_mutex_lock|pthread_mutex_unlock)$'}
[ "$#" -ge 1 ] || { echo "usage: $0 BIN_DIR [BIN_DIR...]" >&2; exit 2; }
for tool in valgrind callgrind_control callgrind_annotate python3 curl; do
	command -v "$tool" >/dev/null || { echo "profile: '$tool' not found" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/fencegate-profile.XXXXXX")
hold_pid=""
vg_pid=""
cleanup() {
	local rc=$?
	if [ -n "$vg_pid" ]; then kill -TERM "$vg_pid" 2>/dev/null; wait "$vg_pid" 2>/dev/null || true; fi
	if [ -n "$hold_pid" ]; then kill -TERM "$hold_pid" 2>/dev/null; wait "$hold_pid" 2>/dev/null || true; fi
	if [ -n "${PROFILE_KEEP:-}" ]; then
		mkdir -p "$PROFILE_KEEP" && cp "$work"/done.* "$PROFILE_KEEP"/ 2>/dev/null || true
	fi
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT

# the stand-in (and the rest of the one-core layout, unused) from run.sh
BENCH_HOLD=1 BENCH_LAYOUTS=one BENCH_BIG_MIB=0 FENCE_BIN=$1 "$here/run.sh" \
	>"$work/hold.out" 2>&1 &
hold_pid=$!
for _ in $(seq 600); do
	up=$(awk '/holding/ {f=1} f && $1 == "direct" {print $2}' "$work/hold.out")
	[ -n "$up" ] && break
	kill -0 "$hold_pid" 2>/dev/null || { cat "$work/hold.out" >&2; exit 1; }
	sleep 0.1
done
[ -n "$up" ] || { echo "profile: the stand-in did not start" >&2; exit 1; }

load() { # port case count
	python3 - "$@" <<'EOF'
import http.client, sys, uuid
port, case, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = http.client.HTTPConnection("127.0.0.1", port)
body = b"x" * 1024
run = uuid.uuid4().hex[:8]
for i in range(n):
    if case == "get":
        c.request("GET", "/bench/small.bin")
    else:
        if case == "putnew":     # a new key: one unread create
            path = "/bench/n/%s-%d" % (run, i)
        elif case == "uncached":  # an existing key never cached: 412, HEAD, If-Match
            path = "/bench/k/u%s-%d" % (run, i)
        else:
            path = "/bench/k/obj-%04d" % (i % 256)
        c.request("PUT", path, body, {"Content-Type": "application/octet-stream",
                                       "X-Fencing-Token": "4" if case == "stale" else "5"})
    r = c.getresponse()
    r.read()
EOF
}

printf '%-28s %-7s %12s  %s\n' build case "Ir/request" "inclusive Ir/request of the listed functions"
for bin in "$@"; do
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	env AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 \
		AWS_SESSION_TOKEN= AWS_PROFILE= AWS_CONFIG_FILE=/dev/null \
		AWS_SHARED_CREDENTIALS_FILE=/dev/null \
		valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p" \
		"$bin/fencegate" --listen "127.0.0.1:$port" --upstream "http://127.0.0.1:$up" \
		--workers 1 --access-log off --log-level warn >"$work/vg.log" 2>&1 &
	vg_pid=$!
	for _ in $(seq 600); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/_fence/health")" = 200 ] && break
		sleep 0.2
	done
	for c in $CASES; do load "$port" "$c" 200; done # warm-up: pool, caches, lock
	for c in $CASES; do
		callgrind_control -z "$vg_pid" >/dev/null 2>&1
		load "$port" "$c" "$N"
		callgrind_control -d "$vg_pid" >/dev/null 2>&1
		f=$(ls -t "$work"/cg."$vg_pid".* | head -1)
		total=$(awk '/^summary:/ {print $2}' "$f")
		funcs=$(callgrind_annotate --inclusive=yes --threshold=100 "$f" 2>/dev/null |
			awk -v n="$N" -v re="$FUNCS" '
				# "60,007,653 (100.0%)  file:function [object]"
				{ gsub(",", "", $1); name = $3; sub(/^.*:/, "", name) }
				name ~ re && !(name in seen) { seen[name] = 1; printf "%s %.0f  ", name, $1 / n }')
		printf '%-28s %-7s %12.0f  %s\n' "$(basename "$(dirname "$bin")")/$(basename "$bin")" \
			"$c" "$((total / N))" "$funcs"
		mv "$f" "$work/done.$(basename "$(dirname "$bin")").$c.$(basename "$f")"
	done
	kill -TERM "$vg_pid" 2>/dev/null || true
	wait "$vg_pid" 2>/dev/null || true
	vg_pid=""
done
