//go:build tools

// Package tools pins windows_exporter, whose windows_exporter.exe the
// payload carries as the Windows service windows_exporter: Prometheus
// scrapes each Windows node's CPU, memory, disks, network, services and
// containers from it on port 9182 over TLS (docs/metrics.md).
package tools

import _ "github.com/prometheus-community/windows_exporter"
