// Package csrapproval decides which kubelet CertificateSigningRequests
// winnode approves, and approves them:
//
//   - decide.go: Decide, a pure function of one CSR, the WindowsInstances and
//     whether a Node exists, which approves only a managed host's kubelet
//     client certificate (requested with that host's bootstrap token) and
//     serving certificate (for that host's names and addresses), and leaves
//     anything else alone;
//   - approve.go: Approve, the approval subresource write.
//
// Both the operator (internal/controller/csr.go, the CSRApprover reconciler)
// and `winnodectl add` (internal/cli/approve.go, for its one host) call
// them, so winnodectl approves nothing the operator would not.
package csrapproval
