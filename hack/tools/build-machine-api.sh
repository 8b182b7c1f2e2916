#!/usr/bin/env bash
# Builds winsim-machine-api, the OpenShift Machine API's real controllers
# (MachineSet, nodelink, Machine and drain, from
# github.com/openshift/machine-api-operator at the version
# hack/tools/openshift/go.mod pins) with the simulated "winsim" cloud
# provider, from hack/tools/openshift/machineapi. The test world's openshift
# flavor runs it (internal/testenv machineapi.go).
#
# Output: bin/openshift/machine-api-<machine-api-operator version>/winsim-machine-api
# The binary is also kept in a cache outside the work tree
# (${WINNODE_CACHE:-~/.cache/winnode}/openshift/machine-api-<version>-<hash>),
# keyed by a hash of the program's sources, its go.mod and go.sum and the
# simulated cloud's API types and client (shared with the Cluster API program
# and the winnode module: hack/tools/winsimcloud), so a changed program is rebuilt and an unchanged
# one copied. Prints the binary's path on the last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mod="$here/openshift"

say() { echo "build-machine-api: $*" >&2; }

# shellcheck source=../lib/gomod.sh
source "$root/hack/lib/gomod.sh"
# shellcheck source=../lib/buildtool.sh
source "$root/hack/lib/buildtool.sh"

mao_version=$(modversion "$mod" github.com/openshift/machine-api-operator)
sources_hash=$(tool_sources_hash "$mod" machineapi)
name=winsim-machine-api
out="$root/bin/openshift/machine-api-$mao_version"
cache="${WINNODE_CACHE:-$HOME/.cache/winnode}/openshift/machine-api-$mao_version-$sources_hash"
build_tool_program "$mod" ./machineapi "$name" "$cache" "$out" "machine-api-operator $mao_version"
say "${out#$root/}/$name (machine-api-operator $mao_version, sources $sources_hash)"
echo "$out/$name"
