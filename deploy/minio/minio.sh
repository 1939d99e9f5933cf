#!/usr/bin/env bash
# Install and run a local MinIO for tests and demos, without Docker.
#
#   deploy/minio/minio.sh install        build the pinned MinIO with `go install` (cached)
#   deploy/minio/minio.sh start          start it on 127.0.0.1 with a temp data dir, wait until live
#   deploy/minio/minio.sh stop           stop the server started by `start`
#   deploy/minio/minio.sh env            print the export lines the tests (and README.md) read
#
# Settings (environment): MINIO_PORT (default 9000), MINIO_CONSOLE_PORT (9001),
# MINIO_ROOT_USER / MINIO_ROOT_PASSWORD (test defaults below), TRANSCRIPT_CACHE
# (default ~/.cache/transcript-ci: the binary lives in $TRANSCRIPT_CACHE/bin),
# MINIO_STATE_DIR (default $TRANSCRIPT_CACHE/run: pid file, log, data dir).
set -euo pipefail

MINIO_VERSION="v0.0.0-20260212201848-7aac2a2c5b7c"
CACHE="${TRANSCRIPT_CACHE:-$HOME/.cache/transcript-ci}"
BIN="$CACHE/bin/minio"
STATE="${MINIO_STATE_DIR:-$CACHE/run}"
PORT="${MINIO_PORT:-9000}"
CONSOLE_PORT="${MINIO_CONSOLE_PORT:-9001}"
export MINIO_ROOT_USER="${MINIO_ROOT_USER:-transcript-test}"
export MINIO_ROOT_PASSWORD="${MINIO_ROOT_PASSWORD:-transcript-test-secret}"

log() { echo "minio.sh: $*" >&2; }
# shellcheck source=../lib/server.sh
. "$(dirname "$0")/../lib/server.sh"

install() {
	if cached minio "$MINIO_VERSION"; then
		return 0
	fi
	log "building github.com/minio/minio@$MINIO_VERSION (a few minutes, cached in $CACHE/bin)"
	mkdir -p "$CACHE/bin"
	# Build outside any module so the project's go.mod does not interfere.
	(cd /tmp && GOBIN="$CACHE/bin" GOFLAGS=-mod=mod go install "github.com/minio/minio@$MINIO_VERSION")
	echo "$MINIO_VERSION" >"$CACHE/bin/minio.version"
}

live() { curl -fsS -o /dev/null "http://127.0.0.1:$PORT/minio/health/live" 2>/dev/null; }

start() {
	install
	if live; then
		log "already live on 127.0.0.1:$PORT"
		return 0
	fi
	mkdir -p "$STATE"
	local data
	data=$(mktemp -d "${TMPDIR:-/tmp}/minio-data.XXXXXX")
	echo "$data" >"$STATE/data-dir"
	nohup "$BIN" server --quiet --address "127.0.0.1:$PORT" --console-address "127.0.0.1:$CONSOLE_PORT" "$data" \
		>"$STATE/minio.log" 2>&1 &
	echo $! >"$STATE/minio.pid"
	wait_up minio live 120
}

stop() { stop_server minio; }

env_lines() {
	echo "export MINIO_ENDPOINT=127.0.0.1:$PORT"
	echo "export TRANSCRIPT_TEST_S3_ENDPOINT=127.0.0.1:$PORT"
	echo "export AWS_ACCESS_KEY_ID=$MINIO_ROOT_USER"
	echo "export AWS_SECRET_ACCESS_KEY=$MINIO_ROOT_PASSWORD"
}

main "$@"
