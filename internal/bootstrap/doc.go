// Package bootstrap issues the join credentials a Windows host's kubelet needs
// on a plain Kubernetes cluster, the way kubeadm does it:
//
//   - a short-lived bootstrap token per WindowsInstance (token.go): a Secret
//     bootstrap-token-<id> in kube-system, group system:bootstrappers:winnode,
//     labelled with the instance so it can be found and revoked;
//   - the RBAC that lets that group create kubelet CSRs (rbac.go);
//   - where bootstrap tokens do not authenticate, a join ServiceAccount per
//     instance (serviceaccount.go), a subject of the one shipped binding
//     winnode-join-service-accounts while its token is valid
//     (joinbinding.go): the operator never creates or deletes a binding;
//   - the cluster CA and API server URL from kube-public/cluster-info
//     (clusterinfo.go);
//   - the bootstrap kubeconfig the host's kubelet starts with (kubeconfig.go).
//
// Approving the CSRs is the operator's job (internal/controller/csr); this
// package deliberately grants nothing that would make kube-controller-manager
// approve them on its own.
//
// It also renders the user data script that prepares a Windows host for SSH
// (userdata.go), the other half of "what a host needs before it can join".
//
// Every function takes a client-go kubernetes.Interface talking to the API
// server directly (no cache), so the operator and winnodectl share it.
package bootstrap
