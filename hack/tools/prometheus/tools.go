//go:build tools

// Package tools pins the Prometheus server that
// hack/tools/build-prometheus.sh builds for the test world.
package tools

import _ "github.com/prometheus/prometheus/cmd/prometheus"
