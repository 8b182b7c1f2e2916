// Package config holds the kustomize manifests that install winnode (see
// default/, openshift/ and samples/). It has no Go code of its own: its tests
// build the manifests with kustomize, check them, and apply them with
// server-side dry run to a real control plane (internal/testenv).
package config
