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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "winnode.io", Version: "v1alpha1"}

	// SchemeBuilder registers this package's types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
