#!/usr/bin/env bash
# Everything CI runs (make test): vet, the Windows cross-build, unit +
# integration + end-to-end Go tests against the real control plane and
# simulated hosts, and the Wine tier.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { echo; echo "=== $* ==="; }

export WINNODE_K8S_BIN
WINNODE_K8S_BIN=$(bash hack/tools/build-control-plane.sh | tail -n1)

step "go vet"
go vet ./...

step "Windows cross-build"
if [ -d cmd/winnode-agent ]; then
	GOOS=windows GOARCH=amd64 go build -o bin/windows-amd64/winnode-agent.exe ./cmd/winnode-agent
	GOOS=windows go vet ./cmd/winnode-agent/...
fi

step "go test (unit, integration, end to end)"
go test -p 2 -timeout 25m ./...

step "no control-plane process left behind"
left=$(pgrep -af 'winnode-testenv-' || true)
if [ -n "$left" ]; then
	echo "processes of a test control plane are still running:"; echo "$left"; exit 1
fi
echo "none"
