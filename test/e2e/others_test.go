package e2e

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/bootstrap"
)

// setupOthers registers the operator's other controllers. TEMPORARY: until
// internal/controller's CSR approver lands, a minimal approver stands in.
func setupOthers(mgr ctrl.Manager, w *world) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		t := time.NewTicker(300 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			approveKnown(ctx, w)
		}
	}))
}

func approveKnown(ctx context.Context, w *world) {
	var insts winnodev1.WindowsInstanceList
	if err := w.client.List(ctx, &insts); err != nil {
		return
	}
	csrs, err := w.kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, csr := range csrs.Items {
		if len(csr.Status.Conditions) > 0 {
			continue
		}
		block, _ := pem.Decode(csr.Spec.Request)
		if block == nil {
			continue
		}
		req, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			continue
		}
		ok := false
		for _, i := range insts.Items {
			if i.Status.NodeName == "" || req.Subject.CommonName != "system:node:"+i.Status.NodeName {
				continue
			}
			switch csr.Spec.SignerName {
			case certificatesv1.KubeAPIServerClientKubeletSignerName:
				ok = i.Status.BootstrapTokenID != "" && csr.Spec.Username == bootstrap.Username(i.Status.BootstrapTokenID)
			case certificatesv1.KubeletServingSignerName:
				ok = csr.Spec.Username == "system:node:"+i.Status.NodeName
			}
		}
		if !ok {
			continue
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "E2E", Message: "approved by the e2e stand-in approver",
		})
		_, _ = w.kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, &csr, metav1.UpdateOptions{})
	}
}
