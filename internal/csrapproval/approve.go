package csrapproval

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Approve adds the Approved condition through the approval subresource,
// with message saying who approved and why (a Decision's Reason). The
// operator's CSR approver (internal/controller/csr) and winnodectl add call
// it after Decide approved.
func Approve(ctx context.Context, kube kubernetes.Interface, csr *certificatesv1.CertificateSigningRequest, message string) error {
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type:           certificatesv1.CertificateApproved,
		Status:         corev1.ConditionTrue,
		Reason:         "WinnodeApproved",
		Message:        message,
		LastUpdateTime: metav1.Now(),
	})
	if _, err := kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("approving CSR %s: %w", csr.Name, err)
	}
	return nil
}
