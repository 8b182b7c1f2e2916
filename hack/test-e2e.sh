#!/usr/bin/env bash
# test-e2e.sh: the end-to-end tier of make test (hack/test.sh), ./test/e2e
# run as a few test processes at once instead of one.
#
#   hack/test-e2e.sh            # WINNODE_E2E_GROUPS groups (default 3)
#   hack/test-e2e.sh 'TestA|TestB'   # only the tests whose names match
#
# Why: one process runs the end-to-end tests one after the other, and most
# of their time is spent waiting (on simulated hosts booting, on the
# operator's poll and retry intervals, on the control plane): measured with
# /usr/bin/time on 2 cores, one process used 645 CPU-s in 1055 s (0.6 of a
# core; 812 s on a quiet machine). The tests
# of one process cannot run in parallel with each other (every test starts
# its own operator in the namespace winnode-system of the process's shared
# control plane), but separate processes can: each starts its own control
# plane (internal/testenv: free ports, its own temporary folder) and its own
# simulated hosts (winsim claims their loopback addresses across processes).
#
# How: the test binary is built once; its tests (-test.list) are split into
# groups by their measured durations (test/e2e/durations.txt),
# a test missing from that list counting as the default below, and the
# tests of a bundle (the tests of one kind of test world: Cluster API,
# OpenShift) kept in one group so that the group pays that world's start-up
# once. Every listed test is in exactly one group (the script checks it).
# Each group's output is kept in its own file and printed whole when all
# have ended, one group after the other; the script fails if any group did.
#
# Each group runs in a network namespace of its own (unshare; in a user
# namespace too when not root: no privilege on the machine, no change to
# it), where a local route makes every address of WINSIM_NETWORK (default
# 10.200.0.0/16) bindable and reachable on lo (Linux's AnyIP), and winsim
# gives the simulated hosts addresses from it (internal/winsim/network.go).
# Why: the real kube-apiserver refuses loopback addresses (127.0.0.N, the
# simulated hosts' addresses in a plain go test run) for its node proxy and
# in EndpointSlices; the tests of the operator's pre-flight kubelet check and
# of the exporters' EndpointSlices need both.
# Needs bash 5.1 or later (wait -n -p), unshare (util-linux) and ip
# (iproute2, installed with apt-get when missing).
set -euo pipefail
cd "$(dirname "$0")/.."

network=${WINSIM_NETWORK:-10.200.0.0/16}
if ! command -v unshare >/dev/null 2>&1; then
	echo "test-e2e: unshare is missing; install util-linux (apt-get install -y util-linux)" >&2
	exit 1
fi
sh hack/install-apt-package.sh iproute2 ip
# netns runs a command in a new network namespace with lo up and the local
# route for $network.
netns=(unshare --net)
if [ "$(id -u)" != 0 ]; then
	netns=(unshare --user --map-root-user --net)
fi
netns+=(sh -c 'ip link set lo up && ip route add local "$0" dev lo && exec "$@"' "$network")
if ! err=$("${netns[@]}" true 2>&1); then
	echo "test-e2e: cannot make a network namespace for the simulated hosts' network $network: $err" >&2
	echo "test-e2e: unprivileged user namespaces may be off (sysctl kernel.unprivileged_userns_clone=1, or AppArmor's kernel.apparmor_restrict_unprivileged_userns=0), or run as root" >&2
	exit 1
fi

groups=${WINNODE_E2E_GROUPS:-3}
durations=test/e2e/durations.txt
select=${1:-.*}
default_seconds=15

work=$(mktemp -d "${TMPDIR:-/tmp}/winnode-e2e-groups-XXXXXX")
pids=()
# On an early exit (an interrupt), the test processes still running are
# asked to stop (testenv.Main then stops their control planes).
cleanup() {
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

go test -c -o "$work/e2e.test" ./test/e2e
# The test binary runs where go test would run it: in the package's folder.
if ! (cd test/e2e && "$work/e2e.test" -test.list "$select") >"$work/list" 2>&1; then
	echo "test-e2e: listing the end-to-end tests failed:"
	cat "$work/list"
	exit 1
fi
grep -E '^(Test|Fuzz|Example)' "$work/list" >"$work/tests" || true
if [ ! -s "$work/tests" ]; then
	echo "test-e2e: the end-to-end test binary lists no test"
	exit 1
fi

# Longest first, each unit to the group with the least work so far.
awk -v groups="$groups" -v def="$default_seconds" '
	FNR == NR { if ($0 !~ /^#/ && NF >= 2) { secs[$1] = $2; if (NF >= 3) bundle[$1] = $3 }; next }
	{
		unit = ($1 in bundle) ? "bundle:" bundle[$1] : $1
		w = ($1 in secs) ? secs[$1] : def
		if (!(unit in weight)) { order[++n] = unit }
		weight[unit] += w
		members[unit] = members[unit] " " $1
	}
	END {
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
			if (weight[order[j]] > weight[order[i]]) { tmp = order[i]; order[i] = order[j]; order[j] = tmp }
		for (g = 1; g <= groups; g++) load[g] = 0
		for (i = 1; i <= n; i++) {
			best = 1
			for (g = 2; g <= groups; g++) if (load[g] < load[best]) best = g
			load[best] += weight[order[i]]
			list[best] = list[best] members[order[i]]
		}
		for (g = 1; g <= groups; g++) if (list[g] != "") print load[g] list[g]
	}' "$durations" "$work/tests" >"$work/groups"

# Every listed test in exactly one group.
if ! diff <(tr ' ' '\n' <"$work/groups" | grep -E '^(Test|Fuzz|Example)' | sort) <(sort "$work/tests") >/dev/null; then
	echo "test-e2e: the groups do not hold every test exactly once"
	exit 1
fi

n=0
declare -A group_of start_of
while read -r estimate names; do
	n=$((n + 1))
	regex="^($(tr ' ' '|' <<<"$names"))\$"
	echo "test-e2e: group $n (about ${estimate}s alone): $names"
	(cd test/e2e && WINSIM_NETWORK=$network exec "${netns[@]}" "$work/e2e.test" -test.timeout 25m -test.run "$regex") </dev/null >"$work/out.$n" 2>&1 &
	pids+=($!)
	group_of[$!]=$n
	start_of[$n]=$SECONDS
done <"$work/groups"

# Wait for each group, noting when it ended and how.
declare -A rc_of=() secs_of=()
while [ ${#rc_of[@]} -lt "$n" ]; do
	rc=0
	wait -n -p pid "${pids[@]}" || rc=$?
	g=${group_of[$pid]}
	rc_of[$g]=$rc
	secs_of[$g]=$((SECONDS - start_of[$g]))
	running=()
	for p in "${pids[@]}"; do
		[ "$p" = "$pid" ] || running+=("$p")
	done
	pids=("${running[@]}")
done

failed=0
for g in $(seq 1 "$n"); do
	names=$(sed -n "${g}p" "$work/groups" | cut -d' ' -f2-)
	if [ "${rc_of[$g]}" -eq 0 ]; then
		echo "ok  	test/e2e group $g	${secs_of[$g]}s	($names)"
	else
		failed=1
		echo "=== test/e2e group $g ($names): exit status ${rc_of[$g]} after ${secs_of[$g]}s; its output:"
		cat "$work/out.$g"
		echo "FAIL	test/e2e group $g"
	fi
done
exit "$failed"
