#!/bin/sh
# Installs a Debian package when any of the commands it provides is missing:
#   hack/install-apt-package.sh PACKAGE COMMAND...
# e.g. openssh-client (ssh, sftp, ssh-keygen) for the winsim tests,
# iproute2 (ip) for hack/test-e2e.sh's network namespaces. A fresh machine
# has apt; this is the one place that uses it for a single tool.
# Idempotent: does nothing when every command is already there.
set -eu

if [ $# -lt 2 ]; then
	echo "usage: $0 PACKAGE COMMAND..." >&2
	exit 2
fi
pkg=$1
shift

missing=""
for cmd in "$@"; do
	command -v "$cmd" >/dev/null 2>&1 || missing="$missing $cmd"
done
[ -z "$missing" ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-apt-package:$missing missing and apt-get is not available; install $pkg by hand" >&2
	exit 1
fi

SUDO=""
if [ "$(id -u)" != "0" ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo -n"
	else
		echo "install-apt-package: not root and no sudo; run as root: apt-get update && apt-get install -y $pkg" >&2
		exit 1
	fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends "$pkg"
