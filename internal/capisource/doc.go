// Package capisource is the operator's Cluster API source: each Machine
// (cluster.x-k8s.io/v1beta2) whose bootstrap config is a WinnodeConfig
// (winnode's bootstrap provider, internal/capibootstrap) becomes one
// WindowsInstance once its infrastructure is provisioned and it has an
// InternalIP; the instance is deconfigured and deleted before the
// Machine's infrastructure is deleted.
//
//   - setup.go: the source as an optional part of the operator (on only
//     where the cluster serves Cluster API and winnode's bootstrap API;
//     internal/controller/optional) and its watches, of Machines of every
//     namespace in the manager's cache;
//   - machine.go: one Machine → its WindowsInstance, named
//     <namespace>.<machine> (internal/machinesource keeps it);
//   - hook.go: Cluster API's pre-terminate hook annotation, which holds
//     the Machine's infrastructure until its host is deconfigured.
//
// Cluster API itself sets the Machine's status.nodeRef (matching the Node
// by the provider ID the kubelet registers with) and deletes the Node
// after the infrastructure; winnode's deconfiguration deletes it first.
package capisource
