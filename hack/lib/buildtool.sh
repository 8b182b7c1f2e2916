# Sourced by the scripts that build a test-world program from a Go module of
# its own under hack/tools (hack/tools/build-machine-api.sh,
# hack/tools/build-capi-world.sh, hack/tools/build-prometheus.sh), so that
# all key, build, cache and copy their program the same way. The sourcing script defines say (its log line
# on stderr).

# shellcheck source=progress.sh
source "$(dirname "${BASH_SOURCE[0]}")/progress.sh"

# tool_sources_hash MODDIR PATH...: 12 hex digits that name what a program of
# the Go module in MODDIR is made of, so that a change to any of it makes a
# new cache entry: the Go files (tests aside) and YAML files under each PATH
# of MODDIR, the module's go.mod and go.sum, and the Go files and go.mod of
# every module its go.mod replaces with a folder of this tree
# (hack/tools/winsimcloud), in a fixed order.
tool_sources_hash() {
	local mod=$1
	shift
	(
		cd "$mod"
		local -a local_mods
		mapfile -t local_mods < <(replaced_folders go.mod)
		find "$@" "${local_mods[@]}" \( -name '*.go' ! -name '*_test.go' -o -name '*.yaml' -o -name go.mod -o -name go.sum \) -type f |
			LC_ALL=C sort | xargs sha256sum go.mod go.sum | sha256sum | cut -c1-12
	)
}

# build_tool_program MODDIR PKG NAME CACHE OUT AGAINST [GO-BUILD-FLAG...]:
# the program NAME, package PKG of the Go module in MODDIR, built (with the
# given go build flags, if any) into CACHE (unless it is there already) and
# copied into OUT when OUT's copy differs from the cache's (the sources may
# have changed since it was copied). AGAINST says what it is built against,
# for the log. The lock on CACHE (file descriptor 9) is held until the
# calling script exits, so that what the script adds to CACHE afterwards is
# made once too. The sourcing script may set first_build to say how long
# the first build takes.
build_tool_program() {
	local mod=$1 pkg=$2 name=$3 cache=$4 out=$5 against=$6 start
	shift 6
	mkdir -p "$out" "$cache"
	# One build at a time: test packages started side by side may all ask.
	exec 9>"$cache/.lock"
	flock 9
	if [ ! -x "$cache/$name" ]; then
		say "$name: building $pkg against $against from source, once (on 2 cores ${first_build:-11 to 14 minutes the first time, about a minute when only its own sources changed})"
		start=$SECONDS
		with_progress "$name" tool_go_build "$mod" "$cache/$name.tmp" "$pkg" "$@"
		mv "$cache/$name.tmp" "$cache/$name"
		say "$name: built in $((SECONDS - start))s"
	fi
	if ! cmp -s "$cache/$name" "$out/$name"; then
		say "copying from cache $cache"
		cp "$cache/$name" "$out/$name.tmp"
		mv "$out/$name.tmp" "$out/$name"
	fi
}

# tool_go_build MODDIR OUTPUT PKG [GO-BUILD-FLAG...]
tool_go_build() {
	local mod=$1 output=$2 pkg=$3
	shift 3
	(cd "$mod" && CGO_ENABLED=0 go build "$@" -o "$output" "$pkg")
}

# replaced_folders GOMOD: the folders that the replace directives of GOMOD
# put in the place of modules, as written there: the targets that start
# with ./, ../ or /, the forms Go takes for a folder rather than a module.
replaced_folders() {
	awk '/^replace[ \t]*\(/ { block = 1; next }
		block && /^\)/ { block = 0; next }
		block || /^replace[ \t]/ {
			for (i = 1; i < NF; i++) if ($i == "=>" && $(i + 1) ~ /^(\.\.?)?\//) print $(i + 1)
		}' "$1"
}
