#!/usr/bin/env bash
# Builds winsim-capi-world, Cluster API's real core controllers (Cluster,
# Machine, MachineSet, MachineDeployment and the ClusterCache, from
# sigs.k8s.io/cluster-api at the version hack/tools/capi/go.mod pins) with
# the simulated winsim infrastructure and control-plane providers, from
# hack/tools/capi/capiworld, and gathers the CRDs that program needs: Cluster
# API's core CRDs (core/config/crd/bases of the same module, from the Go
# module cache, fetched through the module proxy) and the winsim providers'
# (hack/tools/capi/config/crd). The test world's capi flavor runs it
# (internal/testenv capi.go).
#
# Output: bin/capi/<cluster-api version>/winsim-capi-world and, beside it,
# crds/*.yaml. Both are also kept in a cache outside the work tree
# (${WINNODE_CACHE:-~/.cache/winnode}/capi/world-<version>-<hash>), keyed by
# a hash of the program's sources, the provider CRDs, the module's go.mod and
# go.sum and the simulated cloud's API types and client (shared with the Machine API
# program and the winnode module: hack/tools/winsimcloud), so a changed program is rebuilt and an
# unchanged one copied.
# Prints the binary's path on the last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mod="$here/capi"

say() { echo "build-capi-world: $*" >&2; }

# shellcheck source=../lib/gomod.sh
source "$root/hack/lib/gomod.sh"
# shellcheck source=../lib/buildtool.sh
source "$root/hack/lib/buildtool.sh"

capi_version=$(modversion "$mod" sigs.k8s.io/cluster-api)
sources_hash=$(tool_sources_hash "$mod" capiworld config/crd)
name=winsim-capi-world
out="$root/bin/capi/$capi_version"
cache="${WINNODE_CACHE:-$HOME/.cache/winnode}/capi/world-$capi_version-$sources_hash"
build_tool_program "$mod" ./capiworld "$name" "$cache" "$out" "sigs.k8s.io/cluster-api $capi_version"

# The CRDs are gathered under the cache's lock, which build_tool_program
# left held.
if [ ! -f "$cache/crds/.complete" ]; then
	# The module as go.mod pins it, downloaded if the module cache lacks it.
	dir=$(cd "$mod" && go mod download -json sigs.k8s.io/cluster-api | tr -d '\n\t' |
		grep -o '"Dir": *"[^"]*"' | sed 's/.*: *"//; s/"$//')
	[ -d "$dir/core/config/crd/bases" ] || { say "no core/config/crd/bases in sigs.k8s.io/cluster-api@$capi_version ($dir)"; exit 1; }
	rm -rf "$cache/crds" && mkdir -p "$cache/crds"
	cp "$dir"/core/config/crd/bases/*.yaml "$mod"/config/crd/*.yaml "$cache/crds/"
	chmod u+w "$cache/crds"/*.yaml
	touch "$cache/crds/.complete"
fi
# The work tree's copies are replaced when they differ from the cache's: the
# provider CRDs may have changed since they were copied.
if ! diff -rq "$cache/crds" "$out/crds" >/dev/null 2>&1; then
	rm -rf "$out/crds.tmp" && cp -r "$cache/crds" "$out/crds.tmp"
	rm -rf "$out/crds" && mv "$out/crds.tmp" "$out/crds"
fi
say "${out#$root/}/$name and crds/ (sigs.k8s.io/cluster-api $capi_version, sources $sources_hash)"
echo "$out/$name"
