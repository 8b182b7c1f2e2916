// Package workload is how the operator acts in the workload cluster of a
// Cluster API Machine: the cluster named by the Machine's spec.clusterName,
// in the Machine's namespace, whose admin kubeconfig is the
// <cluster>-kubeconfig Secret (key "value") beside the Cluster. A Windows
// host of such a Machine joins that cluster, not the management cluster the
// operator runs in; a self-hosted cluster (its kubeconfig points back at
// the management cluster) goes through the same path.
//
// Clusters keeps one Cluster per workload cluster in use, connected when
// first needed (Clusters.Get) and stopped when the Cluster API Cluster is
// gone:
//
//   - kubeconfig.go: the Secret read (never listed) and checked: inline
//     credentials only, no program to run, no file to read;
//   - access.go: with the admin kubeconfig, winnode's namespace,
//     ServiceAccount and RBAC installed there (config/workload/access.yaml,
//     the grants a join needs and no more);
//   - token.go: every request after that made as the ServiceAccount, with
//     a short-lived TokenRequest token renewed before it expires; the admin
//     kubeconfig is read afresh for each token and never kept;
//   - facts.go: the cluster's own facts (API endpoint, Service and pod
//     ranges, DNS domain, the addresses a kubelet certificate may carry),
//     from the Cluster's spec, not from the operator's flags;
//   - clusters.go: the registry, one cache per workload cluster (Nodes and
//     CSRs, for the controllers' watches), and why a cluster cannot be
//     used (Error, with the reasons the conditions report).
//
// Why not Cluster API's own ClusterCache (sigs.k8s.io/cluster-api
// controllers/clustercache), which does the connecting, caching and health
// checking for Cluster API's controllers: it acts in each workload cluster
// with the admin kubeconfig itself, for every request, where winnode must
// act as a ServiceAccount of narrow rights; and taking it on means taking
// on the whole sigs.k8s.io/cluster-api module (v1.14.2 is built and tested
// against controller-runtime v0.24 and Kubernetes v0.36, the operator runs
// v0.25 and v0.37), for a part of it this package does in a few hundred
// lines with controller-runtime's cache.New per cluster and source.Kind on
// it, the usual multi-cluster pattern. The main module keeps only
// sigs.k8s.io/cluster-api/api, Cluster API's types.
package workload
