package config

import _ "embed"

// WindowsWebServer is samples/windows-web-server.yaml: a Windows web server
// Deployment and its Service, which `winnodectl demo` writes next to its
// kubeconfig for its "try" lines.
//
//go:embed samples/windows-web-server.yaml
var WindowsWebServer []byte

// WorkloadAccess is workload/access.yaml: what the operator installs in
// each Cluster API workload cluster whose Machines it configures (its
// namespace, its ServiceAccount there and the RBAC a join needs),
// internal/workload.
//
//go:embed workload/access.yaml
var WorkloadAccess []byte
