#!/usr/bin/env bash
# make demo: winnode on this machine with simulated Windows hosts
# (`winnodectl demo`, docs/cli.md). It builds bin/winnodectl, then runs the
# demo until Ctrl-C; arguments are passed on:
#
#   bash hack/demo.sh --hosts 5 --windows-build 2022
#
# The control plane comes from WINNODE_K8S_BIN when set, else from
# hack/tools/build-control-plane.sh (built once, then cached).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${WINNODE_K8S_BIN:-}" ]; then
	# Built once (11.5 to 34 minutes on 2 cores, printing its progress: README.md),
	# then found in the cache.
	WINNODE_K8S_BIN=$(bash hack/tools/build-control-plane.sh | tail -n1)
fi
export WINNODE_K8S_BIN
say() { echo "demo: $*" >&2; }
# shellcheck source=lib/progress.sh
source hack/lib/progress.sh
mkdir -p bin
# The first time, Go compiles the Kubernetes client libraries: minutes.
say "building bin/winnodectl"
with_progress "bin/winnodectl" go build -o bin/winnodectl ./cmd/winnodectl
exec bin/winnodectl demo "$@"
