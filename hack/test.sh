#!/usr/bin/env bash
# Everything CI runs (make test), in order:
#   1. the tools the tests need, installed by the project's own scripts
#      (the control plane, the Machine API's and Cluster API's controllers
#      and Prometheus built from source, OpenSSH's clients);
#   2. make lint (hack/lint.sh: gofmt, go vet for Linux and Windows and of
#      the hack/ modules, staticcheck, generated files), and the Windows
#      cross-build;
#   3. the Windows payload built from source (cached after the first build);
#   4. go test with the race detector (unit, fuzz seeds, integration against
#      the real control plane, manifests against the API server, the
#      payload's checks);
#   5. at once (step 5's comment says why): end to end with simulated
#      Windows hosts, without the race detector, as a few test processes
#      (hack/test-e2e.sh); the tests of the hack/ modules that have some;
#      the Wine tier (the Windows-only code run under Wine);
#   6. no test control-plane process left behind.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s ===\n' "$*"; }
started=$SECONDS
# Every process this run starts inherits this mark, so that the last step
# looks only for control planes of this run, not of other runs on the machine.
export WINNODE_TEST_RUN="$$-$RANDOM"

step "control plane (built from source once, 11.5 to 34 minutes on 2 cores, then cached)"
export WINNODE_K8S_BIN
WINNODE_K8S_BIN=$(bash hack/tools/build-control-plane.sh | tail -n1)

step "Machine API controllers for the openshift flavor (built from source once, about 12 minutes on 2 cores, then cached)"
export WINNODE_MACHINE_API_BIN
WINNODE_MACHINE_API_BIN=$(bash hack/tools/build-machine-api.sh | tail -n1)

step "Cluster API controllers and CRDs for the capi flavor (built from source once, about 14 minutes on 2 cores, then cached)"
export WINNODE_CAPI_WORLD_BIN
WINNODE_CAPI_WORLD_BIN=$(bash hack/tools/build-capi-world.sh | tail -n1)

step "Prometheus for the node-metrics end-to-end test (built from source once, 407 CPU-seconds: 16 minutes on a loaded 2-core machine, then cached)"
export WINNODE_PROMETHEUS_BIN
WINNODE_PROMETHEUS_BIN=$(bash hack/tools/build-prometheus.sh | tail -n1)

step "OpenSSH clients for the simulator's tests"
bash hack/install-openssh-client.sh

step "make lint (gofmt, go vet, staticcheck, generated files)"
bash hack/lint.sh

step "Windows cross-build"
GOOS=windows GOARCH=amd64 go build -o bin/windows-amd64/winnode-agent.exe ./cmd/winnode-agent

step "Windows payload (make payload; built from source once, about 20 minutes on 2 cores, then cached)"
export WINNODE_PAYLOAD_DIR
WINNODE_PAYLOAD_DIR=$(bash hack/payload/build.sh | tail -n1)

# One folder of compressed simulated-payload copies for every test process
# of this run (testenv.PayloadCache): each content is compressed once, not
# once per test (a minute each under the race detector).
export WINNODE_SIMPAYLOAD_CACHE
WINNODE_SIMPAYLOAD_CACHE=$(mktemp -d "${TMPDIR:-/tmp}/winnode-simpayload-cache-XXXXXX")
trap 'rm -rf "$WINNODE_SIMPAYLOAD_CACHE"' EXIT

step "go test -race (unit, fuzz seeds, integration)"
# The race detector needs cgo (the Makefile's default is CGO_ENABLED=0).
# Every package but the end-to-end one runs under it: the operator's
# controllers, the simulator, the agent and the CLI start their goroutines
# in their own packages' integration tests, against the real control plane.
CGO_ENABLED=1 go test -race -count=1 -p 2 -timeout 25m $(go list ./... | grep -v '/test/e2e$')
step "end to end, the hack/ modules' tests and the Wine tier, at once"
# These three run at the same time, each with its output kept in a file and
# printed whole once it ends (in this order), so that the run waits for the
# slowest of them rather than for their sum: the end-to-end tests spend most
# of their time waiting on simulated hosts and on the operator's intervals
# (one process of them used about half of one core), and hack/test-e2e.sh
# already runs them as a few processes at once (why, and how the tests are
# split: its header and test/e2e/README.md). Each still fails the run.
# Measured with /usr/bin/time on the shared 2-core machine: one e2e process
# took 1071 s for 645 CPU-s, the Wine tier 92 s for 27 CPU-s; this step
# took 919 s for 798 CPU-s under a load twice as high. The steps before it
# stay one after the other: in a quiet run (1627 s, 1596 CPU-s) everything
# but the end-to-end tests used about 1.35 cores on average, mostly the race
# tier (go test -p 2); what running end to end beside it would gain or
# cost in flakes under load is not measured yet.
#
# The end-to-end tests run without the race detector: measured on 2 cores
# it costs them 4.4 times their CPU (TestNoopCheckIsOneExecAndNoWrite and
# TestKeyRotation: 17 s of CPU without it, 67 s with it), which would take
# make test past 30 minutes; the code they run is raced in its packages.
hack_module_tests() {
	# The separate modules under hack/ that have tests (hack/modules.sh).
	# run_bg runs this where set -e does not apply: each failure is counted.
	local mod rc=0
	for mod in $(bash hack/modules.sh --tests); do
		go -C "$mod" test -count=1 ./... || rc=1
	done
	return "$rc"
}
logs=$(mktemp -d "${TMPDIR:-/tmp}/winnode-test-logs-XXXXXX")
trap 'rm -rf "$WINNODE_SIMPAYLOAD_CACHE" "$logs"' EXIT
declare -A tier_pid
run_bg() { # name, command...: runs the command in the background, its output to $logs/name
	local name=$1
	shift
	(
		start=$SECONDS rc=0
		("$@") || rc=$?
		echo "$name: exit status $rc after $((SECONDS - start))s"
		exit "$rc"
	) >"$logs/$name" 2>&1 </dev/null &
	tier_pid[$name]=$!
}
run_bg e2e bash hack/test-e2e.sh
run_bg hack-modules hack_module_tests
run_bg wine bash hack/wine/test.sh
failed_tiers=()
for name in e2e hack-modules wine; do
	rc=0
	wait "${tier_pid[$name]}" || rc=$?
	printf -- '--- %s:\n' "$name"
	cat "$logs/$name"
	[ "$rc" -eq 0 ] || failed_tiers+=("$name")
done
if [ ${#failed_tiers[@]} -gt 0 ]; then
	echo "make test: failed: ${failed_tiers[*]}"
	exit 1
fi

step "no control-plane process left behind"
left=""
for pid in $(pgrep -f 'winnode-testenv-' || true); do
	if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "WINNODE_TEST_RUN=$WINNODE_TEST_RUN"; then
		left+="$(ps -o pid=,args= -p "$pid")"$'\n'
	fi
done
if [ -n "$left" ]; then
	echo "processes of a test control plane are still running:"
	echo "$left"
	exit 1
fi
echo "none"
echo "make test: all tiers passed in $((SECONDS - started))s"
