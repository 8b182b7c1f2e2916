//go:build tools

// Package tools pins the CSI proxy, whose csi-proxy.exe the payload carries
// as the Windows service csi-proxy: Windows CSI node plugins reach the
// host's disks and volumes through its named pipes (docs/add-host.md).
package tools

import _ "github.com/kubernetes-csi/csi-proxy/cmd/csi-proxy"
