#!/usr/bin/env bash
# Fetches the CustomResourceDefinitions of github.com/openshift/api that the
# test world's openshift flavor installs (internal/testenv openshift.go),
# through the Go module proxy: github.com/openshift/machine-api-operator at
# the pseudo-version hack/tools/openshift/go.mod pins, then
# github.com/openshift/api at the version that machine-api-operator's go.mod
# requires (the proxy serves pinned pseudo-versions; it refuses @master).
#
# Output: bin/openshift/<openshift/api version>/crds/*.yaml, also kept in a
# cache outside the work tree (${WINNODE_CACHE:-~/.cache/winnode}/openshift),
# so a fresh clone on the same machine copies them. Prints the directory on
# the last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

say() { echo "openshift-crds: $*" >&2; }

# required VERSION-OF MODULE GOMOD-FILE: the version GOMOD-FILE requires.
required() {
	go mod edit -json "$2" | tr -d ' \t\n' | grep -o "\"Path\":\"$1\",\"Version\":\"[^\"]*\"" | sed 's/.*"Version":"//; s/"$//'
}

mao=github.com/openshift/machine-api-operator
mao_version=$(required "$mao" "$here/openshift/go.mod")
[ -n "$mao_version" ] || { say "hack/tools/openshift/go.mod pins no $mao"; exit 1; }

# The CRDs, Default feature set, as an OpenShift 4 cluster installs them:
# path inside github.com/openshift/api.
crds=(
	config/v1/zz_generated.crd-manifests/0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml
	config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_infrastructures-Default.crd.yaml
	config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_networks.crd.yaml
	config/v1/zz_generated.crd-manifests/0000_03_config-operator_01_proxies.crd.yaml
	config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_imagedigestmirrorsets.crd.yaml
	config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_imagetagmirrorsets.crd.yaml
	machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineconfigs.crd.yaml
	machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_controllerconfigs-Default.crd.yaml
	machine/v1beta1/zz_generated.crd-manifests/0000_10_machine-api_01_machines-Default.crd.yaml
	machine/v1beta1/zz_generated.crd-manifests/0000_10_machine-api_01_machinesets-Default.crd.yaml
)

# download MODULE@VERSION FIELD: a field (Dir, GoMod) of `go mod download -json`.
download() {
	(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json "$1") |
		tr -d '\n\t' | grep -o "\"$2\": *\"[^\"]*\"" | sed 's/.*: *"//; s/"$//'
}

# The mapping MAO version -> openshift/api version is cached: it never
# changes for a pinned pseudo-version.
cachebase="${WINNODE_CACHE:-$HOME/.cache/winnode}/openshift"
mkdir -p "$cachebase"
exec 9>"$cachebase/.lock"
flock 9
pinfile="$cachebase/$mao_version.api-version"
if [ ! -s "$pinfile" ]; then
	say "reading $mao@$mao_version's go.mod"
	gomod=$(download "$mao@$mao_version" GoMod)
	required github.com/openshift/api "$gomod" >"$pinfile.tmp"
	mv "$pinfile.tmp" "$pinfile"
fi
api_version=$(cat "$pinfile")
[ -n "$api_version" ] || { say "$mao@$mao_version requires no github.com/openshift/api"; exit 1; }

# The folders are named after the list too: a CRD added to it is fetched
# even where an older list's folders are complete.
list=$(printf '%s\n' "${crds[@]}" | sha256sum | cut -c1-12)
out="$root/bin/openshift/$api_version-$list/crds"
cache="$cachebase/api-$api_version-$list/crds"
if [ ! -f "$cache/.complete" ]; then
	say "github.com/openshift/api@$api_version (pinned by $mao@$mao_version): downloading"
	dir=$(download "github.com/openshift/api@$api_version" Dir)
	rm -rf "$cache" && mkdir -p "$cache"
	for f in "${crds[@]}"; do
		cp "$dir/$f" "$cache/"
	done
	chmod u+w "$cache"/*.yaml
	touch "$cache/.complete"
fi
if [ ! -f "$out/.complete" ]; then
	rm -rf "$out" && mkdir -p "$out"
	cp "$cache"/*.yaml "$out/"
	touch "$out/.complete"
fi
say "github.com/openshift/api@$api_version CRDs in ${out#$root/}"
echo "$out"
