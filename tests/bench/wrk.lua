-- wrk script for the fencegate bench. Environment (set by run.sh):
--   BENCH_METHOD  GET or PUT
--   BENCH_PATH    GET: the object's path; PUT: key prefix, a key number
--                 (0..BENCH_KEYS-1, round robin) is appended
--   BENCH_BYTES   PUT body size
--   BENCH_TOKEN   X-Fencing-Token value ("" = no header)
-- done() prints one "BENCHJSON {...}" line with exact counts and latency
-- percentiles (microseconds) for report.py; wrk --latency prints its own.
local method = os.getenv("BENCH_METHOD") or "GET"
local path = os.getenv("BENCH_PATH") or "/"
local nbytes = tonumber(os.getenv("BENCH_BYTES") or "0")
local token = os.getenv("BENCH_TOKEN") or ""
local nkeys = tonumber(os.getenv("BENCH_KEYS") or "256")
local n = 0
local body = nil
local headers = {}

if method == "PUT" then
	body = string.rep("x", nbytes)
	headers["Content-Type"] = "application/octet-stream"
	if token ~= "" then
		headers["X-Fencing-Token"] = token
	end
end

request = function()
	if method == "PUT" then
		n = n + 1
		return wrk.format("PUT", string.format("%s%04d", path, n % nkeys), headers, body)
	end
	return wrk.format("GET", path, headers, nil)
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
