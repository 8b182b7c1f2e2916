#!/usr/bin/env bash
# Builds the control plane that tests and the demo run, from source through the
# Go module proxy: etcd, kube-apiserver and kube-controller-manager at the
# versions pinned by hack/tools/go.mod and hack/tools/etcd/go.mod, and kube-scheduler.
#
# Output: bin/k8s/<kubernetes version>/{etcd,kube-apiserver,kube-controller-manager,kube-scheduler}
# Binaries are also kept in a cache outside the work tree
# (${WINNODE_CACHE:-~/.cache/winnode}/k8s/<version>), so a fresh clone on the
# same machine copies them instead of rebuilding. What is already there is
# skipped. Prints the directory on the last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

say() { echo "build-control-plane: $*" >&2; }

# shellcheck source=../lib/gomod.sh
source "$root/hack/lib/gomod.sh"
# shellcheck source=../lib/progress.sh
source "$root/hack/lib/progress.sh"

k8s_version=$(modversion "$here" k8s.io/kubernetes)
etcd_version=$(modversion "$here/etcd" go.etcd.io/etcd/server/v3)
out="$root/bin/k8s/$k8s_version"
cache="${WINNODE_CACHE:-$HOME/.cache/winnode}/k8s/$k8s_version-etcd-$etcd_version"
mkdir -p "$out" "$cache"

# One build at a time: test packages started side by side may all ask.
exec 9>"$cache/.lock"
flock 9

# The four programs, in the order they are built; step N of 4 is the Nth.
programs=(etcd kube-apiserver kube-controller-manager kube-scheduler)
# How long each took the first time on fresh 2-core machines
# (docs/performance.md, "First build").
declare -A took=(
	[etcd]="about a minute"
	[kube-apiserver]="the longest: up to 25 minutes"
	[kube-controller-manager]="up to 8 minutes"
	[kube-scheduler]="about a minute, reusing what kube-controller-manager compiled"
)

# build NAME MODULE-DIR PACKAGE LDFLAGS
build() {
	local name=$1 dir=$2 pkg=$3 ldflags=$4 n
	for n in "${!programs[@]}"; do
		[ "${programs[$n]}" = "$name" ] && break
	done
	local label="[$((n + 1))/${#programs[@]}] $name"
	if [ -x "$out/$name" ]; then
		say "$label: already built in ${out#$root/}"
		return
	fi
	if [ ! -x "$cache/$name" ]; then
		say "$label: building $pkg from source, once (on 2 cores ${took[$name]})"
		local start=$SECONDS
		with_progress "$label" build_go "$dir" "$cache/$name.tmp" "$pkg" "$ldflags"
		mv "$cache/$name.tmp" "$cache/$name"
		say "$label: built in $((SECONDS - start))s"
	else
		say "$label: copying from cache $cache"
	fi
	cp "$cache/$name" "$out/$name.tmp"
	mv "$out/$name.tmp" "$out/$name"
}

# build_go MODULE-DIR OUTPUT PACKAGE LDFLAGS
build_go() {
	(cd "$1" && CGO_ENABLED=0 go build -ldflags "$4" -o "$2" "$3")
}

# Version variables that `--version` prints; the build date is the module's
# publication time, so the same version always builds the same bytes.
k8s_ldflags=$(k8s_version_ldflags "$here")

build etcd "$here/etcd" go.etcd.io/etcd/server/v3 "-X go.etcd.io/etcd/api/v3/version.GitSHA=$etcd_version"
build kube-apiserver "$here" k8s.io/kubernetes/cmd/kube-apiserver "$k8s_ldflags"
build kube-controller-manager "$here" k8s.io/kubernetes/cmd/kube-controller-manager "$k8s_ldflags"
build kube-scheduler "$here" k8s.io/kubernetes/cmd/kube-scheduler "$k8s_ldflags"

"$out/kube-apiserver" --version >&2
"$out/etcd" --version | sed -n 1p >&2
echo "$out"
