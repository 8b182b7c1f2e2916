# Sourced by the scripts that build Kubernetes programs from the Go module
# proxy (hack/tools/build-control-plane.sh, hack/payload/build.sh), so that
# the test control plane and the payload's kubelet report their versions the
# same way.

# modversion DIR MODULE: the version of MODULE that the Go module in DIR pins.
modversion() { (cd "$1" && go list -m -f '{{.Version}}' "$2"); }

# modtime DIR MODULE: the proxy's publication time of that version.
modtime() { (cd "$1" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' "$2"); }

# k8s_version_ldflags DIR: the -X flags that make a Kubernetes program built
# from k8s.io/kubernetes (as pinned in DIR) print its true version with
# --version. The build date is the module's publication time, so the same
# version always builds the same bytes.
k8s_version_ldflags() {
	local version major minor date pkg flags=""
	version=$(modversion "$1" k8s.io/kubernetes)
	major=${version#v}; major=${major%%.*}
	minor=${version#v*.}; minor=${minor%%.*}
	date=$(modtime "$1" k8s.io/kubernetes)
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
		flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date -X $pkg.gitCommit=$version"
	done
	echo "$flags"
}
