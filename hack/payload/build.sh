#!/usr/bin/env bash
# Builds the payload: the Windows programs the operator copies to every host,
# from source through the Go module proxy, for GOOS=windows GOARCH=amd64.
#
#   kubelet.exe, kube-proxy.exe           k8s.io/kubernetes, version pinned by hack/payload/kubernetes/go.mod
#   win-bridge.exe, win-overlay.exe,      github.com/containernetworking/plugins, version pinned by
#   host-local.exe                        hack/payload/cni/go.mod
#   flanneld.exe                          github.com/flannel-io/flannel, version pinned by hack/payload/flannel/go.mod
#   csi-proxy.exe                         github.com/kubernetes-csi/csi-proxy, version pinned by hack/payload/csi-proxy/go.mod
#   containerd.exe                        github.com/containerd/containerd/v2, version pinned by hack/payload/containerd/go.mod
#   containerd-shim-runhcs-v1.exe         github.com/Microsoft/hcsshim, version pinned by hack/payload/hcsshim/go.mod
#   windows_exporter.exe                  github.com/prometheus-community/windows_exporter, version pinned by
#                                         hack/payload/windows-exporter/go.mod
#   winnode-agent.exe                     this repository's ./cmd/winnode-agent
#   winnode-service.exe                   this repository's ./cmd/winnode-service (no version stamp: its
#                                         bytes change only with its code, so an agent upgrade restarts no service)
#   hybrid-overlay-node.exe               an INPUT FILE, only when given (below): the module proxy
#                                         refuses github.com/ovn-org/ovn-kubernetes/go-controller
#
# Usage: hack/payload/build.sh [OUTPUT-DIR]
#   OUTPUT-DIR defaults to $WINNODE_PAYLOAD_DIR, else <repo>/payload.
#   It receives the twelve programs and manifest.json (written with
#   internal/payload, then loaded back the way the operator loads it), and
#   flags/{kubelet,kube-proxy,flanneld,csi-proxy,containerd,windows_exporter}.txt: the flags each program's --help
#   lists under Wine (installed by hack/wine/install.sh when missing), which
#   the winsim stand-ins accept (hack/payload/update-standin-flags.sh);
#   WINNODE_PAYLOAD_FLAGS=0 leaves them out.
#   WINNODE_VERSION, if set, is the agent's version in the manifest (default:
#   `git describe --tags --always --dirty`, or "dev" outside a git work tree).
#   HYBRID_OVERLAY_NODE, if set, is the path of a hybrid-overlay-node.exe
#   (OVN-Kubernetes' hybrid overlay node program for Windows, built
#   elsewhere) to include, for --network ovn-hybrid; the manifest records its
#   SHA-256 and HYBRID_OVERLAY_NODE_VERSION (default "input"). Without it the
#   payload has no hybrid-overlay-node.exe and ovn-hybrid is refused.
#
# The upstream programs are kept in a cache outside the work tree,
# ${WINNODE_CACHE:-~/.cache/winnode}/payload/k8s-<version>-cni-<version>-r<recipe>/,
# and never rebuilt once there (the first build of kube-proxy.exe and
# kubelet.exe took about 20 minutes on 2 cores; each build prints its
# progress every 30 s, hack/lib/progress.sh). winnode-agent.exe is built from
# the work tree on every run; Go's build cache makes that a relink of a few
# seconds. Files already in OUTPUT-DIR with the same content are left
# untouched.
# Prints OUTPUT-DIR on the last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

say() { echo "payload: $*" >&2; }

# shellcheck source=../lib/gomod.sh
source "$root/hack/lib/gomod.sh"
# shellcheck source=../lib/progress.sh
source "$root/hack/lib/progress.sh"

out=${1:-${WINNODE_PAYLOAD_DIR:-$root/payload}}
mkdir -p "$out"
out=$(cd "$out" && pwd)

k8s_version=$(modversion "$here/kubernetes" k8s.io/kubernetes)
cni_version=$(modversion "$here/cni" github.com/containernetworking/plugins)
# Bump recipe when the way the programs are built changes (flags below), so
# a cache filled by the old recipe is not reused.
recipe=1
cache="${WINNODE_CACHE:-$HOME/.cache/winnode}/payload/k8s-$k8s_version-cni-$cni_version-r$recipe"
mkdir -p "$cache"
flannel_version=$(modversion "$here/flannel" github.com/flannel-io/flannel)
# flanneld has a cache of its own: adding it did not invalidate the
# Kubernetes programs' cache, and a new flannel rebuilds only flanneld.
flannel_cache="${WINNODE_CACHE:-$HOME/.cache/winnode}/payload/flannel-$flannel_version-r1"
mkdir -p "$flannel_cache"
# containerd and its Windows shim: caches of their own, for the same reason.
containerd_version=$(modversion "$here/containerd" github.com/containerd/containerd/v2)
containerd_cache="${WINNODE_CACHE:-$HOME/.cache/winnode}/payload/containerd-$containerd_version-r1"
hcsshim_version=$(modversion "$here/hcsshim" github.com/Microsoft/hcsshim)
hcsshim_cache="${WINNODE_CACHE:-$HOME/.cache/winnode}/payload/hcsshim-$hcsshim_version-r1"
mkdir -p "$containerd_cache" "$hcsshim_cache"
# One payload build at a time on this machine: two builds started side by
# side (test packages, work trees) would otherwise compile the same program
# into the same .tmp file at once. Waiting is cheaper: a warm build takes
# seconds.
exec 8>"${WINNODE_CACHE:-$HOME/.cache/winnode}/payload/.lock"
flock 8
# The CSI proxy has a cache of its own too (cold build: 74 to 89 s of CPU).
csi_version=$(modversion "$here/csi-proxy" github.com/kubernetes-csi/csi-proxy)
csi_cache="${WINNODE_CACHE:-$HOME/.cache/winnode}/payload/csi-proxy-$csi_version-r1"
mkdir -p "$csi_cache"
# windows_exporter: a cache of its own as well.
exporter_version=$(modversion "$here/windows-exporter" github.com/prometheus-community/windows_exporter)
exporter_cache="${WINNODE_CACHE:-$HOME/.cache/winnode}/payload/windows-exporter-$exporter_version-r1"
mkdir -p "$exporter_cache"

# gobuild DIR OUTPUT PACKAGE LDFLAGS [TAGS]: one Windows build, as release
# builds do it: static (no cgo), symbol tables stripped. Unlike release builds
# it does not use -trimpath, because -trimpath leaves -ldflags out of the
# build information: this way `go version -m kubelet.exe` shows the -X flags
# that set the version the program reports (the tests check them).
gobuild() {
	local dir=$1 output=$2 pkg=$3 ldflags=$4 tags=${5:-}
	(cd "$dir" && GOOS=windows GOARCH=amd64 CGO_ENABLED=0 nice go build -tags "$tags" -ldflags "-s -w $ldflags" -o "$output" "$pkg")
}

# upstream NAME MODULE-DIR PACKAGE LDFLAGS [TAGS]: build into the cache unless it is there.
upstream() {
	local name=$1 dir=$2 pkg=$3 ldflags=$4 tags=${5:-}
	if [ -f "$cache/$name" ]; then
		say "$name: in cache $cache"
		return
	fi
	say "$name: building $pkg for windows/amd64 from source, once (on 2 cores: kube-proxy.exe and kubelet.exe about 20 minutes together, the others about 2 minutes each)"
	local start=$SECONDS
	with_progress "$name" gobuild "$dir" "$cache/$name.tmp" "$pkg" "$ldflags" "$tags"
	mv "$cache/$name.tmp" "$cache/$name"
	say "$name: built in $((SECONDS - start))s"
}

# place NAME SOURCE: copy into the payload folder unless the same bytes are there.
place() {
	local name=$1 src=$2
	if cmp -s "$src" "$out/$name"; then
		return
	fi
	cp "$src" "$out/.$name.tmp"
	mv "$out/.$name.tmp" "$out/$name"
	say "$name: copied to $out"
}

# Version variables that `kubelet.exe --version` and `kube-proxy.exe --version`
# print; the build date is the module's publication time, so the same version
# always builds the same bytes.
k8s_ldflags=$(k8s_version_ldflags "$here/kubernetes")
# What the CNI plugins print for VERSION and in their errors.
cni_ldflags="-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$cni_version"

cni=github.com/containernetworking/plugins/plugins
upstream win-bridge.exe "$here/cni" $cni/main/windows/win-bridge "$cni_ldflags"
upstream win-overlay.exe "$here/cni" $cni/main/windows/win-overlay "$cni_ldflags"
upstream host-local.exe "$here/cni" $cni/ipam/host-local "$cni_ldflags"
# The build tags of Kubernetes' own release builds (hack/lib/golang.sh).
k8s_tags=selinux,notest,grpcnotrace
upstream kube-proxy.exe "$here/kubernetes" k8s.io/kubernetes/cmd/kube-proxy "$k8s_ldflags" $k8s_tags
upstream kubelet.exe "$here/kubernetes" k8s.io/kubernetes/cmd/kubelet "$k8s_ldflags" $k8s_tags
# flanneld for Windows nodes in flannel mode (docs/networking.md); what
# `flanneld.exe --version` prints.
cache=$flannel_cache upstream flanneld.exe "$here/flannel" github.com/flannel-io/flannel "-X github.com/flannel-io/flannel/pkg/version.Version=$flannel_version"
# csi-proxy.exe, the Windows service csi-proxy (docs/add-host.md: storage);
# main.version is what csi-proxy's release-tools/build.make sets (it logs
# "Version: ..." at start; it has no --version).
cache=$csi_cache upstream csi-proxy.exe "$here/csi-proxy" github.com/kubernetes-csi/csi-proxy/cmd/csi-proxy "-X main.version=$csi_version"

# windows_exporter.exe with the -X flags of its .promu.yml (prometheus/common's
# version package), so `windows_exporter.exe --version` prints
# "windows_exporter, version 0.27.2 (branch: HEAD, revision: <commit>)": the
# version without its "v", as promu sets it; the commit is the proxy's record
# of the tag (Origin.Hash), the build date the module's publication time.
exporter_commit=$(cd "$here/windows-exporter" && go mod download -json "github.com/prometheus-community/windows_exporter@$exporter_version" | sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]*\)".*/\1/p' | head -n1)
exporter_date=$(cd "$here/windows-exporter" && go list -m -f '{{.Time.UTC.Format "20060102-15:04:05"}}' "github.com/prometheus-community/windows_exporter")
pv=github.com/prometheus/common/version
cache=$exporter_cache upstream windows_exporter.exe "$here/windows-exporter" github.com/prometheus-community/windows_exporter \
	"-X $pv.Version=${exporter_version#v} -X $pv.Revision=${exporter_commit:-$exporter_version} -X $pv.Branch=HEAD -X $pv.BuildUser=winnode -X $pv.BuildDate=$exporter_date"

# containerd.exe as containerd's Makefile builds it (GO_LDFLAGS, GO_BUILDTAGS
# urfave_cli_no_docs): `containerd.exe --version` prints
# "containerd github.com/containerd/containerd/v2 v2.4.2 v2.4.2" (the proxy's
# module has no commit to put in Revision; the version stands there).
ctd=github.com/containerd/containerd/v2
cache=$containerd_cache upstream containerd.exe "$here/containerd" $ctd/cmd/containerd \
	"-X $ctd/version.Version=$containerd_version -X $ctd/version.Revision=$containerd_version -X $ctd/version.Package=$ctd" urfave_cli_no_docs
# The shim's main.version and main.gitCommit are meant for -X (its main.go);
# the commit is the proxy's record of the tag (Origin.Hash), else the version.
hcsshim_commit=$(cd "$here/hcsshim" && go mod download -json "github.com/Microsoft/hcsshim@$hcsshim_version" | sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]*\)".*/\1/p' | head -n1)
cache=$hcsshim_cache upstream containerd-shim-runhcs-v1.exe "$here/hcsshim" github.com/Microsoft/hcsshim/cmd/containerd-shim-runhcs-v1 \
	"-X main.version=$hcsshim_version -X main.gitCommit=${hcsshim_commit:-$hcsshim_version}"

# The flags each of kubelet.exe, kube-proxy.exe, flanneld.exe, csi-proxy.exe,
# containerd.exe and windows_exporter.exe accepts,
# from its own --help run under Wine (hack/wine/prefix.sh), recorded once
# beside the program in the cache and copied to OUTPUT-DIR/flags/: the
# winsim stand-ins accept exactly these (internal/winsim/standin/flags/,
# updated by hack/payload/update-standin-flags.sh).
# WINNODE_PAYLOAD_FLAGS=0 leaves them out (the operator's image,
# Containerfile: the lists are for tests, and the image has no Wine).
wine_ready=
# record_flags NAME DIR STYLE VERSION: NAME's flag list, into DIR once.
record_flags() {
	local name=$1 dir=$2 style=$3 version=$4 list="$2/${1%.exe}.flags"
	if [ "${WINNODE_PAYLOAD_FLAGS:-1}" = 0 ]; then
		return
	fi
	if [ ! -f "$list" ]; then
		if [ -z "$wine_ready" ]; then
			# shellcheck source=../wine/prefix.sh
			source "$root/hack/wine/prefix.sh"
			wine_setup "${WINNODE_CACHE:-$HOME/.cache/winnode}/wine"
			wine_ready=1
		fi
		say "$name: recording its flags from its --help under Wine"
		# kubelet and kube-proxy print help and exit 0; flanneld's usage
		# exits 0 too: the list, not the code, says whether it worked.
		timeout 300 "$wine" "$dir/$name" --help >"$list.help" 2>&1 || true
		{
			echo "# $name $version: the flags its --help lists, run under Wine; recorded by hack/payload/build.sh"
			echo "# for the winsim stand-ins. Do not edit: hack/payload/update-standin-flags.sh copies a new payload's lists here."
			(cd "$root" && go run ./hack/payload/flags "$style" <"$list.help")
		} >"$list.tmp"
		mv "$list.tmp" "$list"
		rm -f "$list.help"
	fi
	mkdir -p "$out/flags"
	if ! cmp -s "$list" "$out/flags/${name%.exe}.txt"; then
		cp "$list" "$out/flags/${name%.exe}.txt"
		say "flags/${name%.exe}.txt: copied to $out"
	fi
}
record_flags kubelet.exe "$cache" pflag "$k8s_version"
record_flags kube-proxy.exe "$cache" pflag "$k8s_version"
record_flags flanneld.exe "$flannel_cache" goflag "$flannel_version"
record_flags csi-proxy.exe "$csi_cache" goflag "$csi_version"
record_flags containerd.exe "$containerd_cache" urfave "$containerd_version"
record_flags windows_exporter.exe "$exporter_cache" kingpin "$exporter_version"

# The agent is this repository's own program: its version is the work tree's.
agent_version=${WINNODE_VERSION:-$(git -C "$root" describe --tags --always --dirty 2>/dev/null || echo dev)}
if ! (cd "$root" && go list ./cmd/winnode-agent >/dev/null 2>&1); then
	say "ERROR: ./cmd/winnode-agent does not exist or does not build yet; a payload without the agent is useless to the operator"
	exit 1
fi
say "winnode-agent.exe: building ./cmd/winnode-agent ($agent_version) for windows/amd64"
agent_tmp=$(mktemp -d)
trap 'rm -rf "$agent_tmp"' EXIT
# `winnode-agent.exe version` prints it (cmd/winnode-agent: var version).
gobuild "$root" "$agent_tmp/winnode-agent.exe" ./cmd/winnode-agent "-X main.version=$agent_version"
# winnode-service.exe, the services' wrapper: no -X and no VCS stamp, and
# no file paths of this work tree (-trimpath), so that its bytes are the
# same for the same code wherever and whenever it is built.
say "winnode-service.exe: building ./cmd/winnode-service for windows/amd64 (no version stamp)"
GOFLAGS="${GOFLAGS:-} -trimpath -buildvcs=false" gobuild "$root" "$agent_tmp/winnode-service.exe" ./cmd/winnode-service ""

for name in kubelet.exe kube-proxy.exe win-bridge.exe win-overlay.exe host-local.exe; do
	place "$name" "$cache/$name"
done
place flanneld.exe "$flannel_cache/flanneld.exe"
place csi-proxy.exe "$csi_cache/csi-proxy.exe"
place containerd.exe "$containerd_cache/containerd.exe"
place containerd-shim-runhcs-v1.exe "$hcsshim_cache/containerd-shim-runhcs-v1.exe"
place windows_exporter.exe "$exporter_cache/windows_exporter.exe"
place winnode-agent.exe "$agent_tmp/winnode-agent.exe"
place winnode-service.exe "$agent_tmp/winnode-service.exe"

# hybrid-overlay-node.exe: an input file, checked to be a Windows program
# (the "MZ" of a PE image) and copied as given.
hybrid=()
if [ -n "${HYBRID_OVERLAY_NODE:-}" ]; then
	if [ ! -f "$HYBRID_OVERLAY_NODE" ] || [ ! -r "$HYBRID_OVERLAY_NODE" ]; then
		say "ERROR: HYBRID_OVERLAY_NODE=$HYBRID_OVERLAY_NODE is not a readable file"
		exit 1
	fi
	if [ "$(head -c 2 "$HYBRID_OVERLAY_NODE")" != "MZ" ]; then
		say "ERROR: HYBRID_OVERLAY_NODE=$HYBRID_OVERLAY_NODE is not a Windows program (no PE \"MZ\" header)"
		exit 1
	fi
	hybrid_version=${HYBRID_OVERLAY_NODE_VERSION:-input}
	place hybrid-overlay-node.exe "$HYBRID_OVERLAY_NODE"
	hybrid=(hybrid-overlay-node.exe 'C:\k\hybrid-overlay-node.exe' "$hybrid_version")
	say "hybrid-overlay-node.exe: input file $HYBRID_OVERLAY_NODE, version $hybrid_version"
elif [ -e "$out/hybrid-overlay-node.exe" ]; then
	# Not asked for this time: not left behind either.
	rm -f "$out/hybrid-overlay-node.exe" "$out/hybrid-overlay-node.exe.zst"
	say "hybrid-overlay-node.exe: removed from $out (HYBRID_OVERLAY_NODE not set; --network ovn-hybrid will be refused)"
fi

# Where each file goes on the host (docs/install.md explains the layout).
(cd "$root" && go run ./hack/payload/manifest "$out" \
	kubelet.exe 'C:\k\kubelet.exe' "$k8s_version" \
	kube-proxy.exe 'C:\k\kube-proxy.exe' "$k8s_version" \
	win-bridge.exe 'C:\k\cni\bin\win-bridge.exe' "$cni_version" \
	win-overlay.exe 'C:\k\cni\bin\win-overlay.exe' "$cni_version" \
	host-local.exe 'C:\k\cni\bin\host-local.exe' "$cni_version" \
	flanneld.exe 'C:\k\flanneld.exe' "$flannel_version" \
	csi-proxy.exe 'C:\k\csi-proxy.exe' "$csi_version" \
	containerd.exe 'C:\k\containerd\containerd.exe' "$containerd_version" \
	containerd-shim-runhcs-v1.exe 'C:\k\containerd\containerd-shim-runhcs-v1.exe' "$hcsshim_version" \
	windows_exporter.exe 'C:\k\windows_exporter.exe' "$exporter_version" \
	winnode-agent.exe 'C:\k\winnode-agent.exe' "$agent_version" \
	winnode-service.exe 'C:\k\winnode-service.exe' "$agent_version" \
	"${hybrid[@]}")
say "payload ready: kubernetes $k8s_version, CNI plugins $cni_version, flannel $flannel_version, csi-proxy $csi_version, containerd $containerd_version, hcsshim $hcsshim_version, windows_exporter $exporter_version, agent $agent_version${hybrid_version:+, hybrid-overlay-node $hybrid_version (input file)}"
echo "$out"
