#!/usr/bin/env bash
# Everything CI runs (make test), in order:
#   1. OpenSSH's clients (installed by the project's own script);
#   2. at once: the tools the tests need, built from source by the
#      project's own scripts and cached (the control plane, the Machine
#      API's and Cluster API's controllers, Prometheus), the Windows payload
#      (cached likewise), make lint (hack/lint.sh: gofmt, go vet for Linux
#      and Windows and of the hack/ modules, staticcheck, generated files)
#      and the Windows cross-build;
#   3. go test with the race detector (unit, fuzz seeds, integration against
#      the real control plane, manifests against the API server, the
#      payload's checks);
#   4. at once (step 4's comment says why): end to end with simulated
#      Windows hosts, without the race detector, as a few test processes
#      (hack/test-e2e.sh); the tests of the hack/ modules that have some;
#      the Wine tier (the Windows-only code run under Wine);
#   5. no test control-plane process left behind.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s ===\n' "$*"; }
started=$SECONDS
# Every process this run starts inherits this mark, so that the last step
# looks only for control planes of this run, not of other runs on the machine.
export WINNODE_TEST_RUN="$$-$RANDOM"

step "OpenSSH clients for the simulator's tests"
bash hack/install-openssh-client.sh

logs=$(mktemp -d "${TMPDIR:-/tmp}/winnode-test-logs-XXXXXX")
trap 'rm -rf "$logs"' EXIT
declare -A tier_pid
run_bg() { # name, command...: runs the command in the background, its output to $logs/name (stdout also to $logs/name.out)
	local name=$1
	shift
	(
		start=$SECONDS rc=0
		("$@" | tee "$logs/$name.out") || rc=$?
		echo "$name: exit status $rc after $((SECONDS - start))s"
		exit "$rc"
	) >"$logs/$name" 2>&1 </dev/null &
	tier_pid[$name]=$!
}
# wait_all name...: waits for each, printing its output whole once it ends
# (in this order); fails the run naming every one that failed.
wait_all() {
	local name rc failed=()
	for name in "$@"; do
		rc=0
		wait "${tier_pid[$name]}" || rc=$?
		printf -- '--- %s:\n' "$name"
		cat "$logs/$name"
		[ "$rc" -eq 0 ] || failed+=("$name")
	done
	if [ ${#failed[@]} -gt 0 ]; then
		echo "make test: failed: ${failed[*]}"
		exit 1
	fi
}

step "the test world's programs and the Windows payload, built at once; make lint and the Windows cross-build beside them"
# Each program is built from source through the module proxy once, then
# cached (~/.cache/winnode): the control plane (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler), the Machine API's controllers
# (openshift flavor), Cluster API's controllers and CRDs (capi flavor),
# Prometheus (the node-metrics end-to-end test) and the Windows payload
# (make payload). On a warm machine each prints its cached path at once.
# On a cold one they run side by side, because one build alone leaves
# cores idle while it downloads modules and links (one process): one after
# the other, these steps took 4,235 CPU-seconds in the first cold run
# (docs/performance.md, "A cold make test"), over 35 minutes of 2 cores.
# Each script takes its own lock, so two runs on one machine do not build
# the same program twice.
run_bg control-plane bash hack/tools/build-control-plane.sh
run_bg machine-api bash hack/tools/build-machine-api.sh
run_bg capi-world bash hack/tools/build-capi-world.sh
run_bg prometheus bash hack/tools/build-prometheus.sh
run_bg payload bash hack/payload/build.sh
run_bg lint bash hack/lint.sh
run_bg cross-build env GOOS=windows GOARCH=amd64 go build -o bin/windows-amd64/winnode-agent.exe ./cmd/winnode-agent
wait_all control-plane machine-api capi-world prometheus payload lint cross-build
export WINNODE_K8S_BIN WINNODE_MACHINE_API_BIN WINNODE_CAPI_WORLD_BIN WINNODE_PROMETHEUS_BIN WINNODE_PAYLOAD_DIR
WINNODE_K8S_BIN=$(tail -n1 "$logs/control-plane.out")
WINNODE_MACHINE_API_BIN=$(tail -n1 "$logs/machine-api.out")
WINNODE_CAPI_WORLD_BIN=$(tail -n1 "$logs/capi-world.out")
WINNODE_PROMETHEUS_BIN=$(tail -n1 "$logs/prometheus.out")
WINNODE_PAYLOAD_DIR=$(tail -n1 "$logs/payload.out")

# One folder of compressed simulated-payload copies for every test process
# of this run (testenv.PayloadCache): each content is compressed once, not
# once per test (a minute each under the race detector).
export WINNODE_SIMPAYLOAD_CACHE
WINNODE_SIMPAYLOAD_CACHE=$(mktemp -d "${TMPDIR:-/tmp}/winnode-simpayload-cache-XXXXXX")
trap 'rm -rf "$WINNODE_SIMPAYLOAD_CACHE" "$logs"' EXIT

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
run_bg e2e bash hack/test-e2e.sh
run_bg hack-modules hack_module_tests
run_bg wine bash hack/wine/test.sh
wait_all e2e hack-modules wine

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
