package config

import _ "embed"

// WindowsWebServer is samples/windows-web-server.yaml: a Windows web server
// Deployment and its Service, which `winnodectl demo` writes next to its
// kubeconfig for its "try" lines.
//
//go:embed samples/windows-web-server.yaml
var WindowsWebServer []byte
