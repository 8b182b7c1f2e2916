// Package v1alpha1 holds the winnode.io/v1alpha1 API: WindowsInstance, the one
// object per Windows host that the operator reconciles into a configured node.
//
// Sources (the windows-instances ConfigMap, Machines, an administrator) only
// create and delete WindowsInstances; the instance reconciler owns their status.
//
// +kubebuilder:object:generate=true
// +groupName=winnode.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "winnode.io", Version: "v1alpha1"}

	// SchemeBuilder registers this package's types with a runtime.Scheme.
	// It uses apimachinery only, so that importing the API does not import
	// controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &WindowsInstance{}, &WindowsInstanceList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
