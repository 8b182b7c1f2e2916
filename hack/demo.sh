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
	# Built once (several minutes on 2 cores), then found in the cache.
	WINNODE_K8S_BIN=$(bash hack/tools/build-control-plane.sh | tail -n1)
fi
export WINNODE_K8S_BIN
mkdir -p bin
go build -o bin/winnodectl ./cmd/winnodectl
exec bin/winnodectl demo "$@"
