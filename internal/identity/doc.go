// Package identity decides, purely, who a Windows host is in the cluster:
// which names it may have as a node (CheckNodeName: a DNS label, not a name
// of the API server's serving certificate, not another Node's), and which
// of two WindowsInstances keeps a node name, a host or a host key they both
// name (NodeNameOwner, OwnerOfName, HostOwner, HostKeyOwner, Precedes).
//
// The configure engine, the CSR approver and pre-flight checks of a name
// call the same functions, over whatever set of instances they are given
// (one cluster's, or one workload cluster's), so that they cannot disagree
// (docs/trust.md).
package identity
