#!/usr/bin/env bash
# Regenerates what controller-gen derives from the Go sources:
#   api/v1alpha1/zz_generated.deepcopy.go  (object)
#   config/crd/bases/*.yaml                (crd)
#   config/rbac/role.yaml                  (rbac, from +kubebuilder:rbac markers)
# controller-gen is pinned in hack/tools/dev/go.mod; run from anywhere.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bin="$root/bin/dev"
mkdir -p "$bin"
# Build once; the Go build cache makes repeated runs fast.
go -C hack/tools/dev build -o "$bin/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen

"$bin/controller-gen" object paths=./api/...
"$bin/controller-gen" crd paths=./api/... output:crd:artifacts:config=config/crd/bases
# RBAC from the markers of the controllers and of internal/bootstrap. The
# kustomize base (config/rbac/kustomization.yaml) uses the hand-written,
# commented cluster_role.yaml and roles.yaml; role.yaml is the markers' view,
# to compare against them.
"$bin/controller-gen" rbac:roleName=winnode-operator paths=./internal/controller/... paths=./internal/bootstrap/... output:rbac:artifacts:config=config/rbac
