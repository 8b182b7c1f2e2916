package csrapproval

import (
	"context"
	"fmt"
	"net/netip"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// LoadFacts reads the Facts Decide needs from the API server itself, never
// from a cache: the Nodes (names, UIDs and addresses), whether their DNS
// addresses can be attributed to a cloud controller manager (the node DNS
// policy is in force: policy.go), and the approved kubelet client CSRs by
// requester. The operator and winnodectl add call it before each decision,
// so what a previous run approved counts after a restart. The API server's
// names are the caller's to add (APIServerNames).
func LoadFacts(ctx context.Context, kube kubernetes.Interface, policy Policy) (Facts, error) {
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return Facts{}, fmt.Errorf("listing Nodes to check CSRs against them: %w", err)
	}
	uids := map[string]string{}
	byAddress := map[netip.Addr]string{}
	dnsNames := map[string][]string{}
	for _, n := range nodes.Items {
		uids[n.Name] = string(n.UID)
		for _, a := range n.Status.Addresses {
			if ip, err := netip.ParseAddr(a.Address); err == nil {
				byAddress[ip.Unmap()] = n.Name
			}
			if a.Type == corev1.NodeInternalDNS || a.Type == corev1.NodeExternalDNS {
				dnsNames[n.Name] = append(dnsNames[n.Name], a.Address)
			}
		}
	}
	enforced, err := NodeDNSPolicyEnforced(ctx, kube)
	if err != nil {
		return Facts{}, err
	}
	var cloudDNS func(string) []string
	if enforced {
		cloudDNS = func(node string) []string { return dnsNames[node] }
	}
	csrs, err := kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.signerName", certificatesv1.KubeAPIServerClientKubeletSignerName).String(),
	})
	if err != nil {
		return Facts{}, fmt.Errorf("listing kubelet client CSRs to count each requester's approved ones: %w", err)
	}
	approvedBy := map[string][]string{}
	for _, c := range csrs.Items {
		if isApproved(&c) {
			key := credential(c.Spec.Username, c.Spec.UID)
			approvedBy[key] = append(approvedBy[key], c.Name)
		}
	}
	return Facts{
		NodeUID: func(name string) (string, bool) {
			uid, ok := uids[name]
			return uid, ok
		},
		CloudDNSNames:      cloudDNS,
		NodeOfAddress:      func(ip netip.Addr) string { return byAddress[ip.Unmap()] },
		ApprovedClientCSRs: func(requester, uid string) []string { return approvedBy[credential(requester, uid)] },
		Policy:             policy,
	}, nil
}

func isApproved(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved {
			return true
		}
	}
	return false
}

// credential identifies a join credential by its requester's name and UID:
// a join ServiceAccount deleted and made again for the same instance (the
// host removed and added again) has the same name and a new UID, and is a
// new credential. Bootstrap tokens have no UID and a new name each time.
func credential(requester, uid string) string { return requester + "\x00" + uid }
