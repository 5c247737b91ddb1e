#!/bin/sh
# worker.sh — a read-modify-write worker in shell: `fencectl run` takes the
# lock through fencegate's S3 API, renews it while the step runs and stops
# the step if the lease is lost; every write carries $FENCING_TOKEN, so a
# step that outlived its lease is refused by the proxy (409), never stored.
#
#   FENCEGATE=http://127.0.0.1:8080 examples/worker.sh BUCKET KEY
#
# It adds 1 to the number stored at BUCKET/KEY and prints the new value.
set -eu
gate=${FENCEGATE:-http://127.0.0.1:8080}
bucket=$1
key=$2
: "${AWS_ACCESS_KEY_ID:=worker}" "${AWS_SECRET_ACCESS_KEY:=worker}"
export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
exec "${FENCECTL:-fencectl}" --store "s3://$bucket" --endpoint "$gate" run "$bucket" --ttl 30s -- \
	sh -c '
		url="$0/$1/$2"
		old=$(curl -fsS "$url" 2>/dev/null || echo 0)
		new=$((old + 1))
		curl -fsS -o /dev/null -X PUT -H "X-Fencing-Token: $FENCING_TOKEN" \
			--data-binary "$new" "$url"
		echo "$new"' "$gate" "$bucket" "$key"
