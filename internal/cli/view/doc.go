// Package view renders what winnodectl shows about hosts and nodes: the
// tables of `winnodectl status` (table.go, instances.go, node.go) and the
// hosts' progress (progress.go), live on a terminal and as plain lines
// elsewhere. The status command and the demo both use it.
package view
