#!/usr/bin/env bash
# fencegate benchmark: direct upstream vs nginx proxy_pass vs HAProxy vs
# fencegate, on loopback, in one run, interleaved. Prints a report; asserts
# nothing about timings (a benchmark is not a test). See tests/bench/README.md.
#
# Usage: FENCE_BIN=/abs/bin tests/bench/run.sh    (make bench does this)
# Environment:
#   FENCE_BIN       directory holding fencegate (default: <repo>/bin)
#   BENCH_SECONDS   length of each wrk run (default 5)
#   BENCH_ROUNDS    interleaved repetitions (default 3)
#   BENCH_CONNS     concurrencies (default "64 1")
#   BENCH_PIN       1 (default) pins load and servers to separate cores
#   BENCH_KEEP      1 keeps the temp dir (configs, logs, raw results)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
FENCE_BIN=${FENCE_BIN:-$repo/bin}
SECONDS_PER_RUN=${BENCH_SECONDS:-5}
ROUNDS=${BENCH_ROUNDS:-3}
CONNS=${BENCH_CONNS:-"64 1"}
PIN=${BENCH_PIN:-1}
BUCKET=bench
EPOCH=5            # the lock's current epoch as the stand-in reports it
STALE_TOKEN=4      # below the current epoch: fencegate must answer 409

die() { echo "bench: $*" >&2; exit 1; }
note() { echo "bench: $*" >&2; }

for tool in nginx haproxy wrk python3 curl; do
	command -v "$tool" >/dev/null 2>&1 ||
		die "'$tool' not found (run: deploy/install-deps.sh bench)"
done
fencegate="$FENCE_BIN/fencegate"
[ -x "$fencegate" ] || die "no fencegate at $fencegate (set FENCE_BIN to the bin dir)"
case "$SECONDS_PER_RUN" in ''|*[!0-9]*) die "BENCH_SECONDS must be whole seconds";; esac
case "$ROUNDS" in ''|*[!0-9]*|0) die "BENCH_ROUNDS must be >= 1";; esac

work=$(mktemp -d "${TMPDIR:-/tmp}/fencegate-bench.XXXXXX")
pids=()

stop_all() {
	local pid i
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		for i in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	pids=()
	if [ "${BENCH_KEEP:-0}" = 1 ]; then
		note "kept $work"
	else
		rm -rf "$work"
	fi
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# --- pinning ------------------------------------------------------------------
read -r -a cpus <<<"$(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)))')"
load_pin=() srv_pin=() pin_desc="none (BENCH_PIN=0 or fewer than 2 CPUs)"
if [ "$PIN" = 1 ] && [ "${#cpus[@]}" -ge 2 ] && command -v taskset >/dev/null 2>&1; then
	load_pin=(taskset -c "${cpus[0]}")
	srv_pin=(taskset -c "${cpus[1]}")
	pin_desc="wrk (1 thread) on CPU ${cpus[0]}; stand-in, nginx, haproxy, fencegate on CPU ${cpus[1]}"
fi

# --- ports, files -------------------------------------------------------------
read -r up_port probe_port nginx_port hap_port fg_port <<<"$(python3 - <<'EOF'
import socket
socks = []
for _ in range(5):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(*[s.getsockname()[1] for s in socks])
EOF
)"

chmod 755 "$work"   # nginx workers may run as "nobody" when started by root
mkdir -p "$work/tmp" "$work/logs" "$work/data/$BUCKET/locks/$BUCKET"
chmod 1777 "$work/tmp"
head -c 1024 /dev/zero | tr '\0' 'g' >"$work/data/$BUCKET/small.bin"
: >"$work/data/put-ok"   # body and ETag of every data key (see upstream.conf.in)
lockkey="locks/$BUCKET/lock-$(printf '%010d' "$EPOCH").json"
printf '{"leaderId":"bench","validityMs":3600000,"expired":false,"v":1}' \
	>"$work/data/$BUCKET/$lockkey"
locksize=$(wc -c <"$work/data/$BUCKET/$lockkey")
lockmtime=$(date -u -r "$work/data/$BUCKET/$lockkey" +%Y-%m-%dT%H:%M:%S.000Z)
cat >"$work/data/list.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>$BUCKET</Name><Prefix>locks/$BUCKET/lock-</Prefix><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated><Contents><Key>$lockkey</Key><LastModified>$lockmtime</LastModified><ETag>&quot;4a5f0c1d2e3b4a5f0c1d2e3b4a5f0c1d&quot;</ETag><Size>$locksize</Size><StorageClass>STANDARD</StorageClass></Contents></ListBucketResult>
EOF
cat >"$work/data/list-empty.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>$BUCKET</Name><Prefix>locks/$BUCKET/lock-</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>
EOF
chmod -R a+rX "$work/data"

render() { # template output
	sed -e "s|@DIR@|$work|g" -e "s|@BUCKET@|$BUCKET|g" \
		-e "s|@UPSTREAM_PORT@|$up_port|g" -e "s|@PROBE_PORT@|$probe_port|g" \
		-e "s|@NGINX_PORT@|$nginx_port|g" -e "s|@HAPROXY_PORT@|$hap_port|g" \
		"$here/$1" >"$work/$2"
}
render upstream.conf.in upstream.conf
render nginx-proxy.conf.in nginx-proxy.conf
render haproxy.cfg.in haproxy.cfg

# --- servers ------------------------------------------------------------------
wait_port() { # port name [tries of 0.1 s]
	local i
	for i in $(seq "${3:-100}"); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	return 1
}
start() { # log command...  -> sets started_pid
	local log=$1
	shift
	"$@" >"$log" 2>&1 &
	started_pid=$!
	pids+=("$started_pid")
}
fail_start() { # name log
	note "$1 did not start; its log:"
	tail -n 30 "$2" >&2 || true
	exit 1
}

start "$work/logs/probe.log" "${srv_pin[@]}" python3 "$here/probe_server.py" "$probe_port"
start "$work/logs/upstream.out" "${srv_pin[@]}" \
	nginx -p "$work" -c "$work/upstream.conf" -g 'daemon off;'
up_pid=$started_pid
start "$work/logs/nginx-proxy.out" "${srv_pin[@]}" \
	nginx -p "$work" -c "$work/nginx-proxy.conf" -g 'daemon off;'
nginx_pid=$started_pid
start "$work/logs/haproxy.out" "${srv_pin[@]}" haproxy -f "$work/haproxy.cfg" -db
hap_pid=$started_pid
wait_port "$probe_port" || fail_start probe "$work/logs/probe.log"
wait_port "$up_port" || fail_start stand-in "$work/upstream-error.log"
wait_port "$nginx_port" || fail_start nginx-proxy "$work/nginx-proxy-error.log"
wait_port "$hap_port" || fail_start haproxy "$work/logs/haproxy.out"

# like the anchors, no access log; the backend self-test at start (health
# answers 200 only once it passed), where this fencegate has those flags
fg_help=$("$fencegate" --help 2>&1 || true)
fg_flags=(--log-level warn)
case "$fg_help" in *--access-log*) fg_flags+=(--access-log off) ;; esac
case "$fg_help" in *--check-bucket*) fg_flags+=(--check-bucket "$BUCKET") ;; esac
start "$work/logs/fencegate.log" env AWS_ACCESS_KEY_ID=test \
	AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 AWS_SESSION_TOKEN= \
	AWS_PROFILE= AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null \
	"${srv_pin[@]}" "$fencegate" --listen "127.0.0.1:$fg_port" \
	--upstream "http://127.0.0.1:$up_port" "${fg_flags[@]}"
fg_pid=$started_pid
ready=0
for _ in $(seq 150); do
	kill -0 "$fg_pid" 2>/dev/null || break
	code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$fg_port/_fence/health" || true)
	if [ "$code" = 200 ]; then ready=1; break; fi
	sleep 0.1
done
[ "$ready" = 1 ] || fail_start fencegate "$work/logs/fencegate.log"
note "fencegate --upstream http://127.0.0.1:$up_port ${fg_flags[*]}"

# "env" and "taskset" exec their command, so each PID above is the server's.
# nginx's CPU is its master plus its workers.
proc_pids() { # target -> PIDs whose CPU time counts for it
	local main
	case "$1" in
	direct) main=$up_pid ;;
	nginx) main=$nginx_pid ;;
	haproxy) main=$hap_pid ;;
	fencegate) main=$fg_pid ;;
	esac
	echo "$main"
	case "$1" in direct|nginx) cat "/proc/$main/task/$main/children" 2>/dev/null || true ;; esac
}
cpu_ticks() { # target -> utime+stime of its processes, in clock ticks
	local total=0 pid f
	for pid in $(proc_pids "$1"); do
		f=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
		f=${f##*) }
		read -r -a fs <<<"$f"
		# after "pid (comm) ": state is fs[0]; utime is stat field 14 -> fs[11]
		total=$((total + fs[11] + fs[12]))
	done
	echo "$total"
}
hwm_kb() { # target -> the largest VmHWM among its processes, kB
	local best=0 pid v
	for pid in $(proc_pids "$1"); do
		v=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
		[ "${v:-0}" -gt "$best" ] && best=$v
	done
	echo "$best"
}

port_of() {
	case "$1" in
	direct) echo "$up_port" ;;
	nginx) echo "$nginx_port" ;;
	haproxy) echo "$hap_port" ;;
	fencegate) echo "$fg_port" ;;
	esac
}

# case -> method path bytes token
case_env() {
	case "$1" in
	get) echo "GET /$BUCKET/small.bin 0 $EPOCH" ;;
	put1k) echo "PUT /$BUCKET/k/obj- 1024 $EPOCH" ;;
	put64k) echo "PUT /$BUCKET/k/obj- 65536 $EPOCH" ;;
	stale) echo "PUT /$BUCKET/k/obj- 1024 $STALE_TOKEN" ;;
	esac
}

# --- sanity: what each target answers, once ------------------------------------
probe_status() { # target case -> HTTP status of one request
	local method path bytes token port
	read -r method path bytes token <<<"$(case_env "$2")"
	port=$(port_of "$1")
	if [ "$method" = GET ]; then
		curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port$path"
	else
		head -c "$bytes" /dev/zero | curl -s -o /dev/null -w '%{http_code}' -X PUT \
			-H 'Content-Type: application/octet-stream' -H 'Expect:' \
			-H "X-Fencing-Token: $token" --data-binary @- \
			"http://127.0.0.1:$port${path}sanity"
	fi
}
targets=(direct nginx haproxy fencegate)
cases=(get put1k put64k stale)
declare -A sanity
for t in "${targets[@]}"; do
	for c in "${cases[@]}"; do
		[ "$c" = stale ] && [ "$t" != fencegate ] && continue
		sanity[$t.$c]=$(probe_status "$t" "$c" || echo 000)
	done
done
{
	printf 'sanity, one request each (status):'
	for t in "${targets[@]}"; do
		printf '\n  %-9s' "$t"
		for c in "${cases[@]}"; do
			[ -n "${sanity[$t.$c]:-}" ] && printf ' %s=%s' "$c" "${sanity[$t.$c]}"
		done
	done
	echo
} >&2
for c in put1k put64k; do
	case "${sanity[fencegate.$c]}" in
	2??) ;;
	*) note "WARNING: fencegate answers ${sanity[fencegate.$c]} to a fenced PUT" \
		"(token $EPOCH = current epoch): the $c rows measure that answer, not a forwarded write" ;;
	esac
done
[ "${sanity[fencegate.stale]}" = 409 ] ||
	note "WARNING: fencegate answers ${sanity[fencegate.stale]} to a stale PUT, not 409"

# --- load -----------------------------------------------------------------------
results="$work/results.jsonl"
: >"$results"
clk_tck=$(getconf CLK_TCK)
access_log="$work/upstream-access.log"
touch "$access_log"

log_size() { stat -c %s "$access_log" 2>/dev/null || echo 0; }

run_wrk() { # target case conns seconds round ('warm' = not recorded)
	local t=$1 c=$2 conns=$3 secs=$4 round=$5
	local method path bytes token port out json cpu0 cpu1 off0 upstream counted
	read -r method path bytes token <<<"$(case_env "$c")"
	port=$(port_of "$t")
	counted=0
	case "$c" in put*|stale) [ "$round" != warm ] && counted=1 ;; esac
	# the stand-in flushes its access log every 100 ms
	[ "$counted" = 1 ] && sleep 0.3
	off0=$(log_size)
	cpu0=$(cpu_ticks "$t")
	out=$(BENCH_METHOD=$method BENCH_PATH=$path BENCH_BYTES=$bytes BENCH_TOKEN=$token \
		BENCH_KEYS=256 "${load_pin[@]}" wrk -t1 -c"$conns" -d"${secs}s" --timeout 5s \
		--latency -s "$here/wrk.lua" "http://127.0.0.1:$port" 2>&1) || {
		note "wrk failed against $t ($c, c=$conns):"
		echo "$out" >&2
		return 0
	}
	cpu1=$(cpu_ticks "$t")
	[ "$round" = warm ] && return 0
	upstream=0
	if [ "$counted" = 1 ]; then
		sleep 0.3
		upstream=$(tail -c +"$((off0 + 1))" "$access_log" | wc -l)
	fi
	json=$(echo "$out" | sed -n 's/^BENCHJSON //p')
	[ -n "$json" ] || { note "no summary from wrk ($t $c c=$conns):"; echo "$out" >&2; return 0; }
	printf '{"target":"%s","case":"%s","conns":%d,"round":%d,"cpu_ticks":%d,"clk_tck":%d,"upstream_data_requests":%d,"wrk":%s}\n' \
		"$t" "$c" "$conns" "$round" "$((cpu1 - cpu0))" "$clk_tck" "$upstream" "$json" >>"$results"
	printf '  round %d  %-9s %-6s c=%-3d %s\n' "$round" "$t" "$c" "$conns" \
		"$(echo "$out" | awk '/Requests\/sec/ {print $2 " req/s"}')" >&2
}

nruns=$(( ROUNDS * (${#targets[@]} * 3 + 1) * $(wc -w <<<"$CONNS") ))
note "pinning: $pin_desc"
note "$ROUNDS rounds, $nruns runs of ${SECONDS_PER_RUN}s (about $(( nruns * (SECONDS_PER_RUN + 1) / 60 + 1 )) min)"

# warm-up: connections, caches (fencegate's per-key ETag cache), page cache
for t in "${targets[@]}"; do
	for c in get put1k put64k; do run_wrk "$t" "$c" 64 1 warm; done
done

for r in $(seq "$ROUNDS"); do
	note "round $r/$ROUNDS"
	# rotate the order of targets each round so drift spreads evenly
	order=()
	for i in "${!targets[@]}"; do
		order+=("${targets[$(( (i + r - 1) % ${#targets[@]} ))]}")
	done
	for conns in $CONNS; do
		for c in "${cases[@]}"; do
			for t in "${order[@]}"; do
				[ "$c" = stale ] && [ "$t" != fencegate ] && continue
				run_wrk "$t" "$c" "$conns" "$SECONDS_PER_RUN" "$r"
			done
		done
	done
done

# --- report ----------------------------------------------------------------------
meta="$work/meta.json"
printf '{"pinning":"%s","seconds":%d,"rounds":%d,"epoch":%d,"stale_token":%d,"hwm_kb":{"fencegate":%d,"nginx":%d,"haproxy":%d,"direct":%d},"nproc":%d,"fencegate":"%s"}\n' \
	"$pin_desc" "$SECONDS_PER_RUN" "$ROUNDS" "$EPOCH" "$STALE_TOKEN" \
	"$(hwm_kb fencegate)" "$(hwm_kb nginx)" "$(hwm_kb haproxy)" "$(hwm_kb direct)" \
	"$(nproc)" "$("$fencegate" --version 2>/dev/null | head -n1)" >"$meta"
kill -0 "$fg_pid" 2>/dev/null || note "WARNING: fencegate exited during the bench; see its log"
python3 "$here/report.py" "$results" "$meta"
