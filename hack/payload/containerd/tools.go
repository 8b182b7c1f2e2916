//go:build tools

// Package tools pins containerd, whose containerd.exe the payload carries
// as the container runtime winnode installs on hosts it manages.
package tools

import _ "github.com/containerd/containerd/v2/cmd/containerd"
