# contract.sh: sourced by hack/wine/test.sh (its wine, out, repo, expect,
# pass and fail). Everything winnode hands to a payload program is checked
# against that real program, at the version the payload carries:
#
#  - every service command line of every plan the renderer and the
#    bootstrap path produce (hack/wine/contract writes them down): a
#    winnode-service.exe line is parsed by winnode-service.exe's own parser
#    (--dry-run), and the program it would run, kubelet.exe, kube-proxy.exe,
#    flanneld.exe or csi-proxy.exe, is run under Wine with exactly those
#    arguments plus --version (csi-proxy.exe, which has none: -help): each
#    parses every flag before acting on it (cmd/kubelet/app/server.go,
#    cmd/kube-proxy/app/server.go, flannel's main.go, which parses in init;
#    csi-proxy's main calls flag.Parse, which stops at -help with exit 0
#    once every flag before it is parsed), so a flag the program refuses
#    fails with the program's own words;
#  - every KubeletConfiguration and KubeProxyConfiguration, loaded and
#    validated by the kubelet's and kube-proxy's own code
#    (hack/payload/kubernetes/validate, built for Windows and run under
#    Wine, so that their Windows rules apply);
#  - every CNI configuration, loaded with libcni (hack/payload/cni/validate);
#  - every containerd configuration, loaded by the payload's containerd.exe
#    (`containerd --config FILE config dump`) without a warning;
#  - negative checks: each check fails on a known-bad input, with the real
#    program's words.
#
# Needs WINNODE_PAYLOAD_DIR (make payload): without it the checks are
# reported as not run, and the tier fails.

contract_dir="$out/contract"

# run_contract: all of the above.
run_contract() {
	if [ -z "${WINNODE_PAYLOAD_DIR:-}" ] || [ ! -f "$WINNODE_PAYLOAD_DIR/manifest.json" ]; then
		echo "wine: contract: WINNODE_PAYLOAD_DIR is not a built payload (run make payload): the contract checks cannot run"
		expect "contract/payload"
		fail "contract/payload"
		return
	fi
	echo "wine: contract: rendering every plan and the bootstrap path (hack/wine/contract)"
	go run ./hack/wine/contract "$WINNODE_PAYLOAD_DIR" "$contract_dir"
	go build -o "$out/contract-bin" ./hack/wine/contract
	echo "wine: contract: building the configuration validators"
	(cd hack/payload/kubernetes && GOOS=windows GOARCH=amd64 CGO_ENABLED=0 go build -tags selinux,notest,grpcnotrace -o "$out/validate.exe" ./validate)
	(cd hack/payload/cni && CGO_ENABLED=0 go build -o "$out/cni-validate" ./validate)
	local cmd
	for cmd in "$contract_dir"/services/*.cmd; do
		contract_command "$cmd"
	done
	contract_configs
	contract_negative
}

# program_of WINDOWS-PATH: the payload file and version of the program
# installed there (programs.tsv), as "FILE VERSION".
program_of() {
	# The path through the environment: awk -v would read its backslashes
	# as escapes (C:\k\flanneld.exe has a \f).
	PROGRAM_PATH="$1" awk -F'\t' 'tolower($1) == tolower(ENVIRON["PROGRAM_PATH"]) { print $2, $3; found = 1 } END { exit !found }' "$contract_dir/programs.tsv"
}

# check_version LOG PROGRAM-PATH ARGS...: runs the payload program installed
# at PROGRAM-PATH under Wine with ARGS plus --version; true when it exits 0
# printing its version and no refusal of a flag. Its output is in LOG.
# csi-proxy.exe has no --version: -help, and its usage instead of a version.
check_version() {
	local log=$1 path=$2 file version probe=--version
	shift 2
	read -r file version < <(program_of "$path") || {
		echo "no payload program is installed at $path" >"$log"
		return 1
	}
	if [ "$file" = "csi-proxy.exe" ]; then
		probe=-help version="Usage of"
	fi
	# windows_exporter prints promu's version, without the "v".
	if [ "$file" = "windows_exporter.exe" ]; then
		version="version ${version#v} "
	fi
	local rc=0
	timeout 180 "$wine" "$WINNODE_PAYLOAD_DIR/$file" "$@" "$probe" >"$log" 2>&1 || rc=$?
	# flanneld exits 0 even on an unknown flag (its usage exits 0), so
	# the words count as much as the code.
	[ "$rc" -eq 0 ] && grep -qF -- "$version" "$log" &&
		! grep -qE 'unknown flag|flag provided but not defined|unknown shorthand flag' "$log"
}

# contract_command CMD-FILE: one distinct service command line.
contract_command() {
	local file=$1 name log argv
	name="contract/$(basename "$file" .cmd) $(head -n1 "$file.cases")"
	log="${file%.cmd}.log"
	mapfile -d '' -t argv <"$file"
	expect "$name"
	if ! resolve_command "$log" "${argv[@]}"; then
		echo "wine: $name: the service's command line is refused:"; sed 's/^/    /' "$log"
		fail "$name"
		return
	fi
	if [ "${child[0]}" = "-" ]; then # hybrid-overlay-node.exe absent from the payload
		echo "wine: $name: not checked: ${child[*]:1}"
		pass "$name"
		return
	fi
	if check_version "$log" "${child[@]}"; then
		pass "$name"
	else
		echo "wine: $name: $(basename "${child[0]//\\//}") refuses the command line (cases: $(paste -sd, "$file.cases")):"
		sed 's/^/    /' "$log"
		fail "$name"
	fi
}

# resolve_command LOG BINARY ARGS...: sets child to the program and
# arguments the service runs: the binary itself, or, for
# winnode-service.exe, what its own parser says it would run.
resolve_command() {
	local log=$1 binary=$2 file version
	shift 2
	child=("$binary" "$@")
	if hybrid_overlay_absent "$binary"; then
		return 0
	fi
	read -r file version < <(program_of "$binary") || {
		echo "no payload program is installed at $binary" >"$log"
		return 1
	}
	if [ "$file" = "winnode-service.exe" ]; then
		timeout 120 "$wine" "$WINNODE_PAYLOAD_DIR/winnode-service.exe" --dry-run "$@" >"$log.json" 2>"$log" || {
			cat "$log.json" >>"$log"
			return 1
		}
		mapfile -d '' -t child < <("$out/contract-bin" split <"$log.json")
		# hybrid-overlay-node runs through winnode-service.exe too (its
		# wait for the subnet comes first).
		hybrid_overlay_absent "${child[0]}" || true
	fi
}

# hybrid_overlay_absent PROGRAM-PATH: true, with child set to say so, when
# PROGRAM-PATH is hybrid-overlay-node.exe and this payload lacks it (an
# input file, HYBRID_OVERLAY_NODE, that CI's payload does not have).
hybrid_overlay_absent() {
	if [ "$(basename "${1//\\//}")" = "hybrid-overlay-node.exe" ] && [ ! -f "$WINNODE_PAYLOAD_DIR/hybrid-overlay-node.exe" ]; then
		child=("-" "hybrid-overlay-node.exe is not in this payload (an input file: HYBRID_OVERLAY_NODE)")
		return 0
	fi
	return 1
}

# contract_configs: each generated configuration through its program's own
# loading and validation.
contract_configs() {
	local kind files
	for kind in kubelet kube-proxy cni containerd windows_exporter; do
		mapfile -t files < <(find "$contract_dir/configs/$kind" -type f ! -name '*.cases' ! -name '*.log' | sort)
		local f log="$contract_dir/configs/$kind.log"
		for f in "${files[@]}"; do expect "contract/config/$kind/$(basename "$f")"; done
		if [ "$kind" = containerd ] || [ "$kind" = windows_exporter ]; then
			: >"$log"
			for f in "${files[@]}"; do
				if "${kind}_config" "$f.log" "$f"; then echo "ok $f" >>"$log"; else sed "s|^|$f: |" "$f.log" >>"$log"; fi
			done
		elif [ "$kind" = cni ]; then
			"$out/cni-validate" "${files[@]}" >"$log" 2>&1 || true
		else
			timeout 300 "$wine" "$out/validate.exe" "$kind" "${files[@]}" >"$log" 2>&1 || true
		fi
		for f in "${files[@]}"; do
			if grep -qxF "ok $f" "$log"; then
				pass "contract/config/$kind/$(basename "$f")"
			else
				echo "wine: contract: $kind's own code refuses $f (cases: $(paste -sd, "$f.cases")):"
				grep -F "$f" "$log" | sed 's/^/    /'
				fail "contract/config/$kind/$(basename "$f")"
			fi
		done
	done
}

# containerd_config LOG FILE: the payload's containerd.exe loads FILE as
# its configuration (`containerd --config FILE config dump`: the daemon's
# own loading, version migration and per-plugin decoding) with no warning:
# containerd only warns about a key it does not know and keeps its default
# (an unknown key, or a version 3 file it migrates), so a warning fails the
# check. Output in LOG.
containerd_config() {
	local log=$1 file=$2 rc=0
	timeout 180 "$wine" "$WINNODE_PAYLOAD_DIR/containerd.exe" --config "Z:${file//\//\\}" config dump >"$log" 2>&1 || rc=$?
	[ "$rc" -eq 0 ] && ! grep -qE 'level=(warning|error|fatal)' "$log"
}

# windows_exporter_config LOG FILE: the payload's windows_exporter.exe
# serves TLS with FILE as its --web.config.file (exporter-toolkit's own
# strict loading): FILE and the contract's test certificate and key are put
# where FILE names them (C:\k\windows_exporter in the Wine prefix, and
# both in one file where the kubelet keeps its serving certificate,
# C:\var\lib\kubelet\pki\kubelet-server-current.pem; one run at a time:
# the prefix is shared), the exporter listens on a port of
# 127.0.0.1 the system picks (its log says which), and an HTTPS scrape of
# the cs collector verified against the certificate must return
# windows_cs_ series (under Wine the perflib collectors fail: cs reads WMI).
# Output in LOG.
windows_exporter_config() {
	local log=$1 file=$2 dir="$WINEPREFIX/drive_c/k/windows_exporter" pki="$WINEPREFIX/drive_c/var/lib/kubelet/pki" pid address rc=1 i
	exec 7>"$WINEPREFIX/.winnode-windows-exporter.lock"
	flock 7
	mkdir -p "$dir" "$pki"
	cp "$file" "$dir/web-config.yml"
	cp "$contract_dir/windows_exporter-tls/tls.crt" "$contract_dir/windows_exporter-tls/tls.key" "$dir/"
	cat "$contract_dir/windows_exporter-tls/tls.crt" "$contract_dir/windows_exporter-tls/tls.key" >"$pki/kubelet-server-current.pem"
	"$wine" "$WINNODE_PAYLOAD_DIR/windows_exporter.exe" --web.listen-address=127.0.0.1:0 \
		'--web.config.file=C:\k\windows_exporter\web-config.yml' --collectors.enabled=cs >"$log" 2>&1 &
	pid=$!
	for i in $(seq 1 120); do
		address=$(sed -n 's/.*msg="Listening on" address=\(127\.0\.0\.1:[0-9]*\).*/\1/p' "$log" | head -n1)
		if [ -n "$address" ] || ! kill -0 "$pid" 2>/dev/null; then break; fi
		sleep 0.5 # waiting for the program's own log line, not for time to pass
	done
	if [ -n "$address" ]; then
		for i in $(seq 1 60); do
			if curl -sS --max-time 10 --cacert "$contract_dir/windows_exporter-tls/tls.crt" "https://$address/metrics?collect[]=cs" >"$log.scrape" 2>>"$log" &&
				grep -q '^windows_cs_logical_processors ' "$log.scrape"; then
				rc=0
				break
			fi
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.5 # the same: until the server answers or exits
		done
		cat "$log.scrape" >>"$log" 2>/dev/null || true
	fi
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -rf "$dir" "$pki/kubelet-server-current.pem"
	flock -u 7
	return "$rc"
}

# expect_refusal NAME LOG WORDS CMD...: CMD must fail, and its output
# (LOG) hold WORDS: a check that cannot fail checks nothing.
expect_refusal() {
	local name=$1 log=$2 words=$3
	shift 3
	expect "$name"
	if "$@" >"$log" 2>&1; then
		echo "wine: $name: accepted a bad input"; sed 's/^/    /' "$log"
		fail "$name"
	elif grep -qF -- "$words" "$log"; then
		echo "wine: $name: refused, as it must: $(grep -F -- "$words" "$log" | head -n1)"
		pass "$name"
	else
		echo "wine: $name: refused, but without \"$words\":"; sed 's/^/    /' "$log"
		fail "$name"
	fi
}

# contract_negative: each check fails on a known-bad input.
contract_negative() {
	local neg="$contract_dir/negative" argv
	# A rendered kubelet command line with --logtostderr=false put back.
	mapfile -d '' -t argv <"$neg/kubelet-logtostderr.cmd"
	expect_refusal "contract/negative/kubelet --logtostderr" "$neg/kubelet-logtostderr.log" \
		"unknown flag: --logtostderr" negative_command "$neg/kubelet-logtostderr.log.run" "${argv[@]}"
	# A rendered csi-proxy command line with a flag csi-proxy lacks.
	mapfile -d '' -t argv <"$neg/csi-proxy-unknown.cmd"
	expect_refusal "contract/negative/csi-proxy unknown flag" "$neg/csi-proxy-unknown.log" \
		"flag provided but not defined: -kubelet-dir" negative_command "$neg/csi-proxy-unknown.log.run" "${argv[@]}"
	local kubelet proxy cni
	kubelet=$(find "$contract_dir/configs/kubelet" -name '*.yaml' | sort | head -n1)
	proxy=$(find "$contract_dir/configs/kube-proxy" -name '*.yaml' | sort | head -n1)
	cni=$(find "$contract_dir/configs/cni" -name '*.conf' | sort | head -n1)
	# A Windows rule (validation_windows.go): Linux would accept this.
	{ cat "$kubelet"; echo "singleProcessOOMKill: true"; } >"$neg/kubelet-windows-rule.yaml"
	expect_refusal "contract/negative/kubelet config Windows rule" "$neg/kubelet-windows-rule.log" \
		"singleProcessOOMKill is not supported on Windows" "$wine" "$out/validate.exe" kubelet "$neg/kubelet-windows-rule.yaml"
	{ cat "$kubelet"; echo "cgroupsPerQos: false"; } >"$neg/kubelet-unknown-field.yaml"
	expect_refusal "contract/negative/kubelet config unknown field" "$neg/kubelet-unknown-field.log" \
		'unknown field "cgroupsPerQos"' "$wine" "$out/validate.exe" kubelet "$neg/kubelet-unknown-field.yaml"
	sed 's/^mode: kernelspace$/mode: iptables/' "$proxy" >"$neg/kube-proxy-mode.yaml"
	expect_refusal "contract/negative/kube-proxy config Windows mode" "$neg/kube-proxy-mode.log" \
		"must be kernelspace or blank" "$wine" "$out/validate.exe" kube-proxy "$neg/kube-proxy-mode.yaml"
	{ cat "$proxy"; echo "sourceVip: 10.0.0.2"; } >"$neg/kube-proxy-unknown-field.yaml"
	expect_refusal "contract/negative/kube-proxy config unknown field" "$neg/kube-proxy-unknown-field.log" \
		'unknown field "sourceVip"' "$wine" "$out/validate.exe" kube-proxy "$neg/kube-proxy-unknown-field.yaml"
	local ctd
	ctd=$(find "$contract_dir/configs/containerd" -name '*.toml' | sort | head -n1)
	sed 's/^version = 4$/version = 5/' "$ctd" >"$neg/containerd-version.toml"
	expect_refusal "contract/negative/containerd config version" "$neg/containerd-version.log" \
		"expected containerd config version equal to or less than" containerd_config_shown "$neg/containerd-version.toml"
	sed 's/^  conf_dir = /  cni_conf_dirs = /' "$ctd" >"$neg/containerd-unknown-key.toml"
	expect_refusal "contract/negative/containerd config unknown key" "$neg/containerd-unknown-key.log" \
		"Ignoring unknown key in TOML for plugin" containerd_config_shown "$neg/containerd-unknown-key.toml"
	sed 's/"type": "win-overlay"/"type": 1/' "$cni" >"$neg/cni-type.conf"
	expect_refusal "contract/negative/cni config wrong field" "$neg/cni-type.log" \
		"cannot unmarshal number" "$out/cni-validate" "$neg/cni-type.conf"
	local web
	web=$(find "$contract_dir/configs/windows_exporter" -name '*.yml' | sort | head -n1)
	sed 's/^  key_file: /  keyfile: /' "$web" >"$neg/windows_exporter-unknown-key.yml"
	expect_refusal "contract/negative/windows_exporter web config unknown key" "$neg/windows_exporter-unknown-key.log" \
		"field keyfile not found" windows_exporter_config_shown "$neg/windows_exporter-unknown-key.yml"
	# A rendered windows_exporter command line with a flag it lacks.
	mapfile -d '' -t argv <"$neg/windows_exporter-unknown.cmd"
	expect_refusal "contract/negative/windows_exporter unknown flag" "$neg/windows_exporter-unknown.log" \
		"unknown long flag '--web.listen'" negative_command "$neg/windows_exporter-unknown.log.run" "${argv[@]}"
}

# windows_exporter_config_shown FILE: windows_exporter_config, its output on stdout.
windows_exporter_config_shown() {
	local rc=0
	windows_exporter_config "$1.run.log" "$1" || rc=$?
	cat "$1.run.log"
	return "$rc"
}

# negative_command LOG BINARY ARGS...: the check of contract_command, as a
# command whose failure is expected (its output also goes to stdout).
negative_command() {
	local log=$1
	shift
	resolve_command "$log" "$@" && check_version "$log" "${child[@]}"
	local rc=$?
	cat "$log"
	return "$rc"
}

# containerd_config_shown FILE: containerd_config, its output on stdout.
containerd_config_shown() {
	local rc=0
	containerd_config "$1.run.log" "$1" || rc=$?
	cat "$1.run.log"
	return "$rc"
}
