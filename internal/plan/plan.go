// Package plan is the contract between the winnode operator and the agent on
// a Windows host: the JSON plan that says what the host must look like
// (directories, files by hash, Windows services, firewall ports, checks), and
// the JSON documents the agent answers with (Result, ErrorDocument, Info).
//
// The operator renders plans with these types (render*.go, a pure function of
// cluster and host facts); the agent decodes them with Decode, which
// validates everything it can without touching the host. A plan never
// contains secret content: files are named by path and sha256 only, and their
// bytes travel separately (see "Staging" below).
//
// # Staging
//
// Before running `winnode-agent apply`, the operator uploads every plan file
// whose hash differs from the host's installed manifest (Info.InstalledPlan)
// to the staging folder (StagingDir) as a blob named by the sha256 of the
// blob's own bytes (lower-case hex, no extension): a file staged as it is
// is `<StagingDir>\<SHA256>`; a file the plan gives an Encoding is staged
// encoded, `<StagingDir>\<EncodedSHA256>` (zstd, internal/blob), which is
// how payload files travel, compressed. The agent then, for each file:
// leaves a destination that already has the right hash alone; otherwise
// takes the blob `<SHA256>` if it is staged with that hash, or else decodes
// the blob `<EncodedSHA256>` into `<SHA256>`, checking the content it gives
// against SHA256 and Size; moves that blob into place (stopping the
// services that use the file first); otherwise fails naming the file. A
// staged blob whose bytes do not hash to its name, or an encoded one that
// does not decode to the file's content, is deleted, so that the next sync
// uploads it again. Consumed blobs are removed after a successful apply.
package plan

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SchemaVersion is the schema of the agent's results, info and state, and
// of plans whose files are all staged as they are. A change that old agents
// cannot read gets a new version.
const SchemaVersion = "winnode.io/v1"

// SchemaVersionEncoded is the schema of a plan with a file staged encoded
// (File.Encoding): SchemaVersion and the encoding fields. An agent that
// reads only SchemaVersion refuses such a plan by its version. Decode reads
// both.
const SchemaVersionEncoded = "winnode.io/v2"

// DefaultStagingDir is where the operator uploads file blobs when the plan
// names no StagingDir.
const DefaultStagingDir = `C:\k\.staging`

// ServiceDescription is the description of every service winnode installs;
// it tells a Windows administrator looking at services.msc who owns it.
const ServiceDescription = "Managed by winnode"

// Plan is what one Windows host must look like after `winnode-agent apply`.
type Plan struct {
	// SchemaVersion is SchemaVersion, or SchemaVersionEncoded when a file
	// has an Encoding.
	SchemaVersion string `json:"schemaVersion"`
	// Version names this plan's content (for example the operator version
	// and a hash of the plan); the agent records it and reports it in Info.
	Version string `json:"version"`
	// StagingDir is where the operator uploads file blobs named by the
	// sha256 of their bytes; empty means DefaultStagingDir.
	StagingDir string `json:"stagingDir,omitempty"`
	// Directories are created if missing (parents included).
	Directories []Directory `json:"directories,omitempty"`
	// Files are installed from staged blobs unless already in place.
	Files []File `json:"files,omitempty"`
	// HostServices are services the plan relies on but does not manage
	// (a containerd winnode did not install): they must exist; plan
	// services may depend on them.
	HostServices []string `json:"hostServices,omitempty"`
	// WindowsFeatures are Windows optional features the plan needs
	// (Containers, for containerd). Apply enables a missing one before it
	// touches any service; when Windows needs a restart to finish, apply
	// stops there with ErrRebootRequired, and the operator reboots the
	// host and applies again.
	WindowsFeatures []string `json:"windowsFeatures,omitempty"`
	// DefenderExclusions are programs Microsoft Defender Antivirus is told
	// not to scan the files of (process exclusions), only where Defender
	// runs. The agent records each exclusion it adds and removes exactly
	// those when a plan drops them or on remove.
	DefenderExclusions []string `json:"defenderExclusions,omitempty"`
	// RootCertificates are plan files of PEM certificates that go into the
	// machine's Trusted Root Certification Authorities store
	// (LocalMachine\Root): the cluster proxy's CA bundle. The agent records
	// each certificate it added (not one that was there already) and
	// removes exactly those when a plan drops them or on remove.
	RootCertificates []string `json:"rootCertificates,omitempty"`
	// Services are the Windows services the plan manages.
	Services []Service `json:"services,omitempty"`
	// FirewallPorts are opened for inbound traffic.
	FirewallPorts []FirewallPort `json:"firewallPorts,omitempty"`
	// Checks are verified after applying; a failed check fails the apply.
	Checks []Check `json:"checks,omitempty"`
	// Cluster names the cluster the plan joins the host to (a hash of its
	// API server address and CA). When it differs from the cluster of the
	// plan applied before, apply deletes ClusterCredentials before starting
	// any service, so that the kubelet joins the new cluster instead of
	// reusing the old cluster's certificate.
	Cluster string `json:"cluster,omitempty"`
	// ClusterCredentials are files and folders that services write once
	// the host has joined (the kubelet's kubeconfig and certificates): not
	// plan files, but only valid in Cluster.
	ClusterCredentials []string `json:"clusterCredentials,omitempty"`
}

// Directory is a folder the plan creates and, on remove, deletes.
type Directory struct {
	// Path is an absolute Windows path, `C:\k\logs`.
	Path string `json:"path"`
	// Logs marks a folder of logs: `remove` keeps it (and everything under
	// it) unless asked to purge logs, and `apply` never empties it.
	Logs bool `json:"logs,omitempty"`
}

// File is one file the plan installs, named by its content.
type File struct {
	// Path is the absolute Windows destination path, `C:\k\kubelet.exe`.
	Path string `json:"path"`
	// SHA256 is the lower-case hex sha256 of the content.
	SHA256 string `json:"sha256"`
	// Size is the content's length in bytes.
	Size int64 `json:"size"`
	// Encoding, when set (EncodingZstd), says the file is staged encoded:
	// the blob `<StagingDir>\<EncodedSHA256>`, of EncodedSize bytes, which
	// decodes to the content. Only in a plan of SchemaVersionEncoded.
	Encoding      string `json:"encoding,omitempty"`
	EncodedSHA256 string `json:"encodedSHA256,omitempty"`
	EncodedSize   int64  `json:"encodedSize,omitempty"`
}

// EncodingZstd is the zstd encoding of a staged blob (internal/blob).
const EncodingZstd = "zstd"

// StartType is when Windows starts a service.
type StartType string

const (
	StartAuto     StartType = "auto"
	StartManual   StartType = "manual"
	StartDisabled StartType = "disabled"
)

// Service is one Windows service the plan manages.
type Service struct {
	// Name is the service's key name (`kubelet`); compared
	// case-insensitively, as Windows does.
	Name        string `json:"name"`
	DisplayName string `json:"displayName,omitempty"`
	// Description is always ServiceDescription; Decode fills it in when
	// empty and rejects anything else.
	Description string `json:"description,omitempty"`
	// Binary is the executable's absolute Windows path; it must be one of
	// the plan's Files, so its hash is checked before every start.
	Binary string `json:"binary"`
	// Args are the arguments, one per entry, unquoted: the agent quotes them
	// by the rules of the Windows command line (see CommandLine).
	Args []string `json:"args,omitempty"`
	// Uses lists other plan files the service reads (its config file,
	// kubeconfig, CA): when one of them changes the service is restarted.
	Uses []string `json:"uses,omitempty"`
	// Dependencies are names of plan services or HostServices that Windows
	// starts before this one.
	Dependencies []string  `json:"dependencies,omitempty"`
	StartType    StartType `json:"startType"`
	// Recovery says what Windows does when the service fails.
	Recovery Recovery `json:"recovery,omitempty"`
	// Environment is the service's extra environment variables (the
	// Environment value of its registry key: the service control manager
	// reads it at every start).
	Environment map[string]string `json:"environment,omitempty"`
	// ReadyPipe, when set, is a named pipe the service's program serves
	// once it runs (containerd's ContainerdPipe). After starting the
	// service, apply waits for it: a service that stops first, or has not
	// opened it in time, failed to start.
	ReadyPipe string `json:"readyPipe,omitempty"`
	// Rollback are plan files (the service's programs) that apply puts
	// back as they were when the service fails to start after they
	// changed: the agent keeps the previous files until the new ones run.
	Rollback []string `json:"rollback,omitempty"`
	// Writes are files the service writes itself each time it starts,
	// which are not plan files (kube-proxy's: SubnetFiles, podnetwork.go).
	// apply restarts a running service when one of them is missing, and
	// remove deletes them with the service.
	Writes []string `json:"writes,omitempty"`
}

// Recovery is a service's failure actions.
type Recovery struct {
	// Actions apply to the 1st, 2nd, ... failure; the last one repeats.
	Actions []RecoveryAction `json:"actions,omitempty"`
	// ResetPeriod is how long without a failure resets the failure count.
	ResetPeriod metav1.Duration `json:"resetPeriod,omitempty"`
}

// RecoveryActionType is what Windows does after a failure.
type RecoveryActionType string

const (
	RecoveryRestart RecoveryActionType = "restart"
	RecoveryNone    RecoveryActionType = "none"
)

// RecoveryAction is one failure action: what to do, after how long.
type RecoveryAction struct {
	Type  RecoveryActionType `json:"type"`
	Delay metav1.Duration    `json:"delay"`
}

// Protocol of a firewall rule.
type Protocol string

const (
	TCP Protocol = "TCP"
	UDP Protocol = "UDP"
)

// FirewallPort is one inbound port to allow.
type FirewallPort struct {
	// Name is a short identifier ([a-z0-9-]), used in the rule's name
	// "winnode-<name>".
	Name     string   `json:"name"`
	Protocol Protocol `json:"protocol"`
	Port     int      `json:"port"`
}

// CheckType is what a Check verifies.
type CheckType string

const (
	// CheckServiceRunning: Check.Service is Running.
	CheckServiceRunning CheckType = "serviceRunning"
	// CheckFileExists: Check.Path exists.
	CheckFileExists CheckType = "fileExists"
)

// Check is one thing verified after applying.
type Check struct {
	Type    CheckType `json:"type"`
	Service string    `json:"service,omitempty"`
	Path    string    `json:"path,omitempty"`
}

// Staging returns the plan's staging folder.
func (p *Plan) Staging() string {
	if p.StagingDir == "" {
		return DefaultStagingDir
	}
	return p.StagingDir
}

// Service returns the plan service with this name (case-insensitive).
func (p *Plan) Service(name string) (*Service, bool) {
	for i := range p.Services {
		if strings.EqualFold(p.Services[i].Name, name) {
			return &p.Services[i], true
		}
	}
	return nil, false
}

// Files returns the paths of every plan file the service depends on: its
// binary and its Uses.
func (s *Service) Files() []string {
	return append([]string{s.Binary}, s.Uses...)
}
