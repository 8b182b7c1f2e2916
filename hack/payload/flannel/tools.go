//go:build tools

// Package tools pins flannel, whose flanneld the payload carries for
// Windows nodes in flannel mode (docs/networking.md).
package tools

import _ "github.com/flannel-io/flannel"
