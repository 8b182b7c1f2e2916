#!/usr/bin/env bash
# make demo: until winnodectl demo exists, start the control plane and wait.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./hack/controlplane
