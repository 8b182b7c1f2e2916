// Package v1alpha1 holds the bootstrap.winnode.io/v1alpha1 API: winnode's
// Cluster API bootstrap provider. A WinnodeConfig, referenced by a Cluster
// API Machine's spec.bootstrap.configRef, gets a bootstrap-data Secret in
// cloudbase-init form that prepares a Windows host for the winnode operator
// (internal/capibootstrap); a WinnodeConfigTemplate is what a
// MachineDeployment or MachineSet clones into one WinnodeConfig per Machine.
//
// The types follow Cluster API's bootstrap-provider contract, version
// v1beta2 (Cluster API v1.14; docs/book/src/developer/providers/contracts/
// bootstrap-config.md in sigs.k8s.io/cluster-api): namespaced resources,
// status.dataSecretName, status.initialization.dataSecretCreated and a Ready
// condition, and CRDs labelled cluster.x-k8s.io/v1beta2=v1alpha1.
//
// +kubebuilder:object:generate=true
// +groupName=bootstrap.winnode.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "bootstrap.winnode.io", Version: "v1alpha1"}

	// SchemeBuilder registers this package's types with a runtime.Scheme
	// (apimachinery only, as winnode.io/v1alpha1 does).
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&WinnodeConfig{}, &WinnodeConfigList{},
		&WinnodeConfigTemplate{}, &WinnodeConfigTemplateList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
