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
# keyed by a hash of the program's sources and its go.mod and go.sum, so a
# changed program is rebuilt and an unchanged one copied. Prints the binary's
# path on the last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mod="$here/openshift"

say() { echo "build-machine-api: $*" >&2; }

# shellcheck source=../lib/gomod.sh
source "$root/hack/lib/gomod.sh"

mao_version=$(modversion "$mod" github.com/openshift/machine-api-operator)
# What the binary is made of: the program's Go files and the module's
# requirements, in a fixed order.
sources_hash=$(cd "$mod" && find machineapi -name '*.go' ! -name '*_test.go' | LC_ALL=C sort |
	xargs sha256sum go.mod go.sum | sha256sum | cut -c1-12)
name=winsim-machine-api
out="$root/bin/openshift/machine-api-$mao_version"
cache="${WINNODE_CACHE:-$HOME/.cache/winnode}/openshift/machine-api-$mao_version-$sources_hash"
mkdir -p "$out" "$cache"

# One build at a time: test packages started side by side may all ask.
exec 9>"$cache/.lock"
flock 9

if [ ! -x "$cache/$name" ]; then
	say "building ./machineapi against machine-api-operator $mao_version (first time: minutes on 2 cores)"
	start=$SECONDS
	(cd "$mod" && CGO_ENABLED=0 go build -o "$cache/$name.tmp" ./machineapi)
	mv "$cache/$name.tmp" "$cache/$name"
	say "built in $((SECONDS - start))s"
fi
# The work tree's copy is replaced when it differs from the cache's: the
# sources may have changed since it was copied.
if ! cmp -s "$cache/$name" "$out/$name"; then
	say "copying from cache $cache"
	cp "$cache/$name" "$out/$name.tmp"
	mv "$out/$name.tmp" "$out/$name"
fi
say "${out#$root/}/$name (machine-api-operator $mao_version, sources $sources_hash)"
echo "$out/$name"
