#!/bin/sh
# Smoke test of the S3 store backend against a real moto_server: starts one
# on a free loopback port, creates a bucket with the AWS CLI, runs the
# test_store_s3 binary with FENCE_TEST_S3_* set, then checks with the AWS CLI
# that the objects it left really hold their bytes. Stops moto by its PID.
# Usage: tests/integration/test_store_s3.sh [path/to/test_store_s3]
# (default: ${O:-.}/build/test/test_store_s3, built by `make unit`).
set -u
bin=${1:-${O:-.}/build/test/test_store_s3}
[ -x "$bin" ] || { echo "test_store_s3.sh: $bin is not built (make unit)" >&2; exit 1; }
command -v moto_server >/dev/null || { echo "test_store_s3.sh: moto_server not found" >&2; exit 1; }

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
moto_server -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
moto=$!
trap 'kill "$moto" 2>/dev/null; wait "$moto" 2>/dev/null; rm -f "$log"' EXIT INT TERM

export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL
url=http://127.0.0.1:$port
i=0
until python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 100 ] || { echo "test_store_s3.sh: moto did not start" >&2; cat "$log" >&2; exit 1; }
	sleep 0.1
done
aws --endpoint-url "$url" s3api create-bucket --bucket fence-smoke >/dev/null || exit 1

FENCE_TEST_S3_ENDPOINT=$url FENCE_TEST_S3_BUCKET=fence-smoke "$bin" || { echo "test_store_s3.sh: FAIL" >&2; exit 1; }

# The listing test leaves 8 two-byte objects: moto must have stored the bytes.
sizes=$(aws --endpoint-url "$url" s3api list-objects-v2 --bucket fence-smoke \
	--prefix test-store-s3/ --query 'Contents[].Size' --output text)
n=$(echo "$sizes" | tr -s '\t ' '\n\n' | grep -c '^2$')
bad=$(echo "$sizes" | tr -s '\t ' '\n\n' | grep -vc '^2$')
if [ "$n" -ne 8 ] || [ "$bad" -ne 0 ]; then
	echo "test_store_s3.sh: FAIL: expected 8 objects of 2 bytes, sizes: $sizes" >&2
	exit 1
fi
echo "test_store_s3.sh: ok (moto on port $port)"
