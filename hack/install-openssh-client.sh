#!/bin/sh
# Installs OpenSSH's own client programs (ssh, sftp, ssh-keygen) when they
# are missing. The winsim tests use them to check that the simulated Windows
# hosts speak real SSH and SFTP.
exec sh "$(dirname "$0")/install-apt-package.sh" openssh-client ssh sftp ssh-keygen
