#!/bin/sh
# Installs iproute2's ip from Debian's iproute2 package when it is missing.
# hack/test-e2e.sh uses it to give each test process's network namespace a
# local route for the simulated hosts' addresses.
# Idempotent: does nothing when ip is already there.
set -eu

if command -v ip >/dev/null 2>&1; then
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-iproute2: ip is missing and apt-get is not available; install iproute2 by hand" >&2
	exit 1
fi

SUDO=""
if [ "$(id -u)" != "0" ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo -n"
	else
		echo "install-iproute2: not root and no sudo; run as root: apt-get update && apt-get install -y iproute2" >&2
		exit 1
	fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends iproute2
