#!/usr/bin/env bash
# test.sh: the Wine test tier of winnode's Windows-only code.
#
#   hack/wine/test.sh
#
# 1. installs wine64 and mingw-w64 from Debian if missing (install.sh);
# 2. builds the ProcessPrng shim bcryptprimitives.dll (build-shim.sh) and
#    puts it in a Wine prefix's system32 (Go >= 1.22 programs need it; Wine 8
#    lacks it);
# 3. builds winnode-agent.exe and the Windows test binaries of internal/agent
#    (real services in Wine's service manager) and internal/wincmd (Windows
#    command-line quoting), and runs them under Wine;
# 4. runs `winnode-agent.exe info` under Wine and checks its JSON,
#    `winnode-agent.exe install` from a profile folder (the first run), and
#    `winnode-agent.exe join` without its join config (Pull mode's log);
# 5. checks everything winnode hands to the payload's programs against those
#    programs (contract.sh; needs WINNODE_PAYLOAD_DIR, set by hack/test.sh
#    after `make payload`).
#
# Each check has a name and is expected before it runs (a Go test binary's
# tests come from its -test.list): the tier fails when an expected check did
# not run, not only when one failed.
#
# Environment: WINE_TEST_DIR (default ~/.cache/winnode/wine) keeps the Wine
# prefix between runs (creating one takes ~20 s). The script stops the Wine
# server it started. It ends with "wine: N passed, M failed", N and M
# counting named checks.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=prefix.sh
source "$here/prefix.sh"

cache="${WINE_TEST_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/winnode/wine}"
out="$(mktemp -d)"
wine_setup "$cache"

cleanup() {
	"$wineserver" -k >/dev/null 2>&1 || true
	rm -rf "$out"
}
trap cleanup EXIT

cd "$repo"
echo "wine: building the Windows binaries"
GOOS=windows GOARCH=amd64 go build -o "$out/winnode-agent.exe" ./cmd/winnode-agent
GOOS=windows GOARCH=amd64 go test -c -o "$out/agent.test.exe" ./internal/agent
GOOS=windows GOARCH=amd64 go test -c -o "$out/wincmd.test.exe" ./internal/wincmd
go build -o "$out/jsoncheck" ./hack/wine/jsoncheck

# Every check has a name. A check is expected before it runs (a Go test
# binary's tests from its own -test.list), and the tier fails when an
# expected check neither passed nor failed: a test that did not run is a
# failure, not a smaller count.
expected=()
passed=()
failed=()
expect() { expected+=("$@"); }
pass() { passed+=("$1"); }
fail() { failed+=("$1"); }

run_tests() { # name, test binary, -test.run pattern
	local log="$out/$1.log" rc=0 names
	echo "wine: running $1 under $("$wine" --version)"
	mapfile -t names < <(cd "$repo/internal/$1" && timeout 300 "$wine" "$2" -test.list "$3" 2>/dev/null | tr -d '\r' | grep -E '^(Test|Fuzz|Example)')
	if [ ${#names[@]} -eq 0 ]; then
		echo "wine: $1: the test binary lists no test matching $3"
		expect "$1/(test list)"; fail "$1/(test list)"
		return
	fi
	local n
	for n in "${names[@]}"; do expect "$1/$n"; done
	(cd "$repo/internal/$1" && timeout 600 "$wine" "$2" -test.v -test.run "$3") >"$log" 2>&1 || rc=$?
	tr -d '\r' <"$log" >"$log.txt"
	grep -E '^(=== RUN|--- |PASS|FAIL|ok)|SKIPPED ASSERTION|^ +[A-Za-z0-9_]+\.go:[0-9]+:' "$log.txt" || true
	for n in $(sed -n 's/^--- PASS: \([^ ]*\) .*/\1/p' "$log.txt"); do pass "$1/$n"; done
	for n in $(sed -n 's/^--- FAIL: \([^ ]*\) .*/\1/p' "$log.txt"); do fail "$1/$n"; done
	if [ "$rc" -ne 0 ] && ! grep -q '^--- FAIL' "$log.txt"; then
		echo "wine: $1 tests exited $rc:"; tail -30 "$log.txt"
		expect "$1/(exit status)"; fail "$1/(exit status)"
	fi
}
run_tests agent "$out/agent.test.exe" '.'
run_tests wincmd "$out/wincmd.test.exe" 'Windows'

echo "wine: winnode-agent.exe info"
expect "agent/info"
if timeout 120 "$wine" "$out/winnode-agent.exe" info 2>"$out/info.err" | "$out/jsoncheck"; then
	pass "agent/info"
else
	echo "wine: winnode-agent.exe info failed:"; cat "$out/info.err"
	fail "agent/info"
fi

# The first run on a host (docs/trust.md): from a profile folder, install
# secures winnode's folders and copies the agent into C:\k.
echo "wine: winnode-agent.exe install"
profile="$WINEPREFIX/drive_c/users/winnode-test"
mkdir -p "$profile"
cp "$out/winnode-agent.exe" "$profile/winnode-agent.exe"
copy="$WINEPREFIX/drive_c/k/wine-install-check.exe"
rm -f "$copy"
expect "agent/install"
if timeout 120 "$wine" 'C:\users\winnode-test\winnode-agent.exe' install --to 'C:\k\wine-install-check.exe' 2>"$out/install.err" | "$out/jsoncheck" &&
	cmp -s "$out/winnode-agent.exe" "$copy"; then
	pass "agent/install"
else
	echo "wine: winnode-agent.exe install failed (or did not copy the agent):"; cat "$out/install.err"
	fail "agent/install"
fi
rm -rf "$profile" "$copy"

# Pull mode's first steps on a host (docs/cluster-api.md): join secures
# winnode's folders and its log's, opens its log and refuses a join config
# that is not there, naming it on stdout (exit 1) and in the log.
echo "wine: winnode-agent.exe join"
joinlog="$WINEPREFIX/drive_c/var/log/winnode-agent/join.log"
rm -f "$joinlog"
expect "agent/join"
rc=0
timeout 120 "$wine" "$out/winnode-agent.exe" join --config 'C:\k\wine-no-join.json' >"$out/join.out" 2>"$out/join.err" || rc=$?
if [ "$rc" -eq 1 ] && grep -q '"code": "JoinConfig"' "$out/join.out" && grep -q 'wine-no-join.json' "$out/join.out" &&
	grep -q 'JoinConfig: file C:.*wine-no-join.json' "$joinlog"; then
	pass "agent/join"
else
	echo "wine: winnode-agent.exe join: exit $rc, want 1, a JoinConfig error naming the file on stdout and in $joinlog:"
	cat "$out/join.out" "$out/join.err"
	fail "agent/join"
fi

# The contract: what winnode hands to the payload's programs, checked
# against those programs (contract.sh).
# shellcheck source=contract.sh
source "$here/contract.sh"
contract_started=$SECONDS
run_contract
echo "wine: contract checks took $((SECONDS - contract_started))s"

# Expected checks that neither passed nor failed did not run.
mapfile -t missing < <(comm -23 <(printf '%s\n' "${expected[@]}" | sort -u) <(printf '%s\n' "${passed[@]}" "${failed[@]}" | sort -u))
for m in "${missing[@]}"; do
	[ -n "$m" ] || continue
	echo "wine: expected check did not run: $m"
	failed+=("$m")
done
echo "wine: ${#passed[@]} passed, ${#failed[@]} failed"
[ "${#failed[@]}" -eq 0 ]
