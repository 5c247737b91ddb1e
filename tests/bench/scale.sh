# scale.sh — the scale rows of the bench: how fencegate's cost grows from
# one lock and a few hundred warm keys to SCALE_LOCKS locks and SCALE_KEYS
# distinct keys, what two replicas in front of one stand-in give, what a
# strict route (a listing before every write) costs, and what a write to an
# existing key the proxy has not cached costs. Sourced by run.sh,
# which provides start, stop_servers, free_ports, wait_port, wait_health,
# status_kb, run_wrk (and its wrk_env / wrk_extra), note, fg_env,
# fg_common, $work, $data, $here, $BUCKET, $EPOCH, $ROUNDS,
# $SECONDS_PER_RUN, $SCALE_KEYS, $SCALE_LOCKS, $results.
#
# No pinning: the stand-in runs one nginx worker per CPU; every proxy has
# one event loop or thread (fencegate --workers 1, HAProxy nbthread 1), so
# a replica is one loop and "2 replicas" is two processes. Each row is
# measured against its HAProxy figure where one applies (the anchors
# forward the same requests unchecked). It measures; it never judges.

scale_render() { # template output threads
	sed -e "s|@DIR@|$sdir|g" -e "s|@DATA@|$data|g" -e "s|@BUCKET@|$BUCKET|g" \
		-e "s|@THREADS@|$3|g" -e "s|@UPSTREAM_PORT@|$s_up|g" \
		-e "s|@PROBE_PORT@|$s_probe|g" -e "s|@LOCK_MTIME@|$lockmtime|g" \
		-e "s|@LOCK_SIZE@|$locksize|g" -e "s|@NAME@|${4:-}|g" -e "s|@PORT@|${5:-}|g" \
		"$here/$1" >"$sdir/$2"
}

# "hits misses" of the ETag cache, from fencegate's /_fence/metrics
scale_cache_counts() { # port
	curl -s "http://127.0.0.1:$1/_fence/metrics" | awk '
		$1 == "fencegate_etag_cache_hits_total" { h = $2 }
		$1 == "fencegate_etag_cache_misses_total" { m = $2 }
		END { printf "%d %d\n", h, m }'
}

scale_start_fencegate() { # name port [flags...]
	local name=$1 port=$2
	shift 2
	start "$sdir/logs/$name.log" "${fg_env[@]}" "$fencegate" --listen "127.0.0.1:$port" \
		--upstream "http://127.0.0.1:$s_up" "${fg_common[@]}" --workers 1 "$@"
	pid_of[$name]=$started_pid
	port_of[$name]=$port
	wait_health "$started_pid" "$port" "$sdir/logs/$name.log"
}

# Two wrk at once, c/2 each, against targets a and b (two replicas): one
# result line each, case "pair"; both count the stand-in's whole log
# (report.py takes one count for the pair).
scale_pair() { # a b conns round
	run_wrk scale "$1" pair $(($3 / 2)) "$SECONDS_PER_RUN" "$4" &
	local first=$!
	run_wrk scale "$2" pair $(($3 / 2)) "$SECONDS_PER_RUN" "$4"
	wait "$first" || true
}

# existing keys the proxy has not cached: one timed run of PUTs, each to a
# distinct k/ key of its own (the stand-in says it exists: HEAD 200, a PUT
# with If-None-Match 412), against target t; for fencegate the ETag cache's
# hits and misses over the run go on its result line
scale_uncached() { # target round
	local t=$1 lines h m h1 m1
	if [ "${t#haproxy}" != "$t" ]; then
		run_wrk scale "$t" uncached 64 "$SECONDS_PER_RUN" "$2"
		return 0
	fi
	read -r h m <<<"$(scale_cache_counts "${port_of[$t]}")"
	lines=$(wc -l <"$results")
	run_wrk scale "$t" uncached 64 "$SECONDS_PER_RUN" "$2"
	read -r h1 m1 <<<"$(scale_cache_counts "${port_of[$t]}")"
	[ "$(wc -l <"$results")" -gt "$lines" ] &&
		sed -i '$ s/,"wrk":/,"cache_hits":'"$((h1 - h))"',"cache_misses":'"$((m1 - m))"',"wrk":/' "$results"
	return 0
}

# the many keys: SCALE_KEYS new keys in 10 slices (rate, RSS and the cache's
# counts after each), then the most recent keys rewritten (within the
# cache's bound: hits) and the first ones (evicted: misses)
scale_keys() { # target
	local t=$1 port=${port_of[$1]} pid=${pid_of[$1]} slice n from h m back
	n=$((SCALE_KEYS / 10))
	[ "$n" -ge 1 ] || return 0
	back=$((n < 50000 ? n : 50000))
	for slice in $(seq 0 9); do
		from=$((slice * (n + 1000))) # in-flight extras never reach the next slice
		wrk_env=(BENCH_KEY_FROM=$from BENCH_STOP=$n)
		run_wrk scale-keys "$t" keys 64 600 "$((slice + 1))"
		read -r h m <<<"$(scale_cache_counts "$port")"
		wrk_extra=$(printf ',"rss_kb":%d,"cache_hits":%d,"cache_misses":%d' \
			"$(status_kb "$pid" VmRSS)" "$h" "$m")
		# the extra members go on the next line: rewrite the one just added
		sed -i '$ s/,"wrk":/'"$wrk_extra"',"wrk":/' "$results"
		wrk_extra=""
		note "  keys: slice $((slice + 1))/10 done ($(( (slice + 1) * n )) keys), RSS $(status_kb "$pid" VmRSS) kB, cache hits $h misses $m"
	done
	for phase in recent first; do
		if [ "$phase" = recent ]; then from=$((9 * (n + 1000) + n - back)); else from=0; fi
		read -r h m <<<"$(scale_cache_counts "$port")"
		wrk_env=(BENCH_KEY_FROM=$from BENCH_STOP=$back)
		run_wrk "scale-rewrite-$phase" "$t" keys 64 600 1
		local h1 m1
		read -r h1 m1 <<<"$(scale_cache_counts "$port")"
		sed -i '$ s/,"wrk":/,"cache_hits":'"$((h1 - h))"',"cache_misses":'"$((m1 - m))"',"wrk":/' "$results"
		note "  keys: rewrite of the $back $phase keys: cache hits $((h1 - h)), misses $((m1 - m))"
	done
	wrk_env=()
}

run_scale() {
	local sdir="$work/scale" s_up s_probe hap hap2 fg fg2 fgs r rss0 rss1 h m
	mkdir -p "$sdir/tmp" "$sdir/logs"
	chmod 755 "$sdir"
	chmod 1777 "$sdir/tmp"
	read -r s_up s_probe hap hap2 fg fg2 fgs <<<"$(free_ports 7)"
	scale_render upstream.conf.in upstream.conf "$ncpu"
	scale_render haproxy.cfg.in haproxy.cfg 1 haproxy "$hap"
	scale_render haproxy.cfg.in haproxy2.cfg 1 haproxy2 "$hap2"
	# the strict instance: /BUCKET/k/ a normal route, /BUCKET/s/ a strict
	# one, both under the lock BUCKET
	cat >"$sdir/strict.json" <<EOF
{"listen": ["127.0.0.1:$fgs"], "mode": "s3", "workers": 1,
 "upstream": {"endpoint": "http://127.0.0.1:$s_up"},
 "locks": [{"name": "$BUCKET", "store": "s3://$BUCKET"}],
 "routes": [{"prefix": "/$BUCKET/k/", "lock": "$BUCKET"},
            {"prefix": "/$BUCKET/s/", "lock": "$BUCKET", "strict": true}],
 "log": {"level": "warn"}}
EOF
	start "$sdir/logs/probe.log" python3 "$here/probe_server.py" "$s_probe"
	start "$sdir/logs/upstream.out" nginx -p "$sdir" -c "$sdir/upstream.conf" -g 'daemon off;'
	pid_of[direct]=$started_pid
	start "$sdir/logs/haproxy.out" haproxy -f "$sdir/haproxy.cfg" -db
	pid_of[haproxy]=$started_pid
	start "$sdir/logs/haproxy2.out" haproxy -f "$sdir/haproxy2.cfg" -db
	pid_of[haproxy2]=$started_pid
	wait_port "$s_probe" || fail_start probe "$sdir/logs/probe.log"
	wait_port "$s_up" || fail_start stand-in "$sdir/upstream-error.log"
	wait_port "$hap" || fail_start haproxy "$sdir/logs/haproxy.out"
	wait_port "$hap2" || fail_start haproxy2 "$sdir/logs/haproxy2.out"
	port_of=([direct]=$s_up [haproxy]=$hap [haproxy2]=$hap2)
	scale_start_fencegate fencegate "$fg"
	scale_start_fencegate fencegate2 "$fg2"
	start "$sdir/logs/fgstrict.log" "${fg_env[@]}" "$fencegate" -c "$sdir/strict.json"
	pid_of[fgstrict]=$started_pid
	port_of[fgstrict]=$fgs
	wait_health "$started_pid" "$fgs" "$sdir/logs/fgstrict.log"
	note "layout scale: no pinning, $ncpu CPUs; one loop/thread per proxy; $SCALE_LOCKS locks, $SCALE_KEYS keys"
	access_log="$sdir/upstream-access.log"
	lists_log="$sdir/lists.log"
	touch "$access_log" "$lists_log"
	note "sanity (scale): fencegate put1k=$(probe_status fencegate put1k) putnew=$(probe_status fencegate putnew)" \
		"uncached=$(probe_status fencegate uncached)" \
		"strict route=$(probe_status fgstrict strict) normal route=$(probe_status fgstrict put1k)"

	for t in fencegate fencegate2 haproxy haproxy2 fgstrict; do
		run_wrk scale "$t" put1k 64 1 warm
	done
	run_wrk scale fgstrict strict 64 1 warm
	run_wrk scale fencegate uncached 64 1 warm   # the HEAD's path (store threads)
	run_wrk scale haproxy uncached 64 1 warm
	for r in $(seq "$ROUNDS"); do
		note "layout scale, round $r/$ROUNDS"
		run_wrk scale fencegate put1k 64 "$SECONDS_PER_RUN" "$r"
		run_wrk scale haproxy put1k 64 "$SECONDS_PER_RUN" "$r"
		scale_pair fencegate fencegate2 64 "$r"
		scale_pair haproxy haproxy2 64 "$r"
		run_wrk scale fgstrict put1k 64 "$SECONDS_PER_RUN" "$r"
		run_wrk scale fgstrict strict 64 "$SECONDS_PER_RUN" "$r"
		scale_uncached fencegate "$r"
		scale_uncached haproxy "$r"
	done

	# the many locks: a first pass (each lock once: its load and self-test),
	# then writes spread over all of them, against HAProxy's figure
	rss0=$(status_kb "${pid_of[fencegate]}" VmRSS)
	wrk_env=(BENCH_LOCKS=$SCALE_LOCKS BENCH_STOP=$SCALE_LOCKS)
	run_wrk scale-locks-first fencegate locks 64 600 1
	rss1=$(status_kb "${pid_of[fencegate]}" VmRSS)
	sed -i '$ s/,"wrk":/,"rss0_kb":'"$rss0"',"rss_kb":'"$rss1"',"wrk":/' "$results"
	note "  locks: first pass over $SCALE_LOCKS locks done, RSS $rss0 -> $rss1 kB"
	wrk_env=(BENCH_LOCKS=$SCALE_LOCKS)
	for r in $(seq "$ROUNDS"); do
		run_wrk scale fencegate locks 64 "$SECONDS_PER_RUN" "$r"
		run_wrk scale haproxy locks 64 "$SECONDS_PER_RUN" "$r"
	done
	wrk_env=()
	rss1=$(status_kb "${pid_of[fencegate]}" VmRSS)
	note "  locks: RSS after the spread writes $rss1 kB"

	# the many keys, on the second replica (its cache held 256 keys so far)
	rss0=$(status_kb "${pid_of[fencegate2]}" VmRSS)
	read -r h m <<<"$(scale_cache_counts "$fg2")"
	note "  keys: $SCALE_KEYS new keys through fencegate2 (RSS $rss0 kB, cache hits $h misses $m)"
	scale_keys fencegate2
	meta_layouts+=$(printf '%s"scale":{"desc":"no pinning, %d CPUs, one loop/thread per proxy","threads":1,"locks":%d,"keys":%d,"rss0_keys_kb":%d,"rss_locks_end_kb":%d,"hwm_kb":{"fencegate":%d,"haproxy":%d,"fencegate2":%d}}' \
		"${meta_layouts:+,}" "$ncpu" "$SCALE_LOCKS" "$SCALE_KEYS" "$rss0" "$rss1" \
		"$(status_kb "${pid_of[fencegate]}" VmHWM)" "$(status_kb "${pid_of[haproxy]}" VmHWM)" \
		"$(status_kb "${pid_of[fencegate2]}" VmHWM)")
	stop_servers
}
