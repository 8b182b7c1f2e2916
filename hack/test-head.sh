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

echo "K8S=$WINNODE_K8S_BIN MAPI=$WINNODE_MACHINE_API_BIN CAPI=$WINNODE_CAPI_WORLD_BIN PROM=$WINNODE_PROMETHEUS_BIN PAYLOAD=$WINNODE_PAYLOAD_DIR"
