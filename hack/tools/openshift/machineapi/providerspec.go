package main

import (
	"bytes"
	"encoding/json"

	machinev1 "github.com/openshift/api/machine/v1beta1"
	"github.com/openshift/machine-api-operator/pkg/controller/machine"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The winsim provider's types, in a Machine's spec.providerSpec.value and
// status.providerStatus.
const (
	ProviderAPIVersion = "machine.winsim.winnode.io/v1"
	ProviderSpecKind   = "WinsimMachineProviderSpec"
	ProviderStatusKind = "WinsimMachineProviderStatus"
	// userDataKey is the user-data Secret's key, as on AWS, Azure and vSphere.
	userDataKey = "userData"
)

// ProviderSpec is what a winsim Machine asks of the simulated cloud:
//
//	apiVersion: machine.winsim.winnode.io/v1
//	kind: WinsimMachineProviderSpec
//	userDataSecret: {name: windows-user-data}
type ProviderSpec struct {
	metav1.TypeMeta `json:",inline"`
	// ObjectMeta is accepted (and ignored) because OpenShift's providerSpecs
	// carry one, and MachineSets copied from a cluster's often show
	// "metadata: {creationTimestamp: null}".
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// UserDataSecret names the Secret, in the Machine's namespace, whose key
	// userData the instance boots with.
	UserDataSecret *corev1.LocalObjectReference `json:"userDataSecret,omitempty"`
}

// ProviderStatus is the Machine's status.providerStatus.
type ProviderStatus struct {
	APIVersion    string `json:"apiVersion"`
	Kind          string `json:"kind"`
	InstanceID    string `json:"instanceId,omitempty"`
	InstanceState string `json:"instanceState,omitempty"`
}

// decodeProviderSpec reads the Machine's providerSpec strictly: an unknown
// field, another kind or no user-data Secret is an invalid configuration
// (machine.InvalidMachineConfiguration), which the generic controller turns
// into phase Failed instead of retrying, as for the real providers.
func decodeProviderSpec(m *machinev1.Machine) (*ProviderSpec, error) {
	invalid := func(format string, args ...any) error {
		return machine.InvalidMachineConfiguration("machine %s/%s: providerSpec: "+format,
			append([]any{m.Namespace, m.Name}, args...)...)
	}
	if m.Spec.ProviderSpec.Value == nil || len(m.Spec.ProviderSpec.Value.Raw) == 0 {
		return nil, invalid("no value")
	}
	dec := json.NewDecoder(bytes.NewReader(m.Spec.ProviderSpec.Value.Raw))
	dec.DisallowUnknownFields()
	var spec ProviderSpec
	if err := dec.Decode(&spec); err != nil {
		return nil, invalid("%v", err)
	}
	if spec.APIVersion != ProviderAPIVersion || spec.Kind != ProviderSpecKind {
		return nil, invalid("%s/%s is not a winsim providerSpec (want apiVersion %s, kind %s)",
			spec.APIVersion, spec.Kind, ProviderAPIVersion, ProviderSpecKind)
	}
	if spec.UserDataSecret == nil || spec.UserDataSecret.Name == "" {
		return nil, invalid("userDataSecret.name is missing: it names the Secret with the instance's user data (key %s)", userDataKey)
	}
	return &spec, nil
}
