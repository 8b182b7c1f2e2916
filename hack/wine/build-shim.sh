#!/usr/bin/env bash
# build-shim.sh OUT_DIR: builds the ProcessPrng shim bcryptprimitives.dll
# (see bcryptprimitives.c) with Debian's mingw-w64 into OUT_DIR.
# Idempotent: rebuilds only when the source is newer than the DLL.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: build-shim.sh OUT_DIR}"
mkdir -p "$out"
dll="$out/bcryptprimitives.dll"
if [ -f "$dll" ] && [ "$dll" -nt "$here/bcryptprimitives.c" ]; then
	exit 0
fi
command -v x86_64-w64-mingw32-gcc >/dev/null || {
	echo "build-shim.sh: x86_64-w64-mingw32-gcc missing: run hack/wine/install.sh" >&2
	exit 1
}
x86_64-w64-mingw32-gcc -O2 -shared -s -o "$dll" "$here/bcryptprimitives.c" -ladvapi32 \
	-Wl,--kill-at
echo "build-shim.sh: built $dll"
