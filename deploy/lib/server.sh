# Shared by deploy/minio/minio.sh and deploy/seaweedfs/seaweedfs.sh (sourced, not run):
# a cached, pinned server binary, a process started in the background with its pid and
# data directory under $STATE, and the install|start|stop|env command line.
# The sourcing script sets CACHE and STATE and defines log, install, start and env_lines.

# cached NAME VERSION succeeds when $CACHE/bin/NAME was built at VERSION.
cached() {
	[ -x "$CACHE/bin/$1" ] && [ -f "$CACHE/bin/$1.version" ] && [ "$(cat "$CACHE/bin/$1.version")" = "$2" ]
}

# wait_up NAME READY TRIES polls the function READY every half second, TRIES times at
# most, until it succeeds; it fails early, showing the log, when the process in
# $STATE/NAME.pid exits.
wait_up() {
	local name=$1 ready=$2 tries=$3 pid
	pid=$(cat "$STATE/$name.pid")
	for _ in $(seq 1 "$tries"); do
		if "$ready"; then
			log "live on 127.0.0.1:$PORT (pid $pid, data $(cat "$STATE/data-dir"))"
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			log "server exited; its log:"
			tail -n 50 "$STATE/$name.log" >&2
			return 1
		fi
		sleep 0.5
	done
	log "not live after $((tries / 2))s; its log:"
	tail -n 50 "$STATE/$name.log" >&2
	return 1
}

# stop_server NAME stops the process in $STATE/NAME.pid (SIGTERM, then SIGKILL after
# 10 s) and removes the data directory named in $STATE/data-dir.
stop_server() {
	local name=$1 pid
	if [ -f "$STATE/$name.pid" ]; then
		pid=$(cat "$STATE/$name.pid")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
		kill -9 "$pid" 2>/dev/null || true
		rm -f "$STATE/$name.pid"
	fi
	if [ -f "$STATE/data-dir" ]; then
		rm -rf "$(cat "$STATE/data-dir")"
		rm -f "$STATE/data-dir"
	fi
}

# main runs the command line: install|start|stop|env.
main() {
	case "${1:-}" in
	install) install ;;
	start) start ;;
	stop) stop ;;
	env) env_lines ;;
	*)
		echo "usage: $0 install|start|stop|env" >&2
		exit 2
		;;
	esac
}
