// Package capibootstrap is winnode's Cluster API bootstrap provider: for
// each WinnodeConfig (bootstrap.winnode.io/v1alpha1) that a Cluster API
// Machine owns, it writes the Machine's bootstrap data, a Secret holding a
// cloudbase-init script that prepares the Windows host for the operator
// (Push mode) or makes it join its workload cluster by itself (Pull mode),
// and reports it as Cluster API's bootstrap-provider contract (v1beta2,
// Cluster API v1.14) says.
//
// One file per step:
//
//   - setup.go: the provider as an optional part of the operator (on only
//     where the cluster serves Cluster API and the WinnodeConfig API;
//     internal/controller/optional), and the controller's watches;
//   - reconcile.go: the order of the steps;
//   - owners.go: the owning Machine and its Cluster, and pausing;
//   - validate.go: the spec's rules;
//   - computername.go, assign.go: the NetBIOS-safe computer name and its
//     uniqueness among the cluster's WinnodeConfigs;
//   - bootstrapdata.go: the cloudbase-init script of Push mode (SSH);
//   - pulldata.go, pull.go: the script of Pull mode and what it carries:
//     the workload cluster's facts and a bootstrap token issued there;
//   - nodejoin.go: a Pull Machine followed until Cluster API sets its
//     nodeRef (the token refreshed, then deleted; the Node's provider ID;
//     condition NodeJoined);
//   - csrview.go: the Pull Machines as the CSR approver sees them;
//   - secret.go: the bootstrap-data Secret, written once;
//   - status.go: conditions, status and events.
//
// Machines and Clusters are read with Cluster API's own API types
// (sigs.k8s.io/cluster-api/api, a module of types that needs only
// k8s.io/api and apimachinery, so it leaves the main module's Kubernetes
// versions alone).
package capibootstrap
