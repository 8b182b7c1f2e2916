package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Finalizer is set on every WindowsInstance; the instance reconciler removes it
// only after the host has been deconfigured (or found unreachable and left
// alone with an event), so deleting an instance always deconfigures its host.
const Finalizer = "winnode.io/deconfigure"

// Labels and annotations carried by WindowsInstances and their Nodes.
const (
	// LabelSourceKind names the kind of source that created the instance
	// (one of the SourceKind values).
	LabelSourceKind = "winnode.io/source-kind"
	// LabelSourceName names the source object (e.g. the ConfigMap's name),
	// as LabelValue writes it: a name longer than a label value may be is
	// hashed, and spec.source keeps it whole.
	LabelSourceName = "winnode.io/source-name"
	// LabelSourceNamespace names the source object's namespace (empty for manual).
	LabelSourceNamespace = "winnode.io/source-namespace"
	// LabelInstance is put on objects that belong to one instance (e.g. the
	// instance's bootstrap token Secret); its value is the instance's name,
	// as LabelValue writes it.
	LabelInstance = "winnode.io/instance"

	// AnnotationVersion on a Node is the winnode version that configured it.
	AnnotationVersion = "winnode.io/version"
	// AnnotationHostKey on a Node shows the host key winnode pinned
	// (authorized_keys form). It is informational only: the node's kubelet
	// can rewrite its own Node's annotations, so winnode never trusts a key
	// read from here (the operator pins in the instance's status).
	AnnotationHostKey = "winnode.io/host-key"
	// AnnotationKeyFingerprint on the windows-user-data Secret (and, written by
	// the instance reconciler, on the instance) is the SHA256 fingerprint of the
	// operator's current SSH public key; a difference means a key rotation.
	AnnotationKeyFingerprint = "winnode.io/key-fingerprint"
	// AnnotationSkipPreflight on a WindowsInstance names pre-flight checks
	// to skip for it, comma-separated ("clock,dns"; docs/troubleshooting.md
	// lists them). An unknown name is a Warning event.
	AnnotationSkipPreflight = "winnode.io/skip-preflight"
)

// SourceKind says what created a WindowsInstance.
// +kubebuilder:validation:Enum=ConfigMap;Machine;Manual
type SourceKind string

const (
	// SourceConfigMap: an entry of the windows-instances ConfigMap.
	SourceConfigMap SourceKind = "ConfigMap"
	// SourceMachine: an OpenShift Machine API or Cluster API Machine.
	SourceMachine SourceKind = "Machine"
	// SourceManual: created by hand (kubectl apply, winnodectl).
	SourceManual SourceKind = "Manual"
)

// SourceRef names the object a WindowsInstance came from.
type SourceRef struct {
	// Kind of the source: ConfigMap, Machine or Manual.
	// +kubebuilder:default=Manual
	Kind SourceKind `json:"kind,omitempty"`
	// Namespace of the source object; empty for Manual.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the source object (ConfigMap or Machine name); empty for Manual.
	// +optional
	Name string `json:"name,omitempty"`
	// Key is the entry inside the source that produced this instance, as
	// written there (for a ConfigMap: the data key, i.e. the address).
	// +optional
	Key string `json:"key,omitempty"`
}

// ClusterRef names a Cluster API Cluster (cluster.x-k8s.io) in the
// management cluster the operator runs in.
type ClusterRef struct {
	// Namespace of the Cluster: its Machines' namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// Name of the Cluster (a Machine's spec.clusterName).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
}

// IsZero reports whether the reference names no Cluster.
func (r ClusterRef) IsZero() bool { return r.Namespace == "" && r.Name == "" }

// String is namespace/name.
func (r ClusterRef) String() string { return r.Namespace + "/" + r.Name }

// WindowsInstanceSpec is what the administrator (or a source) asks for: a
// Windows host reachable over SSH that should become a worker node.
//
// +kubebuilder:validation:XValidation:rule="has(self.cluster) == has(oldSelf.cluster) && (!has(self.cluster) || self.cluster == oldSelf.cluster)",message="spec.cluster cannot change: the host joined that cluster; delete the instance (which deconfigures it) and create it again"
type WindowsInstanceSpec struct {
	// Address is the host's IPv4 address or DNS name, as used for SSH.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Address string `json:"address"`
	// Username is the Windows administrator account the operator logs in as:
	// letters, digits and . _ - @ (for user@domain), not starting with . - or @.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=104
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_][A-Za-z0-9._@-]*$`
	Username string `json:"username"`
	// Port is the SSH port of the host.
	// +kubebuilder:default=22
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
	// Source names what created this instance; sources delete only their own.
	// +optional
	Source SourceRef `json:"source,omitempty"`
	// HostKeyFingerprint, when set, is the SHA256 fingerprint
	// ("SHA256:" and 43 base64 characters, as ssh-keygen -lf prints it) of
	// the SSH host key the host must present, checked from the first
	// connection on: the key is pinned before first contact instead of
	// trusted on first use. To accept a changed host key, set the new
	// fingerprint here.
	// +kubebuilder:validation:Pattern=`^SHA256:[A-Za-z0-9+/]{43}$`
	// +optional
	HostKeyFingerprint string `json:"hostKeyFingerprint,omitempty"`
	// ProviderID, when set, is what the host's kubelet registers as its
	// Node's spec.providerID: the cloud's ID of the machine, as a Machine's
	// spec.providerID carries it ("aws:///us-east-1a/i-0123...", say), so
	// that the Machine API links the Node to its Machine. The Machine
	// source sets it; a Node's providerID cannot change once registered.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9+.-]*://[!-~]*$`
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// Cluster, when set, is the Cluster API Cluster whose workload cluster
	// the host joins, reached through the Cluster's <name>-kubeconfig
	// Secret (docs/cluster-api.md); the Cluster API Machine source sets it
	// to its Machine's Cluster. Empty: the cluster the operator runs in.
	// It cannot change.
	// +optional
	Cluster ClusterRef `json:"cluster,omitempty,omitzero"`
	// NodeName, when set, is the node name the host must have: the
	// computer name winnode assigned it (the Cluster API source sets it
	// from its WinnodeConfig), lower-cased. It is the instance's node name
	// from the start; a host that reports another hostname gets
	// NodeNameChanged and no credential.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ContainerRuntime says who runs the host's container runtime:
	// Managed, winnode installs containerd (with its configuration, the
	// cluster's registries, proxy and CAs, and the Windows Containers
	// feature), upgrades it with winnode and removes it with the node;
	// Existing, the host runs a containerd winnode did not install, which
	// winnode relies on and never touches. Empty: the operator sets its
	// default (--container-runtime) on a new instance, and Existing on one
	// it configured before this field existed.
	// +kubebuilder:validation:Enum=Managed;Existing
	// +optional
	ContainerRuntime ContainerRuntime `json:"containerRuntime,omitempty"`
}

// ContainerRuntime says who runs a host's container runtime.
type ContainerRuntime string

const (
	// ContainerRuntimeManaged: winnode installs and manages containerd.
	ContainerRuntimeManaged ContainerRuntime = "Managed"
	// ContainerRuntimeExisting: the host's own containerd, left alone.
	ContainerRuntimeExisting ContainerRuntime = "Existing"
)

// Phase is where a WindowsInstance is in its life.
// +kubebuilder:validation:Enum=Pending;Configuring;Ready;Upgrading;Deconfiguring;Failed
type Phase string

const (
	// PhasePending: known, not yet being configured.
	PhasePending Phase = "Pending"
	// PhaseConfiguring: the reconciler is configuring the host (see Status.Step).
	PhaseConfiguring Phase = "Configuring"
	// PhaseReady: the host is a Ready node at the operator's version.
	PhaseReady Phase = "Ready"
	// PhaseUpgrading: a Ready host is being moved to a new version or key.
	PhaseUpgrading Phase = "Upgrading"
	// PhaseDeconfiguring: the instance is being deleted; the host is being cleaned.
	PhaseDeconfiguring Phase = "Deconfiguring"
	// PhaseFailed: the last attempt failed (see Status.LastError and the
	// conditions); the reconciler retries with backoff.
	PhaseFailed Phase = "Failed"
)

// Condition types of a WindowsInstance.
const (
	// ConditionReachable: the host answered over SSH with the pinned host key
	// and the operator's private key was accepted.
	ConditionReachable = "Reachable"
	// ConditionConfigured: the payload is synced and the agent applied the plan.
	ConditionConfigured = "Configured"
	// ConditionNodeReady: the host's Node exists and is Ready.
	ConditionNodeReady = "NodeReady"
	// ConditionHostKeyMismatch: the host presented a key different from the
	// pinned one; nothing is done until an administrator clears
	// Status.HostKey (e.g. `kubectl edit --subresource=status`) or deletes the
	// instance. Present (True) only when it applies.
	ConditionHostKeyMismatch = "HostKeyMismatch"
	// ConditionNodeNameConflict: the name the host reports is the name of a
	// Node this instance did not register, or the node name of another
	// instance; winnode leaves that Node untouched and does nothing more
	// with the host until the conflict is gone. Present (True) only when it
	// applies.
	ConditionNodeNameConflict = "NodeNameConflict"
	// ConditionWorkloadClusterReachable: for an instance with spec.cluster,
	// whether the operator can act in that workload cluster; False names
	// the cause (internal/workload's reasons) and nothing is done with the
	// host, no credential issued, until it is True again. Absent for
	// instances of the operator's own cluster.
	ConditionWorkloadClusterReachable = "WorkloadClusterReachable"
	// ConditionNetworkUnsupported: the pod network mode chosen (--network,
	// or what auto found) cannot be set up on this host: the message names
	// what is missing (flannel's ConfigMap, a VXLAN setting Windows needs, a
	// program the payload lacks). Nothing is installed until it is fixed.
	// Present (True) only when it applies.
	ConditionNetworkUnsupported = "NetworkUnsupported"
	// ConditionNodeNameChanged: the host reports a hostname other than the
	// node name fixed before its first credential (status.nodeName): it
	// gets no new credential and no certificate for the new name. Present
	// (True) only when it applies.
	ConditionNodeNameChanged = "NodeNameChanged"
	// ConditionHostKeyConflict: the host presented the SSH host key that
	// another instance pinned (a second instance of the same host, or a VM
	// cloned with its keys): nothing is run on it. Present (True) only
	// when it applies.
	ConditionHostKeyConflict = "HostKeyConflict"
	// ConditionAddressConflict: spec.address, once resolved, is the address
	// and port of another instance's host: nothing is connected to. Present
	// (True) only when it applies.
	ConditionAddressConflict = "AddressConflict"
	// ConditionContainerRuntimeConflict: under containerRuntime Managed,
	// the host already runs a containerd winnode did not install (its
	// service is not winnode's); winnode installs nothing until it is
	// removed or the instance says Existing. Present (True) only when it
	// applies.
	ConditionContainerRuntimeConflict = "ContainerRuntimeConflict"
	// ConditionRebootRequired: winnode enabled a Windows feature the host
	// needs (Containers) and restarted the host to finish it; the
	// configuration goes on once the host is back. Present (True) only
	// while it applies.
	ConditionRebootRequired = "RebootRequired"
	// ConditionPreflight: the pre-flight checks of the host's last info
	// (status.preflight). False, with the first failing check as reason,
	// stops configuration before anything of the payload is sent; True
	// with reason PreflightPassed or PreflightWarnings otherwise. Its
	// message names the skipped checks.
	ConditionPreflight = "Preflight"
)

// Reasons of a True Preflight condition (a False one's is the failing
// check's, as internal/preflight.Reason names it).
const (
	ReasonPreflightPassed   = "PreflightPassed"
	ReasonPreflightWarnings = "PreflightWarnings"
)

// PreflightResult is one pre-flight check's result.
type PreflightResult struct {
	// Check is the check's name ("clock", "dns", "api-server", ...).
	// +kubebuilder:validation:MaxLength=32
	Check string `json:"check"`
	// Result is pass, warn or fail.
	// +kubebuilder:validation:Enum=pass;warn;fail
	Result string `json:"result"`
	// Message says what was found and, unless it passed, the fix.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// Condition reasons of a WindowsInstance (CamelCase, as metav1.Condition requires).
const (
	ReasonConnected          = "Connected"
	ReasonUnreachable        = "Unreachable"
	ReasonAuthFailed         = "AuthenticationFailed"
	ReasonNoPrivateKey       = "NoPrivateKey"
	ReasonInvalidPrivateKey  = "InvalidPrivateKey"
	ReasonHostKeyChanged     = "HostKeyChanged"
	ReasonHostKeyPinned      = "HostKeyPinned"
	ReasonNoContainerRuntime = "NoContainerRuntime"
	ReasonPayloadSynced      = "PayloadSynced"
	ReasonPlanApplied        = "PlanApplied"
	ReasonApplyFailed        = "ApplyFailed"
	ReasonSyncFailed         = "SyncFailed"
	ReasonCredentialsFailed  = "CredentialsFailed"
	ReasonWaitingForNode     = "WaitingForNode"
	ReasonNodeReady          = "NodeReady"
	ReasonNodeNotReady       = "NodeNotReady"
	ReasonDeconfiguring      = "Deconfiguring"
	ReasonInProgress         = "InProgress"
	// ReasonUpgradeWaiting: a new plan restarts services of this Ready node,
	// and as many nodes as the operator's --max-unavailable allows are out of
	// service already; the node stays as it is until its turn.
	ReasonUpgradeWaiting = "UpgradeWaiting"
	// ReasonDrainTimedOut: pods were still on the Node when the drain
	// timeout passed; the operator went on without them gone.
	ReasonDrainTimedOut = "DrainTimedOut"
	// ReasonNodeNameConflict: see ConditionNodeNameConflict.
	ReasonNodeNameConflict = "NodeNameConflict"
	// ReasonAddressNotAllowed: spec.address (or what it resolves to) is a
	// loopback, link-local or Service-range address, or a cluster DNS name,
	// outside the operator's --allow-addresses; winnode does not connect.
	ReasonAddressNotAllowed = "AddressNotAllowed"
	// ReasonNetworkUnsupported: see ConditionNetworkUnsupported.
	ReasonNetworkUnsupported = "NetworkUnsupported"
	// ReasonNodeNameChanged: see ConditionNodeNameChanged.
	ReasonNodeNameChanged = "NodeNameChanged"
	// ReasonNodeNameNotAllowed: the host's name cannot be a node name here:
	// not a DNS label, or a name of the API server's serving certificate.
	ReasonNodeNameNotAllowed = "NodeNameNotAllowed"
	// ReasonHostKeyConflict: see ConditionHostKeyConflict.
	ReasonHostKeyConflict = "HostKeyConflict"
	// ReasonAddressConflict: see ConditionAddressConflict.
	ReasonAddressConflict = "AddressConflict"
	// ReasonSlowHost: a transfer to or from the host went slower than the
	// operator's minimum rate for longer than its grace period; the step
	// failed and the host is retried with backoff.
	ReasonSlowHost = "SlowHost"
	// ReasonAnswerTooLarge: the host answered with more than the operator
	// reads (--max-host-answer).
	ReasonAnswerTooLarge = "AnswerTooLarge"
	// ReasonKeyRefused: the host refuses the operator's SSH key that it
	// accepted before (status.keyFingerprint): not a key rotation.
	ReasonKeyRefused = "KeyRefused"
	// ReasonContainerRuntimeConflict: see ConditionContainerRuntimeConflict.
	ReasonContainerRuntimeConflict = "ContainerRuntimeConflict"
	// ReasonRebooting: the host restarts to finish enabling a Windows
	// feature (ConditionRebootRequired).
	ReasonRebooting = "Rebooting"
	// ReasonRolledBack: the new container runtime did not start on the
	// host; the agent put the previous one back and it runs again.
	ReasonRolledBack = "RolledBack"
)

// Limits of what a host reports, as its status keeps it: what Windows and
// DNS allow (docs/trust.md).
const (
	// MaxHostnameLength: a host name is one DNS label (RFC 1123).
	MaxHostnameLength = 63
	// MaxFQDNLength: a DNS name (RFC 1123).
	MaxFQDNLength = 253
	// MaxAddresses bounds the IPv4 addresses a host's status lists.
	MaxAddresses = 32
)

// ClientCertificate is the CSR approver's record of the client certificate
// it approved for this instance's join credential: the proof that the Node
// of that name is this host's, when no Node of the name existed then.
type ClientCertificate struct {
	// CSRName and CSRUID name the CertificateSigningRequest approved.
	CSRName string `json:"csrName"`
	CSRUID  string `json:"csrUID"`
	// NodeName is the node the certificate is for (CN system:node:<name>).
	NodeName string `json:"nodeName"`
	// NodeExisted says whether a Node of that name existed when the CSR
	// was approved (then only the Node of status.nodeUID was there).
	NodeExisted bool `json:"nodeExisted"`
	// ApprovedAt is when the approver decided.
	ApprovedAt metav1.Time `json:"approvedAt"`
}

// WindowsInstanceStatus is what the operator observed and did.
type WindowsInstanceStatus struct {
	// Phase is a one-word summary: Pending, Configuring, Ready, Upgrading,
	// Deconfiguring or Failed.
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// Step is the current step of configuration or deconfiguration, for
	// progress displays (e.g. "connect", "info", "credentials", "sync",
	// "apply", "join", "finish", "drain", "remove").
	// +optional
	Step string `json:"step,omitempty"`
	// Conditions: Reachable, Configured, NodeReady, Preflight and, when
	// they apply, HostKeyMismatch, NodeNameConflict, NetworkUnsupported,
	// ContainerRuntimeConflict and RebootRequired.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// NodeName is the name the host's kubelet registers (its hostname,
	// lower-cased, or spec.nodeName). It is fixed once, before the first
	// join credential is issued (NodeNameFixedAt), and the CSR approver
	// approves certificates only for this name.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// NodeNameFixedAt is when NodeName was fixed: just before the first
	// join credential was issued. From then on a host that reports another
	// hostname gets NodeNameChanged.
	// +optional
	NodeNameFixedAt *metav1.Time `json:"nodeNameFixedAt,omitempty"`
	// ClientCertificate is the CSR approver's record of the kubelet client
	// certificate it approved for this instance (docs/trust.md, adoption
	// by proof).
	// +optional
	ClientCertificate *ClientCertificate `json:"clientCertificate,omitempty"`
	// Version is the winnode version the host is configured with.
	// +optional
	Version string `json:"version,omitempty"`
	// HostKey is the pinned SSH host key in authorized_keys form
	// ("ssh-ed25519 AAAA..."), trusted on first use. Clear it to accept a
	// changed host key.
	// +optional
	HostKey string `json:"hostKey,omitempty"`
	// HostKeyFingerprint is the SHA256 fingerprint of HostKey ("SHA256:...").
	// +optional
	HostKeyFingerprint string `json:"hostKeyFingerprint,omitempty"`
	// OSBuild is the Windows build the host reported (e.g. "10.0.20348").
	// +kubebuilder:validation:MaxLength=32
	// +optional
	OSBuild string `json:"osBuild,omitempty"`
	// Hostname is the host's name as reported by the agent: one DNS label.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$`
	// +optional
	Hostname string `json:"hostname,omitempty"`
	// Addresses are the host's IPv4 addresses as reported by the agent; the
	// CSR approver accepts them as IP SANs of the kubelet serving
	// certificate only inside --node-address-cidrs.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=15
	// +optional
	Addresses []string `json:"addresses,omitempty"`
	// FQDN is the host's fully qualified name as reported by the agent.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	FQDN string `json:"fqdn,omitempty"`
	// KeyFingerprint is the SHA256 fingerprint of the operator's SSH key the
	// host was last configured to accept; it differs from the windows-user-data
	// Secret's winnode.io/key-fingerprint annotation after a key rotation.
	// +optional
	KeyFingerprint string `json:"keyFingerprint,omitempty"`
	// RefusedKeyFingerprint is the SHA256 fingerprint of the operator's SSH
	// key that the host refused at the last connection; empty once a
	// connection succeeds. A Machine is replaced for a key rotation only
	// when it differs from KeyFingerprint.
	// +optional
	RefusedKeyFingerprint string `json:"refusedKeyFingerprint,omitempty"`
	// LastError is the last error, with what to do about it; empty when healthy.
	// +optional
	LastError string `json:"lastError,omitempty"`
	// Preflight is the results of the pre-flight checks at the host's last
	// info (condition Preflight), skipped checks left out.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	Preflight []PreflightResult `json:"preflight,omitempty"`
	// BootstrapTokenID is the ID (never the secret) of the bootstrap token
	// issued for this host's kubelet; the CSR approver accepts client CSRs only
	// from system:bootstrap:<this ID>. Cleared once the token is revoked.
	// +optional
	BootstrapTokenID string `json:"bootstrapTokenID,omitempty"`
	// JoinServiceAccount is the ServiceAccount (in the operator's namespace)
	// whose short-lived token this host's kubelet joins with, where bootstrap
	// tokens do not authenticate; the CSR approver accepts client CSRs only
	// from system:serviceaccount:<namespace>:<this name>. Cleared once the
	// ServiceAccount is deleted (which revokes its tokens).
	// +optional
	JoinServiceAccount string `json:"joinServiceAccount,omitempty"`
	// JoinCredentialExpires is when the join credential issued now (bootstrap
	// token or join ServiceAccount token) expires. An instance still not
	// Ready then gets a new one at its next attempt, the old one revoked.
	// +optional
	JoinCredentialExpires *metav1.Time `json:"joinCredentialExpires,omitempty"`
	// JoinKubeconfigSHA256 is the sha256 of the bootstrap kubeconfig that
	// holds that credential (never the credential): a configuration resumed
	// while it is valid keeps the kubeconfig the host has.
	// +optional
	JoinKubeconfigSHA256 string `json:"joinKubeconfigSHA256,omitempty"`
	// HostConfigured records that the operator began installing winnode's
	// plan on this host (step sync): only then does deconfiguring run
	// anything on it. An instance refused for a node name, host key or
	// address conflict never touched the host it names.
	// +optional
	HostConfigured bool `json:"hostConfigured,omitempty"`
	// AgentSecured records that the agent in C:\k was put there by its
	// first run from the SSH user's profile folder, after it secured
	// winnode's folders: only then does the operator run the agent from
	// C:\k, which a local user of the host may otherwise have created and
	// filled. Written by the operator alone (docs/trust.md).
	// +optional
	AgentSecured bool `json:"agentSecured,omitempty"`
	// NodeUID is the UID of the Node this instance's host registered. Only
	// that Node is labelled, cordoned, drained or deleted for this instance;
	// a Node of the same name with another UID is not this host's.
	// +optional
	NodeUID string `json:"nodeUID,omitempty"`
	// ConfigurationStarted is when the current configuration attempt began.
	// +optional
	ConfigurationStarted *metav1.Time `json:"configurationStarted,omitempty"`
	// JoinedAt is when the host's Node first became Ready.
	// +optional
	JoinedAt *metav1.Time `json:"joinedAt,omitempty"`
	// Network is the pod network mode of the host's plan: flannel,
	// ovn-hybrid or external (docs/networking.md).
	// +optional
	Network string `json:"network,omitempty"`
	// PodCIDR is the node's pod subnet the host's network configuration
	// was rendered with; empty until the Node has one.
	// +optional
	PodCIDR string `json:"podCIDR,omitempty"`
}

// WindowsInstance is one Windows host that the operator turns into a worker
// node, and removes from the cluster when the instance is deleted.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=wi;winst,categories=winnode
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.address`
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.nodeName`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.status.step`,priority=1
// +kubebuilder:printcolumn:name="Error",type=string,JSONPath=`.status.lastError`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WindowsInstance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec: which host, how to reach it, where it came from.
	Spec WindowsInstanceSpec `json:"spec"`
	// Status: what the operator observed and did.
	// +optional
	Status WindowsInstanceStatus `json:"status,omitempty"`
}

// WindowsInstanceList is a list of WindowsInstances.
//
// +kubebuilder:object:root=true
type WindowsInstanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WindowsInstance `json:"items"`
}

// SSHPort returns the spec's port, or 22 when unset (objects created before
// defaulting, or built in Go without going through the API server).
func (w *WindowsInstance) SSHPort() int32 {
	if w.Spec.Port == 0 {
		return 22
	}
	return w.Spec.Port
}

// LabelValue is a name as a label value: the name itself when it fits (at
// most 63 characters, as label values must be), else its first 52
// characters and 10 hex digits of its SHA-256, "<prefix>-<hash>". Object
// names may be 253 characters long; two names that differ give different
// values. Labels made with it only select: what an object belongs to is
// read from where the full name is kept (a WindowsInstance's spec.source,
// an instance's name in a status), never from a label.
func LabelValue(name string) string {
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	prefix := strings.TrimRight(name[:52], "-_.")
	return prefix + "-" + hex.EncodeToString(sum[:])[:10]
}
