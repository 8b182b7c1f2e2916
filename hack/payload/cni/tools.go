//go:build tools

// Package tools records the programs this module builds, so that go.mod pins
// their versions. Nothing imports it; hack/payload/build.sh builds them with
// GOOS=windows GOARCH=amd64.
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/windows/win-bridge"
	_ "github.com/containernetworking/plugins/plugins/main/windows/win-overlay"
)
