# Sourced by the scripts that build programs from source the first time
# (hack/tools/build-control-plane.sh, hack/lib/buildtool.sh for
# build-machine-api.sh, build-capi-world.sh and build-prometheus.sh,
# hack/payload/build.sh):
# `go build` prints nothing for many minutes while it compiles Kubernetes,
# the longest wait a newcomer has, so these scripts say every
# WINNODE_PROGRESS_SECONDS (default 30) that it still runs and for how
# long. One line per interval, not a spinner: the lines go to CI logs too.
# The sourcing script defines say (its log line on stderr).

# with_progress LABEL COMMAND...: runs COMMAND; while it runs, says
# "LABEL: still building, 4m30s so far" at every interval. Returns
# COMMAND's status.
with_progress() {
	local label=$1 rc=0 ticker
	shift
	progress_ticker "$label" "$(date +%s)" "$$" >&2 </dev/null &
	ticker=$!
	"$@" || rc=$?
	kill "$ticker" 2>/dev/null || true
	wait "$ticker" 2>/dev/null || true
	return "$rc"
}

# progress_ticker LABEL START PARENT: the lines of with_progress, until it
# is stopped or the script PARENT is gone (a background job does not get
# the Ctrl-C that stops the script).
progress_ticker() {
	local label=$1 start=$2 parent=$3 every=${WINNODE_PROGRESS_SECONDS:-30} sleeper=
	trap '[ -n "$sleeper" ] && kill "$sleeper" 2>/dev/null; exit 0' TERM
	while :; do
		sleep "$every" &
		sleeper=$!
		wait "$sleeper" || true
		kill -0 "$parent" 2>/dev/null || exit 0
		say "$label: still building, $(duration $(($(date +%s) - start))) so far"
	done
}

# duration SECONDS: "45s", "4m05s", "1h02m".
duration() {
	local s=$1
	if [ "$s" -lt 60 ]; then
		printf '%ds' "$s"
	elif [ "$s" -lt 3600 ]; then
		printf '%dm%02ds' $((s / 60)) $((s % 60))
	else
		printf '%dh%02dm' $((s / 3600)) $((s % 3600 / 60))
	fi
}
