# bigupload.sh — the memory rows of the bench: how much a single large
# upload grows fencegate's resident memory, in S3 mode (in front of the nginx
# stand-in) and on the embedded store. Sourced by run.sh, which provides
# start, stop_servers, free_ports, wait_port, wait_health, status_kb, note,
# fg_env, fg_common, $work, $data, $here, $BUCKET, $EPOCH and $BIG_MIB.
#
# The peak is reset just before the upload (writing 5 to
# /proc/PID/clear_refs), so "growth" = VmHWM after the upload - VmRSS
# before it: the memory the upload itself needed, not start-up's. In S3
# mode the stand-in hands /BUCKET/big/ to a sink (python, below) that reads
# every byte before it answers, so the whole body goes through the proxy
# (nginx itself answers a PUT it does not proxy before reading the body).

big_one() { # pid port path token label -> JSON member
	local pid=$1 port=$2 path=$3 token=$4 label=$5 rss0 hwm code sent secs t0 t1
	echo 5 >"/proc/$pid/clear_refs" 2>/dev/null ||
		note "cannot reset the peak RSS of $pid: $label's growth includes start-up"
	rss0=$(status_kb "$pid" VmRSS)
	t0=$(date +%s.%N)
	read -r code sent <<<"$(curl -s -o "$work/big-$label.out" -w '%{http_code} %{size_upload}' \
		-T "$work/big.bin" -H 'Content-Type: application/octet-stream' -H 'Expect:' \
		-H "X-Fencing-Token: $token" "http://127.0.0.1:$port$path" || echo 000 0)"
	t1=$(date +%s.%N)
	hwm=$(status_kb "$pid" VmHWM)
	secs=$(python3 -c "print('%.2f' % ($t1 - $t0))")
	note "  $label: ${BIG_MIB} MiB PUT -> $code in ${secs}s ($sent bytes sent); VmRSS before $rss0 kB, VmHWM after $hwm kB"
	printf '"%s":{"status":"%s","rss0_kb":%d,"hwm_kb":%d,"seconds":%s}' \
		"$label" "$code" "$rss0" "$hwm" "$secs"
}

big_uploads() { # -> $work/big.json: JSON members "s3":{...},"local":{...}
	local dir="$work/big" up_port probe_port fg_port local_port sink_port fg_pid epoch out
	mkdir -p "$dir/tmp" "$dir/logs" "$dir/store"
	chmod 755 "$dir"
	chmod 1777 "$dir/tmp"
	truncate -s "${BIG_MIB}M" "$work/big.bin"
	read -r up_port probe_port fg_port local_port sink_port <<<"$(free_ports 5)"
	sed -e "s|@DIR@|$dir|g" -e "s|@DATA@|$data|g" -e "s|@BUCKET@|$BUCKET|g" \
		-e "s|@THREADS@|1|g" -e "s|@UPSTREAM_PORT@|$up_port|g" \
		-e "s|@PROBE_PORT@|$probe_port|g" \
		-e "s|# @BIG_LOCATION@|location /$BUCKET/big/ { proxy_pass http://127.0.0.1:$sink_port; proxy_http_version 1.1; proxy_request_buffering off; }|" \
		"$here/upstream.conf.in" >"$dir/upstream.conf"
	start "$dir/logs/sink.log" python3 -c '
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def answer(self, status, etag=None):
        self.send_response(status)
        if etag:
            self.send_header("ETag", etag)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def do_HEAD(self):
        self.answer(404)
    def do_PUT(self):
        left = int(self.headers.get("Content-Length") or 0)
        got = 0
        while left:
            b = self.rfile.read(min(left, 1 << 20))
            if not b:
                break
            left -= len(b)
            got += len(b)
        sys.stderr.write("sink: %s received %d bytes\n" % (self.path, got))
        self.answer(200, "\"big-%d\"" % got)
HTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
' "$sink_port"
	wait_port "$sink_port" || fail_start sink "$dir/logs/sink.log"
	start "$dir/logs/probe.log" python3 "$here/probe_server.py" "$probe_port"
	start "$dir/logs/upstream.out" nginx -p "$dir" -c "$dir/upstream.conf" -g 'daemon off;'
	wait_port "$probe_port" || fail_start probe "$dir/logs/probe.log"
	wait_port "$up_port" || fail_start stand-in "$dir/upstream-error.log"
	note "memory: one ${BIG_MIB} MiB fenced upload"

	start "$dir/logs/fencegate-s3.log" "${fg_env[@]}" "$fencegate" \
		--listen "127.0.0.1:$fg_port" --upstream "http://127.0.0.1:$up_port" "${fg_common[@]}"
	fg_pid=$started_pid
	wait_health "$fg_pid" "$fg_port" "$dir/logs/fencegate-s3.log"
	out=$(big_one "$fg_pid" "$fg_port" "/$BUCKET/big/obj" "$EPOCH" s3)
	note "  $(tail -n 1 "$dir/logs/sink.log")"

	start "$dir/logs/fencegate-local.log" "$fencegate" --listen "127.0.0.1:$local_port" \
		--data "$dir/store" "${fg_common[@]}"
	fg_pid=$started_pid
	wait_health "$fg_pid" "$local_port" "$dir/logs/fencegate-local.log"
	curl -s -o /dev/null -X PUT "http://127.0.0.1:$local_port/$BUCKET"
	epoch=$(curl -s -X POST -d '{"ttlMs":600000}' \
		"http://127.0.0.1:$local_port/_fence/locks/$BUCKET/acquire" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["epoch"])' 2>/dev/null || echo 1)
	out+=,$(big_one "$fg_pid" "$local_port" "/$BUCKET/big" "$epoch" local)
	stop_servers
	rm -f "$work/big.bin"
	echo "$out" >"$work/big.json"
}
