//go:build tools

// Package tools records the programs this module builds, so that go.mod pins
// their versions. Nothing imports it; hack/payload/build.sh builds them with
// GOOS=windows GOARCH=amd64.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
