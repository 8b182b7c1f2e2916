package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TemplateObjectMeta is the metadata a WinnodeConfigTemplate gives the
// WinnodeConfigs cloned from it (Cluster API's clusterv1.ObjectMeta, copied
// here so that the API package depends on apimachinery only).
type TemplateObjectMeta struct {
	// Labels to put on each WinnodeConfig.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations to put on each WinnodeConfig.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// WinnodeConfigTemplateResource is what each cloned WinnodeConfig gets.
type WinnodeConfigTemplateResource struct {
	// +optional
	ObjectMeta TemplateObjectMeta `json:"metadata,omitempty,omitzero"`
	// Spec of each WinnodeConfig.
	// +optional
	Spec WinnodeConfigSpec `json:"spec,omitempty"`
}

// WinnodeConfigTemplateSpec holds the template.
type WinnodeConfigTemplateSpec struct {
	Template WinnodeConfigTemplateResource `json:"template"`
}

// WinnodeConfigTemplate is the template of the WinnodeConfigs of a
// MachineDeployment or MachineSet (spec.template.spec.bootstrap.configRef):
// Cluster API clones it into one WinnodeConfig per Machine. Changing the
// template a MachineDeployment refers to rolls its Machines.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:path=winnodeconfigtemplates,scope=Namespaced,categories=cluster-api
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WinnodeConfigTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec WinnodeConfigTemplateSpec `json:"spec,omitempty"`
}

// WinnodeConfigTemplateList is a list of WinnodeConfigTemplates.
//
// +kubebuilder:object:root=true
type WinnodeConfigTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WinnodeConfigTemplate `json:"items"`
}
