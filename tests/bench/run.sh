#!/usr/bin/env bash
# fencegate benchmark: direct upstream vs nginx proxy_pass vs HAProxy (and a
# second, identical HAProxy as the A/A control) vs fencegate, on loopback, in
# one run, interleaved, in two layouts: every process on one CPU (the
# verdict), and free on all CPUs. Then the scale rows (scale.sh: many locks,
# many keys, two replicas, a strict route) and the memory rows: RSS growth
# of a 1 GiB upload in S3 mode and on the embedded store. Prints a report;
# asserts nothing about timings (a benchmark is not a test). See
# tests/bench/README.md.
#
# Usage: FENCE_BIN=/abs/bin tests/bench/run.sh    (make bench does this)
# Environment:
#   FENCE_BIN       directory holding fencegate (default: <repo>/bin)
#   BENCH_SECONDS   length of each wrk run (default 5)
#   BENCH_ROUNDS    interleaved repetitions (default 3)
#   BENCH_LAYOUTS   "one all scale" (default); one: everything on one CPU,
#                   c=64 and c=1; all: no pinning, N workers/threads, c=256;
#                   scale: many locks, many keys, 2 replicas, strict (scale.sh);
#                   none: only the memory rows
#   BENCH_QUICK     1: 1 round of 3 s, a 256 MiB upload, 200000 keys (unless
#                   set explicitly): about half the time
#   BENCH_SCALE_KEYS   distinct keys written in the scale rows (1000000)
#   BENCH_SCALE_LOCKS  locks the scale rows spread writes over (10000)
#   BENCH_BIG_MIB   size of the upload of the memory rows (default 1024; 0: skip)
#   BENCH_KEEP      1 keeps the temp dir (configs, logs, raw results)
#   BENCH_HOLD      1: start the first layout's servers, print their ports
#                   (and write them to $work/ports), then wait until killed,
#                   measuring nothing: for a profiler (perf, strace)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
FENCE_BIN=${FENCE_BIN:-$repo/bin}
QUICK=${BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then
	SECONDS_PER_RUN=${BENCH_SECONDS:-3}
	ROUNDS=${BENCH_ROUNDS:-1}
	BIG_MIB=${BENCH_BIG_MIB:-256}
	SCALE_KEYS=${BENCH_SCALE_KEYS:-200000}
else
	SECONDS_PER_RUN=${BENCH_SECONDS:-5}
	ROUNDS=${BENCH_ROUNDS:-3}
	BIG_MIB=${BENCH_BIG_MIB:-1024}
	SCALE_KEYS=${BENCH_SCALE_KEYS:-1000000}
fi
SCALE_LOCKS=${BENCH_SCALE_LOCKS:-10000}
LAYOUTS=${BENCH_LAYOUTS:-"one all scale"}
BUCKET=bench
EPOCH=5            # the lock's current epoch as the stand-in reports it
STALE_TOKEN=4      # below the current epoch: fencegate must answer 409

die() { echo "bench: $*" >&2; exit 1; }
note() { echo "bench: $*" >&2; }

for tool in nginx haproxy wrk python3 curl taskset; do
	command -v "$tool" >/dev/null 2>&1 ||
		die "'$tool' not found (run: deploy/install-deps.sh bench)"
done
fencegate="$FENCE_BIN/fencegate"
[ -x "$fencegate" ] || die "no fencegate at $fencegate (set FENCE_BIN to the bin dir)"
case "$SECONDS_PER_RUN" in ''|*[!0-9]*) die "BENCH_SECONDS must be whole seconds";; esac
case "$ROUNDS" in ''|*[!0-9]*|0) die "BENCH_ROUNDS must be >= 1";; esac
case "$BIG_MIB" in ''|*[!0-9]*) die "BENCH_BIG_MIB must be whole MiB";; esac
case "$SCALE_KEYS" in ''|*[!0-9]*) die "BENCH_SCALE_KEYS must be a whole number";; esac
case "$SCALE_LOCKS" in ''|*[!0-9]*|0) die "BENCH_SCALE_LOCKS must be >= 1";; esac

work=$(mktemp -d "${TMPDIR:-/tmp}/fencegate-bench.XXXXXX")
pids=()

stop_servers() { # the servers of the current layout, by PID
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
}
at_exit() {
	stop_servers
	if [ "${BENCH_KEEP:-0}" = 1 ]; then note "kept $work"; else rm -rf "$work"; fi
}
trap at_exit EXIT
trap 'exit 130' INT TERM

read -r -a cpus <<<"$(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)))')"
ncpu=${#cpus[@]}
clk_tck=$(getconf CLK_TCK)
results="$work/results.jsonl"
: >"$results"

# fencegate's flags: no access log (like the anchors), the backend self-test
# at start (health answers 200 only once it passed), where it has them
fg_help=$("$fencegate" --help 2>&1 || true)
fg_common=(--log-level warn)
case "$fg_help" in *--access-log*) fg_common+=(--access-log off) ;; esac
fg_workers_flag=0   # --workers N sets event loops (not a thread pool)?
echo "$fg_help" | grep -q -- '--workers N.*event loop' && fg_workers_flag=1

free_ports() { # n -> n free loopback ports
	python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(*[s.getsockname()[1] for s in socks])
EOF
}
wait_port() { # port [tries of 0.1 s]
	local i
	for i in $(seq "${2:-100}"); do
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
wait_health() { # pid port log
	local i code
	for i in $(seq 150); do
		kill -0 "$1" 2>/dev/null || break
		code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$2/_fence/health" || true)
		[ "$code" = 200 ] && return 0
		sleep 0.1
	done
	fail_start fencegate "$3"
}
fg_env=(env AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
	AWS_SESSION_TOKEN= AWS_PROFILE= AWS_CONFIG_FILE=/dev/null
	AWS_SHARED_CREDENTIALS_FILE=/dev/null)

# /proc readings ------------------------------------------------------------------
proc_pids() { # target -> PIDs whose CPU time counts for it (nginx: + workers)
	local main=${pid_of[$1]}
	echo "$main"
	case "$1" in direct|nginx) cat "/proc/$main/task/$main/children" 2>/dev/null || true ;; esac
}
cpu_ticks() { # target -> "utime stime" of its processes, in clock ticks
	local user=0 sys=0 pid f
	for pid in $(proc_pids "$1"); do
		f=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
		f=${f##*) }
		read -r -a fs <<<"$f"
		# after "pid (comm) ": state is fs[0]; utime is stat field 14 -> fs[11]
		user=$((user + fs[11]))
		sys=$((sys + fs[12]))
	done
	echo "$user $sys"
}
status_kb() { # pid field -> kB
	awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status" 2>/dev/null || echo 0
}
hwm_kb() { # target -> the largest VmHWM among its processes, kB
	local best=0 pid v
	for pid in $(proc_pids "$1"); do
		v=$(status_kb "$pid" VmHWM)
		[ "${v:-0}" -gt "$best" ] && best=$v
	done
	echo "$best"
}

# case -> method path bytes token
case_env() {
	case "$1" in
	get) echo "GET /$BUCKET/small.bin 0 $EPOCH" ;;
	put1k) echo "PUT /$BUCKET/k/obj- 1024 $EPOCH" ;;
	put64k) echo "PUT /$BUCKET/k/obj- 65536 $EPOCH" ;;
	stale) echo "PUT /$BUCKET/k/obj- 1024 $STALE_TOKEN" ;;
	putnew) echo "PUT /$BUCKET/n/r$wrk_seq-k 1024 $EPOCH" ;;  # every PUT a new key
	strict) echo "PUT /$BUCKET/s/obj- 1024 $EPOCH" ;;         # the strict route
	locks) echo "PUT /k/obj- 1024 $EPOCH" ;;                  # bucket lkNNNNN
	keys) echo "PUT /$BUCKET/n/m- 1024 $EPOCH" ;;             # the many keys
	# existing keys never written through this proxy: every PUT a distinct
	# k/ key (the stand-in says each exists), new to the ETag cache
	uncached) echo "PUT /$BUCKET/k/u$wrk_seq-k 1024 $EPOCH" ;;
	pair) echo "PUT /$BUCKET/k/obj- 1024 $EPOCH" ;;           # two replicas at once
	esac
}

# the stand-in's data: the bench lock at epoch 5 and its listing -----------------
data="$work/data"
chmod 755 "$work"   # nginx workers may run as "nobody" when started by root
mkdir -p "$data/$BUCKET/locks/$BUCKET"
head -c 1024 /dev/zero | tr '\0' 'g' >"$data/$BUCKET/small.bin"
: >"$data/put-ok"   # body and ETag of every data key (see upstream.conf.in)
lockkey="locks/$BUCKET/lock-$(printf '%010d' "$EPOCH").json"
printf '{"leaderId":"bench","validityMs":3600000,"expired":false,"v":1}' \
	>"$data/$BUCKET/$lockkey"
locksize=$(wc -c <"$data/$BUCKET/$lockkey")
lockmtime=$(date -u -r "$data/$BUCKET/$lockkey" +%Y-%m-%dT%H:%M:%S.000Z)
cat >"$data/list.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>$BUCKET</Name><Prefix>locks/$BUCKET/lock-</Prefix><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated><Contents><Key>$lockkey</Key><LastModified>$lockmtime</LastModified><ETag>&quot;4a5f0c1d2e3b4a5f0c1d2e3b4a5f0c1d&quot;</ETag><Size>$locksize</Size><StorageClass>STANDARD</StorageClass></Contents></ListBucketResult>
EOF
cat >"$data/list-empty.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>$BUCKET</Name><Prefix>locks/$BUCKET/lock-</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>
EOF
chmod -R a+rX "$data"

# one layout: its servers, a sanity check, warm-up, interleaved rounds ---------------
declare -A pid_of port_of sanity
targets=(direct nginx haproxy haproxy2 fencegate)
meta_layouts=""

run_layout() { # one|all
	local layout=$1 dir="$work/$1" threads pin_srv=() pin_load=() conns_list desc
	local up_port probe_port nginx_port hap_port hap2_port fg_port fg_flags
	if [ "$layout" = one ]; then
		threads=1
		conns_list="64 1"
		pin_srv=(taskset -c "${cpus[0]}")
		pin_load=(taskset -c "${cpus[0]}")
		desc="one CPU (${cpus[0]}) for wrk, stand-in, nginx, haproxy x2, fencegate; 1 worker/thread each"
	else
		threads=$ncpu
		conns_list="256"
		desc="no pinning, $ncpu CPUs; stand-in and nginx $threads workers, haproxy $threads threads, fencegate"
	fi
	mkdir -p "$dir/tmp" "$dir/logs"
	chmod 755 "$dir"
	chmod 1777 "$dir/tmp"
	read -r up_port probe_port nginx_port hap_port hap2_port fg_port <<<"$(free_ports 6)"
	render() { # template output [name port]
		sed -e "s|@DIR@|$dir|g" -e "s|@DATA@|$data|g" -e "s|@BUCKET@|$BUCKET|g" \
			-e "s|@THREADS@|$threads|g" -e "s|@UPSTREAM_PORT@|$up_port|g" \
			-e "s|@PROBE_PORT@|$probe_port|g" -e "s|@NGINX_PORT@|$nginx_port|g" \
			-e "s|@NAME@|${3:-}|g" -e "s|@PORT@|${4:-}|g" \
			"$here/$1" >"$dir/$2"
	}
	render upstream.conf.in upstream.conf
	sed -i -e "s|@LOCK_MTIME@|$lockmtime|g" -e "s|@LOCK_SIZE@|$locksize|g" "$dir/upstream.conf"
	render nginx-proxy.conf.in nginx-proxy.conf
	render haproxy.cfg.in haproxy.cfg haproxy "$hap_port"
	render haproxy.cfg.in haproxy2.cfg haproxy2 "$hap2_port"

	start "$dir/logs/probe.log" "${pin_srv[@]}" python3 "$here/probe_server.py" "$probe_port"
	start "$dir/logs/upstream.out" "${pin_srv[@]}" \
		nginx -p "$dir" -c "$dir/upstream.conf" -g 'daemon off;'
	pid_of[direct]=$started_pid
	start "$dir/logs/nginx-proxy.out" "${pin_srv[@]}" \
		nginx -p "$dir" -c "$dir/nginx-proxy.conf" -g 'daemon off;'
	pid_of[nginx]=$started_pid
	start "$dir/logs/haproxy.out" "${pin_srv[@]}" haproxy -f "$dir/haproxy.cfg" -db
	pid_of[haproxy]=$started_pid
	start "$dir/logs/haproxy2.out" "${pin_srv[@]}" haproxy -f "$dir/haproxy2.cfg" -db
	pid_of[haproxy2]=$started_pid
	wait_port "$probe_port" || fail_start probe "$dir/logs/probe.log"
	wait_port "$up_port" || fail_start stand-in "$dir/upstream-error.log"
	wait_port "$nginx_port" || fail_start nginx-proxy "$dir/nginx-proxy-error.log"
	wait_port "$hap_port" || fail_start haproxy "$dir/logs/haproxy.out"
	wait_port "$hap2_port" || fail_start haproxy2 "$dir/logs/haproxy2.out"

	fg_flags=("${fg_common[@]}")
	case "$fg_help" in *--check-bucket*) fg_flags+=(--check-bucket "$BUCKET") ;; esac
	[ "$fg_workers_flag" = 1 ] && fg_flags+=(--workers "$threads")
	start "$dir/logs/fencegate.log" "${fg_env[@]}" "${pin_srv[@]}" "$fencegate" \
		--listen "127.0.0.1:$fg_port" --upstream "http://127.0.0.1:$up_port" "${fg_flags[@]}"
	pid_of[fencegate]=$started_pid
	wait_health "$started_pid" "$fg_port" "$dir/logs/fencegate.log"
	note "layout $layout: $desc"
	note "  fencegate ${fg_flags[*]}"
	port_of=([direct]=$up_port [nginx]=$nginx_port [haproxy]=$hap_port
		[haproxy2]=$hap2_port [fencegate]=$fg_port)

	local t c
	if [ "${BENCH_HOLD:-0}" = 1 ]; then
		for t in "${targets[@]}"; do
			echo "$t ${port_of[$t]} ${pid_of[$t]}"
		done >"$work/ports"
		note "holding (BENCH_HOLD=1): target port pid in $work/ports:"
		cat "$work/ports" >&2
		# in the background, so that a signal ends the wait at once (and
		# the trap stops every server, the sleep included)
		sleep infinity &
		pids+=("$!")
		wait "$!"
	fi
	for t in "${targets[@]}"; do
		for c in get put1k put64k stale putnew; do
			[ "$c" = stale ] && [ "$t" != fencegate ] && continue
			sanity[$layout.$t.$c]=$(probe_status "$t" "$c" || echo 000)
		done
	done
	{
		printf 'sanity (%s), one request each (status):' "$layout"
		for t in "${targets[@]}"; do
			printf '\n  %-9s' "$t"
			for c in get put1k put64k stale putnew; do
				[ -n "${sanity[$layout.$t.$c]:-}" ] && printf ' %s=%s' "$c" "${sanity[$layout.$t.$c]}"
			done
		done
		echo
	} >&2
	for c in put1k put64k putnew; do
		case "${sanity[$layout.fencegate.$c]}" in
		2??) ;;
		*) note "WARNING: fencegate answers ${sanity[$layout.fencegate.$c]} to a fenced PUT" \
			"(token $EPOCH = current epoch): the $c rows measure that answer" ;;
		esac
	done
	[ "${sanity[$layout.fencegate.stale]}" = 409 ] ||
		note "WARNING: fencegate answers ${sanity[$layout.fencegate.stale]} to a stale PUT, not 409"

	access_log="$dir/upstream-access.log"
	lists_log="$dir/lists.log"
	touch "$access_log" "$lists_log"
	# idle memory, before any load: what the connections of the run add
	rss0_fg=$(status_kb "${pid_of[fencegate]}" VmRSS)
	rss0_hap=$(status_kb "${pid_of[haproxy]}" VmRSS)
	local cases_at conns r i order
	# warm-up: connections, caches (fencegate's per-key ETag cache), page cache
	for t in "${targets[@]}"; do
		for c in get put1k put64k; do run_wrk "$layout" "$t" "$c" 64 1 warm; done
	done
	for r in $(seq "$ROUNDS"); do
		note "layout $layout, round $r/$ROUNDS"
		order=()
		for i in "${!targets[@]}"; do
			order+=("${targets[$(( (i + r - 1) % ${#targets[@]} ))]}")
		done
		for conns in $conns_list; do
			# c=1 only measures latency added: GET and the fenced 1 KiB PUT
			cases_at="get put1k put64k stale"
			# write-once keys: the one-core verdict at c=64
			[ "$layout" = one ] && cases_at+=" putnew"
			[ "$conns" = 1 ] && cases_at="get put1k"
			for c in $cases_at; do
				for t in "${order[@]}"; do
					[ "$c" = stale ] && [ "$t" != fencegate ] && continue
					run_wrk "$layout" "$t" "$c" "$conns" "$SECONDS_PER_RUN" "$r"
				done
			done
		done
	done
	kill -0 "${pid_of[fencegate]}" 2>/dev/null ||
		note "WARNING: fencegate exited during layout $layout; see $dir/logs/fencegate.log"
	meta_layouts+=$(printf '%s"%s":{"desc":"%s","threads":%d,"hwm_kb":{"fencegate":%d,"nginx":%d,"haproxy":%d,"haproxy2":%d,"direct":%d},"rss0_kb":{"fencegate":%d,"haproxy":%d}}' \
		"${meta_layouts:+,}" "$layout" "$desc" "$threads" "$(hwm_kb fencegate)" "$(hwm_kb nginx)" \
		"$(hwm_kb haproxy)" "$(hwm_kb haproxy2)" "$(hwm_kb direct)" "$rss0_fg" "$rss0_hap")
	stop_servers
}

probe_status() { # target case -> HTTP status of one request
	local method path bytes token port
	read -r method path bytes token <<<"$(case_env "$2")"
	port=${port_of[$1]}
	if [ "$method" = GET ]; then
		curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port$path"
	else
		head -c "$bytes" /dev/zero | curl -s -o /dev/null -w '%{http_code}' -X PUT \
			-H 'Content-Type: application/octet-stream' -H 'Expect:' \
			-H "X-Fencing-Token: $token" --data-binary @- \
			"http://127.0.0.1:$port${path}sanity"
	fi
}

log_size() { stat -c %s "${1:-$access_log}" 2>/dev/null || echo 0; }

# what callers may set around run_wrk: wrk_env (more BENCH_* for wrk.lua),
# wrk_extra (JSON members added to the result line); wrk_seq numbers runs
wrk_env=()
wrk_extra=""
wrk_seq=0

run_wrk() { # layout target case conns seconds round ('warm' = not recorded)
	local layout=$1 t=$2 c=$3 conns=$4 secs=$5 round=$6
	local method path bytes token port out json cpu0 cpu1 off0 loff0 upstream lists counted split
	local keys=256 pin=() u0 s0 u1 s1
	wrk_seq=$((wrk_seq + 1))
	read -r method path bytes token <<<"$(case_env "$c")"
	port=${port_of[$t]}
	[ "$layout" = one ] && pin=(taskset -c "${cpus[0]}")
	case "$c" in putnew|keys|uncached) keys=0 ;; locks) keys=1 ;; esac
	counted=0
	case "$c" in put*|stale|strict|locks|keys|pair|uncached) [ "$round" != warm ] && counted=1 ;; esac
	# the stand-in flushes its access logs every 100 ms
	[ "$counted" = 1 ] && sleep 0.3
	off0=$(log_size)
	loff0=$(log_size "$lists_log")
	read -r u0 s0 <<<"$(cpu_ticks "$t")"
	# in the background: a run with BENCH_STOP ends when wrk.lua says so
	local wf="$work/wrk-$BASHPID-$wrk_seq" wpid rc=0
	rm -f "$wf.stop"
	env BENCH_METHOD="$method" BENCH_PATH="$path" BENCH_BYTES="$bytes" \
		BENCH_TOKEN="$token" BENCH_KEYS="$keys" BENCH_STOP_FILE="$wf.stop" \
		"${wrk_env[@]}" "${pin[@]}" wrk -t1 -c"$conns" -d"${secs}s" --timeout 5s \
		--latency -s "$here/wrk.lua" "http://127.0.0.1:$port" >"$wf.out" 2>&1 &
	wpid=$!
	case " ${wrk_env[*]} " in
	*" BENCH_STOP="*)
		while kill -0 "$wpid" 2>/dev/null && [ ! -e "$wf.stop" ]; do
			sleep 0.05
		done
		kill -INT "$wpid" 2>/dev/null || true
		;;
	esac
	wait "$wpid" || rc=$?
	out=$(cat "$wf.out")
	rm -f "$wf.out" "$wf.stop"
	[ "$rc" = 0 ] || {
		note "wrk failed against $t ($c, c=$conns):"
		echo "$out" >&2
		return 0
	}
	read -r u1 s1 <<<"$(cpu_ticks "$t")"
	[ "$round" = warm ] && return 0
	upstream=0
	lists=0
	split="{}"
	if [ "$counted" = 1 ]; then
		sleep 0.3
		# the lines, and their count per method and status ("$request
		# $status": "PUT /bench/k/x HTTP/1.1 412")
		read -r upstream split <<<"$(tail -c +"$((off0 + 1))" "$access_log" | awk '
			{ n++; c[$1 " " $NF]++ }
			END {
				s = ""
				for (k in c) s = s (s == "" ? "" : ",") "\"" k "\":" c[k]
				printf "%d {%s}\n", n, s
			}')"
		lists=$(tail -c +"$((loff0 + 1))" "$lists_log" | wc -l)
	fi
	json=$(echo "$out" | sed -n 's/^BENCHJSON //p')
	[ -n "$json" ] || { note "no summary from wrk ($t $c c=$conns):"; echo "$out" >&2; return 0; }
	printf '{"layout":"%s","target":"%s","case":"%s","conns":%d,"round":%d,"cpu_ticks":%d,"cpu_user_ticks":%d,"cpu_sys_ticks":%d,"clk_tck":%d,"upstream_data_requests":%d,"upstream_split":%s,"upstream_list_requests":%d%s,"wrk":%s}\n' \
		"$layout" "$t" "$c" "$conns" "$round" "$((u1 + s1 - u0 - s0))" "$((u1 - u0))" \
		"$((s1 - s0))" "$clk_tck" "$upstream" "$split" "$lists" "$wrk_extra" "$json" >>"$results"
	printf '  %s round %d  %-9s %-6s c=%-3d %s\n' "$layout" "$round" "$t" "$c" "$conns" \
		"$(echo "$out" | awk '/Requests\/sec/ {print $2 " req/s"}')" >&2
}

nruns=0
for layout in $LAYOUTS; do
	case "$layout" in
	one) nruns=$(( nruns + ROUNDS * (5 * 4 + 1 + 5 * 2) )) ;;
	all) nruns=$(( nruns + ROUNDS * (5 * 3 + 1) )) ;;
	scale) nruns=$(( nruns + ROUNDS * 12 )) ;;
	none) ;;
	*) die "unknown layout '$layout' (one, all, scale)" ;;
	esac
done
note "$ROUNDS rounds, $nruns runs of ${SECONDS_PER_RUN}s (about $(( nruns * (SECONDS_PER_RUN + 1) / 60 + 2 )) min," \
	"plus the scale rows' ${SCALE_KEYS} keys and ${SCALE_LOCKS} locks)"
. "$here/scale.sh"
for layout in $LAYOUTS; do
	case "$layout" in
	none) ;;
	scale) run_scale ;;
	*) run_layout "$layout" ;;
	esac
done

# memory: RSS growth of one large upload, S3 mode and embedded store ----------------
big_json=""
if [ "$BIG_MIB" -gt 0 ]; then
	. "$here/bigupload.sh"
	big_uploads
	big_json=$(cat "$work/big.json")
fi

meta="$work/meta.json"
printf '{"big_mib":%d,"seconds":%d,"rounds":%d,"quick":%d,"scale_keys":%d,"scale_locks":%d,"epoch":%d,"stale_token":%d,"nproc":%d,"fencegate":"%s","workers_flag":%d,"layouts":{%s},"big":{%s}}\n' \
	"$BIG_MIB" "$SECONDS_PER_RUN" "$ROUNDS" "$QUICK" "$SCALE_KEYS" "$SCALE_LOCKS" "$EPOCH" "$STALE_TOKEN" "$ncpu" \
	"$("$fencegate" --version 2>/dev/null | head -n1)" "$fg_workers_flag" "$meta_layouts" \
	"$big_json" >"$meta"
python3 "$here/report.py" "$results" "$meta"
