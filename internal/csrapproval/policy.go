package csrapproval

import (
	"context"
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// A kubelet may update its own Node's status, addresses included (the
// NodeRestriction admission plugin does not stop it), so an InternalDNS or
// ExternalDNS address on a Node is, by itself, only the host's word. The
// manifests ship a ValidatingAdmissionPolicy, NodeDNSPolicy, and its
// binding (config/policy): a node may not add such an address to its own
// Windows Node. Where it is in force, every DNS address of a Windows Node
// was written by someone else — a cloud controller manager, or an
// administrator — and the approver lets the node's serving certificate
// carry it (what the kubelet asks for on cloud nodes). Where it is not,
// those addresses prove nothing and are not approved.

// NodeDNSPolicy and NodeDNSPolicyBinding name the shipped policy and its
// binding.
const (
	NodeDNSPolicy        = "winnode-node-dns-addresses"
	NodeDNSPolicyBinding = "winnode-node-dns-addresses"
)

// NodeDNSPolicyEnforced reports whether the node DNS policy and a binding
// of it that denies are installed.
func NodeDNSPolicyEnforced(ctx context.Context, kube kubernetes.Interface) (bool, error) {
	reg := kube.AdmissionregistrationV1()
	if _, err := reg.ValidatingAdmissionPolicies().Get(ctx, NodeDNSPolicy, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("reading ValidatingAdmissionPolicy %s: %w", NodeDNSPolicy, err)
	}
	b, err := reg.ValidatingAdmissionPolicyBindings().Get(ctx, NodeDNSPolicyBinding, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading ValidatingAdmissionPolicyBinding %s: %w", NodeDNSPolicyBinding, err)
	}
	return b.Spec.PolicyName == NodeDNSPolicy && slices.Contains(b.Spec.ValidationActions, admissionv1.Deny), nil
}
