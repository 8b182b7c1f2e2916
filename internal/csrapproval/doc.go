// Package csrapproval decides which kubelet CertificateSigningRequests
// winnode approves, and approves them (docs/approval.md has every rule with
// its reason):
//
//   - decide.go: Decide, a pure function of one CSR, the WindowsInstances and
//     the Facts, which approves only a managed host's kubelet client
//     certificate (requested with that host's bootstrap token) and serving
//     certificate, and leaves anything else alone;
//   - names.go: which DNS names and IPs a serving certificate may carry
//     (the host's own, never a Service's or another Node's);
//   - limits.go: the checks on top: key types and sizes, one client
//     certificate per join credential, a Ready node's own renewal;
//   - facts.go: Facts (what Decide knows of the cluster) and Policy (the
//     administrator's --node-address-cidrs and --service-cidr);
//   - load.go: LoadFacts, read from the API server before each decision;
//   - autoapprove.go: finding bindings through which kube-controller-manager
//     would approve winnode's hosts' client CSRs first;
//   - approve.go: Approve, the approval subresource write.
//
// Both the operator (internal/controller/csr, the Approver reconciler)
// and `winnodectl add` (internal/cli/approve.go, for its one host) call
// them, so winnodectl approves nothing the operator would not.
package csrapproval
