#!/usr/bin/env bash
# Builds the Prometheus server (cmd/prometheus of
# github.com/prometheus/prometheus at the version hack/tools/prometheus/go.mod
# pins) from source through the Go module proxy, for the end-to-end test
# that has a real Prometheus scrape the simulated Windows nodes
# (internal/testenv prometheus.go, test/e2e TestPrometheusScrapesWindowsNodes).
#
# Kept small: the build tags remove_all_sd and enable_kubernetes_sd leave
# out every service-discovery plugin but Kubernetes' (Prometheus'
# plugins/*.go), and without the tag builtinassets the web UI's assets are
# not compiled in (the HTTP API needs none of them).
# First build, measured with /usr/bin/time -v and an empty GOCACHE (the
# module cache already filled) on the shared 2-core machine while a cold
# make test ran at a higher priority: 407 CPU-seconds (368 user, 39
# system), 16 min 20 s of wall time (it got 41% of one core), 1.5 GB of
# memory at most. With both cores to itself that CPU would be about 4
# minutes (an estimate, not measured).
#
# Output: bin/prometheus/<version>/prometheus. The binary is also kept in a
# cache outside the work tree
# (${WINNODE_CACHE:-~/.cache/winnode}/prometheus/<version>-<hash>), keyed by
# a hash of the module's go.mod, go.sum and tools.go and the build flags.
# Prints the binary's path on the last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mod="$here/prometheus"

say() { echo "build-prometheus: $*" >&2; }

# shellcheck source=../lib/gomod.sh
source "$root/hack/lib/gomod.sh"
# shellcheck source=../lib/buildtool.sh
source "$root/hack/lib/buildtool.sh"

module=github.com/prometheus/prometheus
version=$(modversion "$mod" "$module")
# The release the module version stands for (v0.316.0 is Prometheus 3.16.0),
# which `prometheus --version` prints.
(cd "$mod" && go mod download "$module")
release=$(cat "$(cd "$mod" && go list -m -f '{{.Dir}}' "$module")/VERSION")
flags=(-tags remove_all_sd,enable_kubernetes_sd
	-ldflags "-X github.com/prometheus/common/version.Version=$release -X github.com/prometheus/common/version.Revision=$version -X github.com/prometheus/common/version.Branch=$version")
hash=$( (tool_sources_hash "$mod" tools.go; echo "${flags[*]}") | sha256sum | cut -c1-12)
name=prometheus
out="$root/bin/prometheus/$version"
cache="${WINNODE_CACHE:-$HOME/.cache/winnode}/prometheus/$version-$hash"
first_build="407 CPU-seconds the first time: about 4 minutes on a quiet machine, 16 on a loaded one"
build_tool_program "$mod" "$module/cmd/prometheus" "$name" "$cache" "$out" "Prometheus $release" "${flags[@]}"
say "${out#$root/}/$name (Prometheus $release, $version, build $hash)"
echo "$out/$name"
