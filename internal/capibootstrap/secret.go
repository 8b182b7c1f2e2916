package capibootstrap

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
)

// Keys of the bootstrap-data Secret.
const (
	// DataKey holds the bootstrap data (Cluster API contract: key "value").
	DataKey = "value"
	// FormatKey holds bootstrapv1.DataSecretFormat.
	FormatKey = "format"
)

// dataSecret is the bootstrap-data Secret of cfg, as the contract asks: named
// like the config (so the name is recreatable from the config alone), in its
// namespace, labelled with the Cluster's name, controlled by the config (it
// goes when the config goes), of type cluster.x-k8s.io/secret.
//
// It is immutable: Cluster API copies its name into the Machine once and the
// infrastructure provider reads it when it creates the machine, so the data
// of a Machine never changes; a changed WinnodeConfigTemplate rolls new
// Machines instead.
func dataSecret(cfg *bootstrapv1.WinnodeConfig, cluster string, data []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: cfg.Namespace,
			Name:      cfg.Name,
			Labels: map[string]string{
				clusterv1.ClusterNameLabel:     cluster,
				"app.kubernetes.io/managed-by": "winnode-operator",
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cfg, bootstrapv1.GroupVersion.WithKind("WinnodeConfig"))},
		},
		Type:      clusterv1.ClusterSecretType,
		Immutable: ptr.To(true),
		Data:      map[string][]byte{DataKey: data, FormatKey: []byte(bootstrapv1.DataSecretFormat)},
	}
}

// createSecret creates the Secret. The operator may create Secrets in any
// namespace but not read or change them (config/rbac/cluster_role.yaml), so
// a Secret that already exists is told apart by the config's status:
// claimedBefore says that an earlier reconcile recorded the name in
// status.dataSecretName before creating it, so the Secret is the one it
// created before it could record success. Otherwise the name belongs to
// someone else and the config reports it.
func (r *Reconciler) createSecret(ctx context.Context, s *corev1.Secret, claimedBefore bool) (*blocked, error) {
	err := r.Client.Create(ctx, s)
	switch {
	case err == nil:
		return nil, nil
	case apierrors.IsAlreadyExists(err) && claimedBefore:
		return nil, nil
	case apierrors.IsAlreadyExists(err):
		return &blocked{bootstrapv1.ReasonDataSecretNotWritten, fmt.Sprintf(
			"a Secret %s/%s exists that winnode did not create; delete it, or it will not be used as this Machine's bootstrap data", s.Namespace, s.Name)}, nil
	case apierrors.IsInvalid(err):
		return &blocked{bootstrapv1.ReasonDataSecretNotWritten, fmt.Sprintf("the API server refused the Secret %s/%s: %v", s.Namespace, s.Name, err)}, nil
	case apierrors.IsForbidden(err):
		// Reported, and retried: RBAC or an admission policy may change.
		return &blocked{bootstrapv1.ReasonDataSecretNotWritten, fmt.Sprintf("the operator may not create the Secret %s/%s: %v", s.Namespace, s.Name, err)}, err
	}
	return nil, fmt.Errorf("creating Secret %s/%s: %w", s.Namespace, s.Name, err)
}
