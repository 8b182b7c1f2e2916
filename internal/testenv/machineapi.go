package testenv

import (
	"context"
	"encoding/json"
	"errors"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The openshift flavor's Machine API (Options.MachineAPICloudURL): the
// real controllers of github.com/openshift/machine-api-operator, at the
// version hack/tools/openshift/go.mod pins — MachineSet, nodelink, Machine
// and drain — built into one program, winsim-machine-api
// (hack/tools/openshift/machineapi, built by hack/tools/build-machine-api.sh),
// with the simulated "winsim" cloud provider: its instances live in the
// simulated cloud whose HTTP API the test serves at MachineAPICloudURL.
// The program reconciles Machines and MachineSets of namespace
// openshift-machine-api, as on OpenShift.

// EnvMachineAPIBin names the environment variable with the path of the
// winsim-machine-api program (hack/test.sh sets it); without it
// hack/tools/build-machine-api.sh builds it (once, then from its cache).
const EnvMachineAPIBin = "WINNODE_MACHINE_API_BIN"

// MachineAPINamespace is the namespace of OpenShift's Machine API: its
// Machines, MachineSets and the user-data Secret they name.
const MachineAPINamespace = "openshift-machine-api"

// The winsim provider's providerSpec (hack/tools/openshift/machineapi
// providerspec.go).
const (
	WinsimProviderAPIVersion = "machine.winsim.winnode.io/v1"
	WinsimProviderSpecKind   = "WinsimMachineProviderSpec"
)

// WinsimProviderSpec is a Machine's spec.providerSpec.value for the winsim
// provider: the instance boots with key userData of Secret userDataSecret
// in the Machine's namespace.
func WinsimProviderSpec(userDataSecret string) *runtime.RawExtension {
	data, _ := json.Marshal(map[string]any{
		"apiVersion":     WinsimProviderAPIVersion,
		"kind":           WinsimProviderSpecKind,
		"userDataSecret": map[string]string{"name": userDataSecret},
	})
	return &runtime.RawExtension{Raw: data}
}

// WinsimMachineSet is a MachineSet of winsim Machines in MachineAPINamespace,
// its Machines labelled with the template labels given (and the selector
// matching them). It carries the cluster ID label
// machine.openshift.io/cluster-api-cluster, the Infrastructure's name: on
// OpenShift MAO's defaulting webhook adds it, which the test world does not
// run, and the Machine controller refuses a Machine without it.
func WinsimMachineSet(name, userDataSecret string, replicas int32, labels map[string]string) *machinev1beta1.MachineSet {
	all := map[string]string{
		machinev1beta1.MachineClusterIDLabel:          InfrastructureName,
		"machine.openshift.io/cluster-api-machineset": name,
	}
	for k, v := range labels {
		all[k] = v
	}
	return &machinev1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: MachineAPINamespace,
			Labels: map[string]string{machinev1beta1.MachineClusterIDLabel: InfrastructureName}},
		Spec: machinev1beta1.MachineSetSpec{
			Replicas: &replicas,
			Selector: metav1.LabelSelector{MatchLabels: all},
			Template: machinev1beta1.MachineTemplateSpec{
				ObjectMeta: machinev1beta1.ObjectMeta{Labels: all},
				Spec: machinev1beta1.MachineSpec{
					ProviderSpec: machinev1beta1.ProviderSpec{Value: WinsimProviderSpec(userDataSecret)},
				},
			},
		},
	}
}

// machineAPI is the winsim-machine-api program.
var machineAPI = &toolProgram{env: EnvMachineAPIBin, script: "hack/tools/build-machine-api.sh", what: "the Machine API's controllers"}

// machineAPIControllers are the controllers the program runs, by the names
// controller-runtime logs them under when their workers start.
var machineAPIControllers = []string{"machineset_controller", "nodelink-controller", "machine-controller", "machine-drain-controller"}

// startMachineAPI creates namespace openshift-machine-api and starts the
// Machine API's controllers on it, with the admin kubeconfig, and waits
// until each controller's workers run (its caches synced).
func (e *Env) startMachineAPI(ctx context.Context, opts Options) error {
	if !opts.OpenShift || e.OpenShift == nil {
		return errors.New("Options.MachineAPICloudURL needs Options.OpenShift: the Machine API's CRDs are the openshift flavor's")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: MachineAPINamespace}}
	if err := createOrGet(ctx, e.OpenShift.client, ns); err != nil {
		return err
	}
	return e.startToolProgram(ctx, machineAPI, "machine-api", machineAPIControllers,
		"--kubeconfig="+e.KubeconfigPath,
		"--cloud-url="+opts.MachineAPICloudURL,
		"--namespace="+MachineAPINamespace)
}
