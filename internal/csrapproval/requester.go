package csrapproval

import (
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
)

// requesterInstance binds a client CSR to the WindowsInstance whose join
// credential requested it, through the requester the API server recorded
// (which the host cannot choose): a bootstrap token's user
// system:bootstrap:<id> ↔ Status.BootstrapTokenID, or a join
// ServiceAccount's user system:serviceaccount:<joinNamespace>:<name> ↔
// Status.JoinServiceAccount. The requester must also be in the form's group
// (system:bootstrappers:winnode, system:serviceaccounts:<joinNamespace>), and
// the instance must not be being deleted. It returns the instance and the
// credential's name, or nil and the decision to leave the CSR alone.
func requesterInstance(csr *certificatesv1.CertificateSigningRequest, instances []winnodev1.WindowsInstance, joinNamespace string) (*winnodev1.WindowsInstance, string, Decision) {
	var (
		match      func(*winnodev1.WindowsInstance) bool
		group      string
		credential string
	)
	if tokenID, ok := bootstrap.TokenIDFromUsername(csr.Spec.Username); ok {
		match = func(wi *winnodev1.WindowsInstance) bool { return wi.Status.BootstrapTokenID == tokenID }
		group, credential = bootstrap.Group, "bootstrap token "+tokenID
	} else if name, ok := bootstrap.ServiceAccountFromUsername(joinNamespace, csr.Spec.Username); ok && joinNamespace != "" {
		match = func(wi *winnodev1.WindowsInstance) bool { return wi.Status.JoinServiceAccount == name }
		group, credential = bootstrap.ServiceAccountGroup(joinNamespace), "join ServiceAccount "+joinNamespace+"/"+name
	} else {
		return nil, "", leave("", "client CSR requested by %q, not by a winnode join credential (bootstrap token, or ServiceAccount of namespace %q)", csr.Spec.Username, joinNamespace)
	}
	var wi *winnodev1.WindowsInstance
	for i := range instances {
		if match(&instances[i]) {
			wi = &instances[i]
			break
		}
	}
	if wi == nil {
		return nil, "", leave("", "client CSR requested by %s, which no WindowsInstance was issued", credential)
	}
	if !wi.DeletionTimestamp.IsZero() {
		return nil, "", leave(wi.Name, "WindowsInstance %s is being deleted", wi.Name)
	}
	if !slices.Contains(csr.Spec.Groups, group) {
		return nil, "", leave(wi.Name, "requester groups %v lack %s", csr.Spec.Groups, group)
	}
	return wi, credential, Decision{}
}
