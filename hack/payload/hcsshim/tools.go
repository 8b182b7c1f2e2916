//go:build tools

// Package tools pins hcsshim, whose containerd-shim-runhcs-v1.exe the
// payload carries beside containerd.exe.
package tools

import _ "github.com/Microsoft/hcsshim/cmd/containerd-shim-runhcs-v1"
