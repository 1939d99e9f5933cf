#!/usr/bin/env bash
# Install and run a local SeaweedFS (master, volume server, filer and S3 gateway in one
# process) for tests and demos, without Docker: the second S3 engine the tests run on.
#
#   deploy/seaweedfs/seaweedfs.sh install   build the pinned SeaweedFS from the Go module proxy (cached)
#   deploy/seaweedfs/seaweedfs.sh start     start it on 127.0.0.1 with a temp data dir, wait until it takes writes
#   deploy/seaweedfs/seaweedfs.sh stop      stop the server started by `start`
#   deploy/seaweedfs/seaweedfs.sh env       print the export lines the tests read
#
# Settings (environment): SEAWEEDFS_PORT (default 8333: the S3 gateway; the master, volume
# server and filer listen on the next seven ports, HTTP then gRPC), SEAWEEDFS_ACCESS_KEY /
# SEAWEEDFS_SECRET_KEY (default: the test credentials MinIO uses too, so one
# AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY pair serves both engines), TRANSCRIPT_CACHE
# (default ~/.cache/transcript-ci: the binary lives in $TRANSCRIPT_CACHE/bin),
# SEAWEEDFS_STATE_DIR (default $TRANSCRIPT_CACHE/run-seaweedfs: pid file, log, data dir).
set -euo pipefail

SEAWEEDFS_MODULE="github.com/seaweedfs/seaweedfs"
SEAWEEDFS_VERSION="v0.0.0-20261109003541-7506e5f91cd6"
CACHE="${TRANSCRIPT_CACHE:-$HOME/.cache/transcript-ci}"
BIN="$CACHE/bin/weed"
STATE="${SEAWEEDFS_STATE_DIR:-$CACHE/run-seaweedfs}"
PORT="${SEAWEEDFS_PORT:-8333}"
ACCESS="${SEAWEEDFS_ACCESS_KEY:-transcript-test}"
SECRET="${SEAWEEDFS_SECRET_KEY:-transcript-test-secret}"

log() { echo "seaweedfs.sh: $*" >&2; }
# shellcheck source=../lib/server.sh
. "$(dirname "$0")/../lib/server.sh"

install() {
	if cached weed "$SEAWEEDFS_VERSION"; then
		return 0
	fi
	log "building $SEAWEEDFS_MODULE/weed@$SEAWEEDFS_VERSION (many minutes the first time, cached in $CACHE/bin)"
	mkdir -p "$CACHE/bin"
	# The module's go.mod has a replace directive, which `go install module@version`
	# refuses: download the module from the proxy (outside any module, so the
	# project's go.mod does not interfere) and build its main package inside it.
	local dir
	dir=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "$SEAWEEDFS_MODULE@$SEAWEEDFS_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	if [ -z "$dir" ] || [ ! -d "$dir/weed" ]; then
		log "go mod download of $SEAWEEDFS_MODULE@$SEAWEEDFS_VERSION gave no module directory"
		return 1
	fi
	(cd "$dir" && go build -trimpath -o "$BIN.tmp" ./weed)
	mv "$BIN.tmp" "$BIN"
	echo "$SEAWEEDFS_VERSION" >"$CACHE/bin/weed.version"
}

# s3 sends one signed S3 request (curl's SigV4; the body, if any, unsigned) to the
# gateway.
s3() {
	local method=$1 path=$2
	curl -fsS -o /dev/null --max-time 10 -X "$method" --aws-sigv4 "aws:amz:us-east-1:s3" \
		--user "$ACCESS:$SECRET" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
		${3:+--data-binary "$3"} "http://127.0.0.1:$PORT/$path" 2>/dev/null
}

# ready reports that the gateway answers and takes a write: a volume server has
# registered with the master, which a health check alone does not tell.
ready() {
	local probe="transcript-ready-$$"
	s3 PUT "$probe" || return 1
	local ok=1
	s3 PUT "$probe/probe" "ready" && ok=0
	s3 DELETE "$probe/probe" || true
	s3 DELETE "$probe" || true
	return $ok
}

start() {
	install
	if ready; then
		log "already live on 127.0.0.1:$PORT"
		return 0
	fi
	mkdir -p "$STATE"
	local data
	data=$(mktemp -d "${TMPDIR:-/tmp}/seaweedfs-data.XXXXXX")
	echo "$data" >"$STATE/data-dir"
	mkdir -p "$data/vol"
	cat >"$data/s3.json" <<EOF
{"identities": [{"name": "transcript-test",
  "credentials": [{"accessKey": "$ACCESS", "secretKey": "$SECRET"}],
  "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]}
EOF
	# Every S3 bucket is a collection of its own, and a new collection grows 7
	# volumes by default: the tests make hundreds of buckets, so grow one at a time,
	# keep volumes small and let their number follow the free disk space.
	WEED_MASTER_VOLUME_GROWTH_COPY_1=1 nohup "$BIN" server -dir="$data/vol" \
		-ip=127.0.0.1 -ip.bind=127.0.0.1 -master.telemetry=false \
		-master.volumeSizeLimitMB=64 -volume.max=0 -volume.preStopSeconds=0 \
		-master.port=$((PORT + 1)) -volume.port=$((PORT + 2)) -filer -filer.port=$((PORT + 3)) \
		-master.port.grpc=$((PORT + 4)) -volume.port.grpc=$((PORT + 5)) -filer.port.grpc=$((PORT + 6)) \
		-s3 -s3.port="$PORT" -s3.port.grpc=$((PORT + 7)) -s3.port.iceberg=0 -s3.port.lance=0 \
		-s3.config="$data/s3.json" >"$STATE/seaweedfs.log" 2>&1 &
	echo $! >"$STATE/seaweedfs.pid"
	wait_up seaweedfs ready 240
}

stop() { stop_server seaweedfs; }

env_lines() {
	echo "export TRANSCRIPT_TEST_SEAWEEDFS_ENDPOINT=127.0.0.1:$PORT"
	echo "export AWS_ACCESS_KEY_ID=$ACCESS"
	echo "export AWS_SECRET_ACCESS_KEY=$SECRET"
}

main "$@"
