#!/usr/bin/env bash
# Prints the separate Go modules under hack/ that have packages to vet or
# test, one folder a line (relative to the repository). A module whose only
# files pin programs behind a build tag (tools.go) has none.
#
#   hack/modules.sh          the modules with packages
#   hack/modules.sh --tests  those of them with tests
set -euo pipefail
cd "$(dirname "$0")/.."

for gomod in $(git ls-files 'hack/*go.mod' | sort); do
	mod=$(dirname "$gomod")
	if [ -z "$(go -C "$mod" list ./... 2>/dev/null)" ]; then
		continue
	fi
	if [ "${1:-}" = "--tests" ] && [ -z "$(go -C "$mod" list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...)" ]; then
		continue
	fi
	echo "$mod"
done
