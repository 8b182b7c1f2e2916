#!/usr/bin/env bash
# Regenerates what controller-gen derives from the Go sources:
#   api/v1alpha1/zz_generated.deepcopy.go            (object)
#   api/bootstrap/v1alpha1/zz_generated.deepcopy.go  (object)
#   config/crd/bases/*.yaml                          (crd)
#   config/rbac/role.yaml                  (rbac, from +kubebuilder:rbac markers)
# controller-gen is pinned in hack/tools/dev/go.mod; run from anywhere.
#
#   hack/generate.sh            regenerate in place
#   hack/generate.sh --verify   fail (exit 1, with a diff) if the committed
#                               files are not what the sources generate
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bin="$root/bin/dev"
mkdir -p "$bin"
# Build once; the Go build cache makes repeated runs fast.
go -C hack/tools/dev build -o "$bin/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen

# The API packages (one folder per group and version) whose deepcopy
# functions are generated beside them.
apis=(v1alpha1 bootstrap/v1alpha1)

# generate API_DIR CRD_DIR RBAC_DIR (API_DIR: where api/'s folders are)
generate() {
  for api in "${apis[@]}"; do
    mkdir -p "$1/$api"
    "$bin/controller-gen" object paths="./api/$api" output:object:dir="$1/$api"
  done
  "$bin/controller-gen" crd paths=./api/... output:crd:dir="$2"
  # RBAC from the markers of the controllers, of internal/bootstrap and of
  # internal/capibootstrap (the Cluster API bootstrap provider). The
  # kustomize base (config/rbac/kustomization.yaml) uses the hand-written,
  # commented cluster_role.yaml and roles.yaml; role.yaml is the markers'
  # view, which the tests of internal/controller's packages run the
  # controllers under.
  "$bin/controller-gen" rbac:roleName=winnode-operator paths=./internal/controller/... paths=./internal/bootstrap/... paths=./internal/capibootstrap/... paths=./internal/machineapi/... paths=./internal/capisource/... paths=./internal/workload/... output:rbac:dir="$3"
}

if [ "${1:-}" = "--verify" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/api" "$tmp/crd" "$tmp/rbac"
  generate "$tmp/api" "$tmp/crd" "$tmp/rbac"
  status=0
  for api in "${apis[@]}"; do
    diff -u "api/$api/zz_generated.deepcopy.go" "$tmp/api/$api/zz_generated.deepcopy.go" || status=1
  done
  diff -ru config/crd/bases "$tmp/crd" || status=1
  diff -u config/rbac/role.yaml "$tmp/rbac/role.yaml" || status=1
  if [ $status -ne 0 ]; then
    echo "generated files are out of date: run hack/generate.sh" >&2
  fi
  exit $status
fi

generate api config/crd/bases config/rbac
