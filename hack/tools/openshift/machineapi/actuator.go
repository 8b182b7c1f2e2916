package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	machinev1 "github.com/openshift/api/machine/v1beta1"
	"github.com/openshift/machine-api-operator/pkg/controller/machine"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winnode/winnode/hack/tools/winsimcloud"
)

// Actuator is the "winsim" cloud provider of the Machine API: the generic
// Machine controller of github.com/openshift/machine-api-operator calls it
// to create, inspect and delete a Machine's instance, which lives in the
// simulated cloud (winsimcloud.Client). It writes what it learns onto the
// Machine as OpenShift's real providers (AWS, Azure, vSphere) do:
// spec.providerID, status.addresses, the instance-state annotation and
// status.providerStatus.
type Actuator struct {
	// client writes Machines (through the manager's cache for reads).
	client client.Client
	// reader reads the user-data Secret from the API server, so that the
	// program caches no Secrets of the namespace.
	reader   client.Reader
	cloud    *winsimcloud.Client
	recorder record.EventRecorder
}

var _ machine.Actuator = (*Actuator)(nil)

// logf logs one line of the actuator; each says "simulated", since no real
// machine is behind it.
func logf(m *machinev1.Machine, format string, args ...any) {
	klog.InfofDepth(1, "winsim (simulated cloud): %s: "+format, append([]any{m.Name}, args...)...)
}

// Create creates the Machine's instance in the simulated cloud with the
// user data of the Secret that the providerSpec names, then records the
// instance on the Machine. A repeated Create finds the instance the first
// one made (the cloud returns an existing instance of that name).
func (a *Actuator) Create(ctx context.Context, m *machinev1.Machine) error {
	spec, err := decodeProviderSpec(m)
	if err != nil {
		a.recorder.Eventf(m, corev1.EventTypeWarning, "FailedCreate", "%v", err)
		return err
	}
	userData, err := a.userData(ctx, m, spec)
	if err != nil {
		a.recorder.Eventf(m, corev1.EventTypeWarning, "FailedCreate", "%v", err)
		return err
	}
	inst, err := a.cloud.Create(ctx, m.Name, userData)
	if err != nil {
		err = fmt.Errorf("machine %s/%s: creating its simulated instance: %w", m.Namespace, m.Name, err)
		a.recorder.Eventf(m, corev1.EventTypeWarning, "FailedCreate", "%v", err)
		return err
	}
	logf(m, "instance %s (%s) created, address %s", inst.ID, inst.Hostname, inst.Address)
	a.recorder.Eventf(m, corev1.EventTypeNormal, "Created", "Created simulated instance %s", inst.ID)
	return a.record(ctx, m, inst)
}

// Exists says whether the Machine's instance exists in the simulated cloud.
func (a *Actuator) Exists(ctx context.Context, m *machinev1.Machine) (bool, error) {
	_, err := a.cloud.Get(ctx, m.Name)
	switch {
	case errors.Is(err, winsimcloud.ErrNoInstance):
		logf(m, "no instance")
		return false, nil
	case err != nil:
		return false, fmt.Errorf("machine %s/%s: %w", m.Namespace, m.Name, err)
	}
	return true, nil
}

// Update records the instance's provider ID, addresses and state on the
// Machine.
func (a *Actuator) Update(ctx context.Context, m *machinev1.Machine) error {
	inst, err := a.cloud.Get(ctx, m.Name)
	if err != nil {
		return fmt.Errorf("machine %s/%s: reading its simulated instance: %w", m.Namespace, m.Name, err)
	}
	return a.record(ctx, m, inst)
}

// Delete powers off and removes the Machine's instance; one that is gone
// already is not an error.
func (a *Actuator) Delete(ctx context.Context, m *machinev1.Machine) error {
	if err := a.cloud.Delete(ctx, m.Name); err != nil {
		err = fmt.Errorf("machine %s/%s: deleting its simulated instance: %w", m.Namespace, m.Name, err)
		a.recorder.Eventf(m, corev1.EventTypeWarning, "FailedDelete", "%v", err)
		return err
	}
	logf(m, "instance deleted")
	a.recorder.Eventf(m, corev1.EventTypeNormal, "Deleted", "Deleted simulated instance of machine %s", m.Name)
	return nil
}

// userData reads key userData of the Secret the providerSpec names, in the
// Machine's namespace, as the AWS, Azure and vSphere providers do. A missing
// Secret is an ordinary error (retried): it may be created later.
func (a *Actuator) userData(ctx context.Context, m *machinev1.Machine, spec *ProviderSpec) ([]byte, error) {
	var s corev1.Secret
	key := client.ObjectKey{Namespace: m.Namespace, Name: spec.UserDataSecret.Name}
	if err := a.reader.Get(ctx, key, &s); err != nil {
		return nil, fmt.Errorf("machine %s/%s: reading user data Secret %s: %w", m.Namespace, m.Name, key.Name, err)
	}
	data, ok := s.Data[userDataKey]
	if !ok {
		return nil, fmt.Errorf("machine %s/%s: Secret %s/%s has no key %q with the instance's user data", m.Namespace, m.Name, key.Namespace, key.Name, userDataKey)
	}
	return data, nil
}

// record writes the instance onto the Machine the way MAO's vSphere provider
// does (machineScope.PatchMachine): a merge patch of metadata and spec, then
// one of the status subresource, each from what the Machine was before, so
// only what the actuator changed is sent (and the generic controller's
// later status patch starts from the result).
func (a *Actuator) record(ctx context.Context, m *machinev1.Machine, inst *winsimcloud.Instance) error {
	before := m.DeepCopy()
	providerID := inst.ProviderID
	m.Spec.ProviderID = &providerID
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[machine.MachineInstanceStateAnnotationName] = inst.State
	m.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: inst.Address},
		{Type: corev1.NodeInternalDNS, Address: inst.Hostname},
		{Type: corev1.NodeHostName, Address: inst.Hostname},
	}
	status, err := providerStatus(inst)
	if err != nil {
		return err
	}
	m.Status.ProviderStatus = status
	wanted := m.Status.DeepCopy()

	specSent, err := patchIfChanged(ctx, m, client.MergeFrom(before), func(ctx context.Context, o client.Object, p client.Patch) error {
		return a.client.Patch(ctx, o, p)
	})
	if err != nil {
		return fmt.Errorf("machine %s/%s: recording instance %s: %w", m.Namespace, m.Name, inst.ID, err)
	}
	// Patch returned the stored Machine, status as it was: the status
	// patch is computed from the status before, to the one wanted.
	statusBase := m.DeepCopy()
	statusBase.Status = *before.Status.DeepCopy()
	m.Status = *wanted
	statusSent, err := patchIfChanged(ctx, m, client.MergeFrom(statusBase), func(ctx context.Context, o client.Object, p client.Patch) error {
		return a.client.Status().Patch(ctx, o, p)
	})
	if err != nil {
		return fmt.Errorf("machine %s/%s: recording instance %s's addresses: %w", m.Namespace, m.Name, inst.ID, err)
	}
	if specSent || statusSent {
		logf(m, "recorded providerID %s, address %s, hostname %s, state %s", inst.ProviderID, inst.Address, inst.Hostname, inst.State)
	}
	return nil
}

// patchIfChanged sends patch with send unless it is empty, and says whether
// it sent it: a Machine reconciled again and again (each status change is an
// event) is not written each time.
func patchIfChanged(ctx context.Context, m *machinev1.Machine, patch client.Patch,
	send func(context.Context, client.Object, client.Patch) error) (bool, error) {
	data, err := patch.Data(m)
	if err != nil {
		return false, err
	}
	if string(data) == "{}" {
		return false, nil
	}
	return true, send(ctx, m, patch)
}

// providerStatus is the Machine's status.providerStatus: the instance's ID
// and state, under the field names AWS and vSphere use (instanceId,
// instanceState), which the generic controller sets to Unknown when the
// Machine fails.
func providerStatus(inst *winsimcloud.Instance) (*runtime.RawExtension, error) {
	data, err := json.Marshal(ProviderStatus{
		APIVersion: ProviderAPIVersion, Kind: ProviderStatusKind,
		InstanceID: inst.ID, InstanceState: inst.State,
	})
	if err != nil {
		return nil, err
	}
	return &runtime.RawExtension{Raw: data}, nil
}
