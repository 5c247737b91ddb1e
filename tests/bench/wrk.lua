-- wrk script for the fencegate bench. Environment (set by run.sh):
--   BENCH_METHOD  GET or PUT
--   BENCH_PATH    GET: the object's path; PUT: key prefix, a key number is
--                 appended (%04d; %07d for BENCH_KEYS=0)
--   BENCH_BYTES   PUT body size
--   BENCH_TOKEN   X-Fencing-Token value ("" = no header)
--   BENCH_KEYS    PUT: key numbers 0..BENCH_KEYS-1, round robin (256);
--                 0: every PUT a new key (numbers from BENCH_KEY_FROM up,
--                 BENCH_PATH should then be unique to the run)
--   BENCH_KEY_FROM first key number (0)
--   BENCH_LOCKS   > 0: the PUT goes to bucket lkNNNNN (NNNNN = the request
--                 number modulo BENCH_LOCKS), key BENCH_PATH + key number:
--                 writes spread over that many locks (each bucket's own)
--   BENCH_STOP    > 0: stop after that many responses (one wrk thread),
--                 and create the file BENCH_STOP_FILE
-- done() prints one "BENCHJSON {...}" line with exact counts and latency
-- percentiles (microseconds) for report.py; wrk --latency prints its own.
local method = os.getenv("BENCH_METHOD") or "GET"
local path = os.getenv("BENCH_PATH") or "/"
local nbytes = tonumber(os.getenv("BENCH_BYTES") or "0")
local token = os.getenv("BENCH_TOKEN") or ""
local nkeys = tonumber(os.getenv("BENCH_KEYS") or "256")
local key_from = tonumber(os.getenv("BENCH_KEY_FROM") or "0")
local nlocks = tonumber(os.getenv("BENCH_LOCKS") or "0")
local stop_after = tonumber(os.getenv("BENCH_STOP") or "0")
-- wrk's main thread sleeps for the whole -d whatever its threads do: at
-- the count, the file BENCH_STOP_FILE tells run.sh to end the run (SIGINT,
-- after which wrk reports as usual)
local stop_file = os.getenv("BENCH_STOP_FILE") or ""
local n = 0
local answered = 0
local body = nil
local headers = {}

if method == "PUT" then
	body = string.rep("x", nbytes)
	headers["Content-Type"] = "application/octet-stream"
	if token ~= "" then
		headers["X-Fencing-Token"] = token
	end
end

local function stop()
	if stop_file ~= "" then
		local f = io.open(stop_file, "w")
		if f then
			f:close()
		end
	end
	wrk.thread:stop()
end

request = function()
	if stop_after > 0 and n >= stop_after + 256 then
		-- answers that never come (timeouts: wrk has no callback for
		-- them) must not hold the run open until -d
		stop()
	end
	if method == "PUT" then
		n = n + 1
		if nlocks > 0 then
			return wrk.format("PUT", string.format("/lk%05d%s%04d", n % nlocks, path,
				math.floor(n / nlocks) % nkeys), headers, body)
		end
		if nkeys == 0 then
			return wrk.format("PUT", string.format("%s%07d", path, key_from + n - 1),
				headers, body)
		end
		return wrk.format("PUT", string.format("%s%04d", path, n % nkeys), headers, body)
	end
	return wrk.format("GET", path, headers, nil)
end

if stop_after > 0 then
	response = function(status, headers, body)
		answered = answered + 1
		if answered == stop_after then
			stop()
		end
	end
end

done = function(summary, latency, requests)
	local e = summary.errors
	io.write(string.format(
		'BENCHJSON {"requests":%d,"duration_us":%d,"non2xx":%d,' ..
		'"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d,' ..
		'"p50_us":%d,"p99_us":%d,"mean_us":%.1f}\n',
		summary.requests, summary.duration, e.status, e.connect, e.read,
		e.write, e.timeout, latency:percentile(50), latency:percentile(99),
		latency.mean))
end
