#!/usr/bin/env bash
# update-standin-flags.sh [PAYLOAD-DIR]: builds the payload (hack/payload/build.sh,
# cached) and copies the flag lists it recorded from the real kubelet.exe,
# kube-proxy.exe, flanneld.exe, csi-proxy.exe, containerd.exe and windows_exporter.exe into internal/winsim/standin/flags/, the
# copies the stand-ins accept exactly (make standin-flags). Run it after
# changing the Kubernetes, flannel, CSI proxy, containerd or windows_exporter version the payload pins; the stand-in
# test TestRecordedFlagsMatchThePayload fails until then.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(bash "$root/hack/payload/build.sh" "$@" | tail -n1)
for program in kubelet kube-proxy flanneld csi-proxy containerd windows_exporter; do
	cp "$dir/flags/$program.txt" "$root/internal/winsim/standin/flags/$program.txt"
done
git -C "$root" status --short internal/winsim/standin/flags/
echo "update-standin-flags: copied $dir/flags/*.txt to internal/winsim/standin/flags/"
