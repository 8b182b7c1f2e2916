package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Conditions of a WinnodeConfig (status.conditions). Cluster API mirrors
// Ready into the Machine's BootstrapConfigReady condition.
const (
	// ConditionReady is True once the bootstrap-data Secret is written and
	// matches the spec; False says why not (one of the Reason values).
	ConditionReady = "Ready"
	// ConditionPaused is True while the Cluster (spec.paused) or the config
	// (annotation cluster.x-k8s.io/paused) pauses reconciliation.
	ConditionPaused = "Paused"
	// ConditionWorkloadClusterReachable is True while the operator can act
	// in the Machine's workload cluster: the Machine's Cluster exists, its
	// <cluster>-kubeconfig Secret holds a usable kubeconfig, winnode's
	// ServiceAccount and RBAC are installed there and its API server
	// answers. False names the cause in its reason (internal/workload's
	// Reason values: ClusterNotFound, KubeconfigSecretNotFound,
	// KubeconfigForbidden, KubeconfigInvalid, AccessNotInstalled,
	// WorkloadClusterUnreachable);
	// while it is False no join credential is made anywhere for the
	// Machine.
	ConditionWorkloadClusterReachable = "WorkloadClusterReachable"
	// ConditionNodeJoined (Pull mode) is True once the Machine has
	// Cluster API's status.nodeRef: its host joined the workload cluster by
	// itself. False while the operator waits for that (reason
	// WaitingForNode), and with reason NodeJoinTimedOut once it waited
	// longer than the operator's join timeout: the message names the
	// host's logs, where the reason is (the operator never reaches a Pull
	// host). Reason InstanceConflict: another Machine of the cluster
	// keeps an address the Machine reports; none of its host's CSRs is
	// approved while it does.
	ConditionNodeJoined = "NodeJoined"
)

// Reasons of the conditions above.
const (
	// ReasonDataSecretAvailable: the Secret is written (Ready True).
	ReasonDataSecretAvailable = "DataSecretAvailable"
	// ReasonInvalidSpec: a spec field breaks a rule; the message names the
	// field and the rule. Nothing is rendered until the spec is fixed.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonWaitingForMachine: no Machine (cluster.x-k8s.io) owns the config yet.
	ReasonWaitingForMachine = "WaitingForMachine"
	// ReasonWaitingForCluster: the Machine's Cluster does not exist (yet).
	ReasonWaitingForCluster = "WaitingForCluster"
	// ReasonWaitingForSSHKey: the operator's private key Secret
	// (cloud-private-key in its namespace) is missing or unusable.
	ReasonWaitingForSSHKey = "WaitingForSSHKey"
	// ReasonComputerNameConflict: no free computer name was found (see
	// WinnodeConfigStatus.ComputerName).
	ReasonComputerNameConflict = "ComputerNameConflict"
	// ReasonDataSecretNotWritten: the API server refused the Secret (e.g. a
	// Secret of that name that another controller owns).
	ReasonDataSecretNotWritten = "DataSecretNotWritten"
	// ReasonWaitingForWorkloadCluster: the operator cannot act in the
	// Machine's workload cluster yet (condition WorkloadClusterReachable
	// says why); the bootstrap data is written once it can.
	ReasonWaitingForWorkloadCluster = "WaitingForWorkloadCluster"
	// ReasonBootstrapTokenAuthUnavailable: Pull mode needs bootstrap-token
	// authentication in the workload cluster (kube-apiserver
	// --enable-bootstrap-token-auth, which clusters Cluster API creates
	// with kubeadm have), and a bootstrap token winnode issued there does
	// not authenticate. No data is written; use spec.mode Push there.
	ReasonBootstrapTokenAuthUnavailable = "BootstrapTokenAuthUnavailable"
	// ReasonClusterFactsUnavailable: what a Pull host needs to know of its
	// workload cluster (its CA, its pod network) could not be read there;
	// the message says what. No data is written until it can.
	ReasonClusterFactsUnavailable = "ClusterFactsUnavailable"
	// ReasonWaitingForNode, ReasonNodeJoinTimedOut and ReasonNodeJoined
	// are the reasons of ConditionNodeJoined.
	ReasonWaitingForNode   = "WaitingForNode"
	ReasonNodeJoinTimedOut = "NodeJoinTimedOut"
	ReasonNodeJoined       = "NodeJoined"
	// ReasonInstanceConflict: another Machine of the workload cluster keeps
	// an address the Machine reports (NodeJoined False), as a Push
	// Machine's event InstanceConflict says for its instance.
	ReasonInstanceConflict = "InstanceConflict"
	// ReasonPaused / ReasonNotPaused: the Paused condition's reasons.
	ReasonPaused    = "Paused"
	ReasonNotPaused = "NotPaused"
)

// DataSecretFormat is the `format` key of the bootstrap-data Secret beside
// `value`: "cloud-config", the value Cluster API's kubeadm bootstrap provider
// writes for user data that cloud-init or cloudbase-init consumes.
// Infrastructure providers branch on it only to treat "ignition" specially;
// anything else is handed to the machine as user data, unchanged. The data
// itself is a cloudbase-init "#ps1_sysnative" PowerShell script, which
// cloudbase-init recognises by its first line.
const DataSecretFormat = "cloud-config"

// Mode is how a Machine's Windows host becomes a node of its workload
// cluster.
type Mode string

const (
	// ModePull is Cluster API's way: the bootstrap data alone makes the host
	// a node, and the operator needs no network path to it.
	ModePull Mode = "Pull"
	// ModePush: the bootstrap data prepares the host for SSH, and the
	// operator configures it over SSH as any other winnode host, joining
	// it to the Machine's workload cluster; winnode's in-place payload
	// upgrades apply. It needs a network path from the operator to the
	// host's SSH port.
	ModePush Mode = "Push"
)

// Protocol of a firewall port.
type Protocol string

// The protocols Windows Firewall rules are made for.
const (
	ProtocolTCP Protocol = "TCP"
	ProtocolUDP Protocol = "UDP"
)

// FirewallPort is an inbound port the bootstrap data opens in Windows
// Firewall, besides TCP 22 (SSH, the operator) and TCP 10250 (the kubelet),
// which are always opened.
type FirewallPort struct {
	// Port number, 1-65535.
	Port int32 `json:"port"`
	// Protocol: TCP (default) or UDP.
	// +optional
	Protocol Protocol `json:"protocol,omitempty"`
}

// WinnodeConfigSpec is what the bootstrap data of one Machine contains
// beyond what every winnode host gets (OpenSSH with the operator's key).
//
// The API server stores any value of these fields (within the size bounds);
// the controller checks them (internal/capibootstrap ValidateSpec) and
// reports a broken rule on the Ready condition (reason InvalidSpec) and as a
// Warning event, so the rules live in one place and apply as well to
// objects stored before a rule existed.
type WinnodeConfigSpec struct {
	// Mode is how the Machine's host becomes a node of its workload
	// cluster: Pull (the bootstrap data alone joins it) or Push (the
	// operator configures it over SSH, where the management cluster
	// reaches the host). Default Pull, Cluster API's way. The mode of a
	// Machine whose data is written is the mode of that data (Push data
	// authorizes the operator's key: status.keyFingerprint), whatever this
	// field says later: the API server defaults the field of an object
	// stored before it existed on every read.
	// +optional
	// +kubebuilder:default=Pull
	// +kubebuilder:validation:MaxLength=16
	Mode Mode `json:"mode,omitempty"`

	// ComputerNamePrefix replaces the Machine's name as the readable part of
	// the Windows computer name: 1 to 8 letters, digits or hyphens, not
	// starting or ending with a hyphen. The computer name is the prefix, a
	// hyphen and six characters of a hash of the Machine's namespace and
	// name (15 characters at most, NetBIOS's limit). Empty: the first
	// characters of the Machine's name.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	ComputerNamePrefix string `json:"computerNamePrefix,omitempty"`

	// FirewallPorts are opened for inbound traffic in Windows Firewall, in
	// addition to TCP 22 and 10250 (e.g. UDP 4789 for a VXLAN overlay).
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	FirewallPorts []FirewallPort `json:"firewallPorts,omitempty"`
}

// WinnodeConfigInitializationStatus reports the config's initialization, as
// the Cluster API contract (v1beta2) defines it.
// +kubebuilder:validation:MinProperties=1
type WinnodeConfigInitializationStatus struct {
	// DataSecretCreated is true once the bootstrap-data Secret named by
	// status.dataSecretName exists. Cluster API then copies the name into
	// the Machine's spec.bootstrap.dataSecretName.
	// +optional
	DataSecretCreated *bool `json:"dataSecretCreated,omitempty"`
}

// WinnodeConfigStatus is written by the operator only.
type WinnodeConfigStatus struct {
	// Initialization reports when the bootstrap-data Secret is created
	// (Cluster API contract).
	// +optional
	Initialization WinnodeConfigInitializationStatus `json:"initialization,omitempty,omitzero"`

	// DataSecretName names the bootstrap-data Secret, in the config's
	// namespace: the config's own name (Cluster API contract).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	DataSecretName string `json:"dataSecretName,omitempty"`

	// ComputerName is the NetBIOS-safe Windows computer name the bootstrap
	// data gives the host (at most 15 characters), unique among the
	// WinnodeConfigs of the cluster. Once set it is kept.
	// +optional
	// +kubebuilder:validation:MaxLength=15
	ComputerName string `json:"computerName,omitempty"`

	// KeyFingerprint is the SHA256 fingerprint of the operator's SSH public
	// key that the bootstrap data authorizes.
	// +optional
	KeyFingerprint string `json:"keyFingerprint,omitempty"`

	// ObservedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// BootstrapToken is the Pull-mode join credential the bootstrap data
	// carries: the public half of a bootstrap token in the workload
	// cluster's kube-system, and when it expires. The operator moves its
	// expiration on while the Machine has no nodeRef (as Cluster API's
	// kubeadm bootstrap provider does), approves the kubelet's first client
	// certificate requested with it for status.computerName's node only,
	// and deletes it once the Machine has a nodeRef (then this is unset).
	// +optional
	BootstrapToken *BootstrapTokenStatus `json:"bootstrapToken,omitempty"`

	// Conditions: Ready, Paused, WorkloadClusterReachable and, in Pull
	// mode, NodeJoined.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// BootstrapTokenStatus names a bootstrap token without its secret half.
type BootstrapTokenStatus struct {
	// ID is the token's public half ([a-z0-9]{6}): its Secret is
	// kube-system/bootstrap-token-<id> in the workload cluster, and its
	// kubelet authenticates as system:bootstrap:<id>.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]{6}$`
	ID string `json:"id"`
	// Expires is when the workload cluster stops accepting the token,
	// as the operator last set it.
	Expires metav1.Time `json:"expires"`
}

// WinnodeConfig is the bootstrap configuration of one Cluster API Machine
// that becomes a Windows node managed by winnode.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:path=winnodeconfigs,scope=Namespaced,categories=cluster-api
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.metadata.labels['cluster\.x-k8s\.io/cluster-name']`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Computer Name",type=string,JSONPath=`.status.computerName`
// +kubebuilder:printcolumn:name="Data Secret",type=string,JSONPath=`.status.dataSecretName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WinnodeConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec WinnodeConfigSpec `json:"spec,omitempty"`
	// +optional
	Status WinnodeConfigStatus `json:"status,omitempty"`
}

// WinnodeConfigList is a list of WinnodeConfigs.
//
// +kubebuilder:object:root=true
type WinnodeConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WinnodeConfig `json:"items"`
}
