// Package machineapi is the operator's OpenShift Machine API source: each
// Windows Machine (machine.openshift.io/v1beta1, label
// machine.openshift.io/os-id: Windows) in openshift-machine-api becomes one
// WindowsInstance once the Machine API has provisioned it, and the instance
// is deconfigured and deleted before the Machine's VM is terminated.
//
//   - setup.go: the source as an optional part of the operator (on only
//     where the cluster serves the Machine API; internal/controller/optional)
//     and its watches, of openshift-machine-api's Machines in the manager's
//     cache;
//   - machine.go: one Machine → its WindowsInstance (address from the
//     Machine's InternalIP, the kubelet's provider ID from its
//     spec.providerID);
//   - replace.go: after a key rotation, a Machine whose host refuses the
//     new key is deleted for its MachineSet to replace, one at a time;
//   - hook.go: the pre-terminate lifecycle hook that holds the Machine's
//     termination until its host is deconfigured;
//   - userdata.go: Secret windows-user-data kept in openshift-machine-api,
//     where MachineSets reference it.
//
// What a Machine's Node says never decides anything here: the address and
// provider ID come from the Machine, which the Machine API's controllers
// write, not the Windows host.
package machineapi
