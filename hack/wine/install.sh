#!/usr/bin/env bash
# install.sh: installs what the Wine test tier needs from Debian's packages:
# wine64 (Wine 8.0 on Debian 12) to run winnode's Windows build, and
# mingw-w64's C compiler to build the ProcessPrng shim (see build-shim.sh).
# Idempotent: it does nothing when both are already present.
# Needs root (apt-get); set WINE_INSTALL_SUDO=sudo to use sudo.
set -euo pipefail

need=()
command -v wine64 >/dev/null 2>&1 || [ -x /usr/lib/wine/wine64 ] || need+=(wine64)
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || need+=(gcc-mingw-w64-x86-64)

if [ ${#need[@]} -eq 0 ]; then
	echo "hack/wine/install.sh: wine64 and mingw-w64 already installed"
	exit 0
fi

SUDO="${WINE_INSTALL_SUDO:-}"
export DEBIAN_FRONTEND=noninteractive
echo "hack/wine/install.sh: installing ${need[*]} with apt-get (large; takes a few minutes)"
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
