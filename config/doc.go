// Package config holds the kustomize manifests that install winnode (see
// default/, openshift/ and samples/). Its only Go code embeds one sample for
// `winnodectl demo` (samples.go). Its tests build the manifests with
// kustomize, check them, and apply them with server-side dry run to a real
// control plane (internal/testenv).
package config
