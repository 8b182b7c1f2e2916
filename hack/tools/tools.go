//go:build tools

// Package tools records the programs this module builds, so that go.mod pins
// their versions. Nothing imports it; build-control-plane.sh builds them.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
