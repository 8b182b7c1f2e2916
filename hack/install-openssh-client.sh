#!/bin/sh
# Installs OpenSSH's own client programs (ssh, sftp, ssh-keygen) from Debian's
# openssh-client package when they are missing. The winsim tests use them to
# check that the simulated Windows hosts speak real SSH and SFTP.
# Idempotent: does nothing when ssh and sftp are already there.
set -eu

if command -v ssh >/dev/null 2>&1 && command -v sftp >/dev/null 2>&1 && command -v ssh-keygen >/dev/null 2>&1; then
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-openssh-client: ssh/sftp are missing and apt-get is not available; install OpenSSH's client by hand" >&2
	exit 1
fi

SUDO=""
if [ "$(id -u)" != "0" ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo -n"
	else
		echo "install-openssh-client: not root and no sudo; run as root: apt-get update && apt-get install -y openssh-client" >&2
		exit 1
	fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends openssh-client
