//go:build tools

// Package tools pins the etcd server that build-control-plane.sh builds.
package tools

import _ "go.etcd.io/etcd/server/v3"
