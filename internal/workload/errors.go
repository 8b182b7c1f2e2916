package workload

import (
	"fmt"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// Why a workload cluster cannot be used: the reasons of the
// WorkloadClusterReachable condition of WinnodeConfigs and WindowsInstances.
const (
	// ReasonReachable: the operator acts in the workload cluster as its
	// ServiceAccount there.
	ReasonReachable = "Reachable"
	// ReasonClusterNotFound: the Machine's Cluster does not exist.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonKubeconfigSecretNotFound: the Cluster's <name>-kubeconfig
	// Secret does not exist (yet: the control-plane provider writes it once
	// the control plane is up).
	ReasonKubeconfigSecretNotFound = "KubeconfigSecretNotFound"
	// ReasonKubeconfigForbidden: the operator may not read the Secret: the
	// ClusterRole winnode-workload-kubeconfigs is not bound to it in the
	// Cluster's namespace (docs/install.md).
	ReasonKubeconfigForbidden = "KubeconfigForbidden"
	// ReasonKubeconfigInvalid: the Secret holds no usable kubeconfig under
	// key "value", or one that winnode refuses to use (a program to run, a
	// file to read).
	ReasonKubeconfigInvalid = "KubeconfigInvalid"
	// ReasonAccessNotInstalled: the API server answered, but winnode's
	// namespace, ServiceAccount or RBAC could not be installed with the
	// kubeconfig, or its ServiceAccount's token was refused.
	ReasonAccessNotInstalled = "AccessNotInstalled"
	// ReasonUnreachable: the kubeconfig's API server did not answer.
	ReasonUnreachable = "WorkloadClusterUnreachable"
)

// Error says why the operator cannot act in a workload cluster: which
// Cluster, a Reason above, and the cause with what to do.
type Error struct {
	Cluster winnodev1.ClusterRef
	Reason  string
	Err     error
}

func (e *Error) Error() string {
	return fmt.Sprintf("workload cluster of Cluster %s: %v", e.Cluster, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

func fail(ref winnodev1.ClusterRef, reason string, format string, args ...any) *Error {
	return &Error{Cluster: ref, Reason: reason, Err: fmt.Errorf(format, args...)}
}
