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
# 4. runs `winnode-agent.exe info` under Wine and checks its JSON, and
#    `winnode-agent.exe install` from a profile folder (the first run).
#
# Environment: WINE_TEST_DIR (default ~/.cache/winnode/wine) keeps the Wine
# prefix between runs (creating one takes ~20 s). The script stops the Wine
# server it started. It ends with "wine: N passed, M failed".
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
"$here/install.sh"

cache="${WINE_TEST_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/winnode/wine}"
mkdir -p "$cache"
out="$(mktemp -d)"
export WINEPREFIX="$cache/prefix" WINEDEBUG=-all WINEARCH=win64 WINEDLLOVERRIDES="mscoree,mshtml="
wine=/usr/lib/wine/wine64
wineserver=/usr/lib/wine/wineserver

cleanup() {
	"$wineserver" -k >/dev/null 2>&1 || true
	rm -rf "$out"
}
trap cleanup EXIT

if [ ! -f "$WINEPREFIX/system.reg" ]; then
	echo "wine: creating the Wine prefix $WINEPREFIX"
	timeout 300 "$wine" wineboot --init >/dev/null 2>&1
	"$wineserver" -w
fi
"$here/build-shim.sh" "$cache"
cp "$cache/bcryptprimitives.dll" "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"

cd "$repo"
echo "wine: building the Windows binaries"
GOOS=windows GOARCH=amd64 go build -o "$out/winnode-agent.exe" ./cmd/winnode-agent
GOOS=windows GOARCH=amd64 go test -c -o "$out/agent.test.exe" ./internal/agent
GOOS=windows GOARCH=amd64 go test -c -o "$out/wincmd.test.exe" ./internal/wincmd
go build -o "$out/jsoncheck" ./hack/wine/jsoncheck

passed=0
failed=0
run_tests() { # name, test binary, -test.run pattern
	local log="$out/$1.log" rc=0
	echo "wine: running $1 under $("$wine" --version)"
	(cd "$repo/internal/$1" && timeout 600 "$wine" "$2" -test.v -test.run "$3") >"$log" 2>&1 || rc=$?
	grep -E '^(=== RUN|--- |PASS|FAIL|ok)|SKIPPED ASSERTION|_test.go:' "$log" || true
	local p f
	p=$(grep -c '^--- PASS' "$log" || true)
	f=$(grep -c '^--- FAIL' "$log" || true)
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "wine: $1 tests exited $rc:"; tail -30 "$log"; f=1
	fi
	passed=$((passed + p)); failed=$((failed + f))
}
run_tests agent "$out/agent.test.exe" '.'
run_tests wincmd "$out/wincmd.test.exe" 'Windows'

echo "wine: winnode-agent.exe info"
if timeout 120 "$wine" "$out/winnode-agent.exe" info 2>"$out/info.err" | "$out/jsoncheck"; then
	passed=$((passed + 1))
else
	echo "wine: winnode-agent.exe info failed:"; cat "$out/info.err"
	failed=$((failed + 1))
fi

# The first run on a host (docs/trust.md): from a profile folder, install
# secures winnode's folders and copies the agent into C:\k.
echo "wine: winnode-agent.exe install"
profile="$WINEPREFIX/drive_c/users/winnode-test"
mkdir -p "$profile"
cp "$out/winnode-agent.exe" "$profile/winnode-agent.exe"
copy="$WINEPREFIX/drive_c/k/wine-install-check.exe"
rm -f "$copy"
if timeout 120 "$wine" 'C:\users\winnode-test\winnode-agent.exe' install --to 'C:\k\wine-install-check.exe' 2>"$out/install.err" | "$out/jsoncheck" &&
	cmp -s "$out/winnode-agent.exe" "$copy"; then
	passed=$((passed + 1))
else
	echo "wine: winnode-agent.exe install failed (or did not copy the agent):"; cat "$out/install.err"
	failed=$((failed + 1))
fi
rm -rf "$profile" "$copy"

echo "wine: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
