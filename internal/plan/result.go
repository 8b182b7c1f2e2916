package plan

import (
	"errors"
	"fmt"
)

// The agent prints exactly one JSON document on stdout per run: a Result
// (apply, remove, bootstrap), an Info (info), or, when it exits non-zero, an
// ErrorDocument. All carry SchemaVersion.

// ServiceAction is what apply or remove did to a service.
type ServiceAction string

const (
	ServiceCreated   ServiceAction = "created"
	ServiceUpdated   ServiceAction = "updated"
	ServiceUnchanged ServiceAction = "unchanged"
	ServiceRemoved   ServiceAction = "removed"
)

// FileAction is what apply or remove did to a file.
type FileAction string

const (
	FileInstalled FileAction = "installed"
	FileUnchanged FileAction = "unchanged"
	FileRemoved   FileAction = "removed"
)

// Result is the agent's answer to a successful apply, remove or bootstrap.
type Result struct {
	SchemaVersion string `json:"schemaVersion"`
	// Command is "apply", "remove" or "bootstrap".
	Command string `json:"command"`
	// PlanVersion is the plan applied (empty for remove).
	PlanVersion string          `json:"planVersion,omitempty"`
	Services    []ServiceResult `json:"services"`
	Files       []FileResult    `json:"files"`
	Checks      []CheckResult   `json:"checks,omitempty"`
	// DryRun is set when nothing was changed (bootstrap --dry-run).
	DryRun bool `json:"dryRun,omitempty"`
	// Warnings are what the agent refused to do without failing: a state
	// file it does not trust, a path outside winnode's folders, a service
	// that is not winnode's. Each says what to look at.
	Warnings []string `json:"warnings,omitempty"`
}

// ServiceResult is one service's outcome.
type ServiceResult struct {
	Name   string        `json:"name"`
	Action ServiceAction `json:"action"`
	// Restarted is set when a service that was running was stopped and
	// started again (its configuration or one of its files changed, or a
	// service it depends on was restarted).
	Restarted bool `json:"restarted,omitempty"`
	// State is the service's final state (Running, Stopped, ...; "" once
	// removed).
	State string `json:"state,omitempty"`
}

// FileResult is one file's outcome.
type FileResult struct {
	Path   string     `json:"path"`
	Action FileAction `json:"action"`
}

// CheckResult is one post-apply check's outcome.
type CheckResult struct {
	Check   Check  `json:"check"`
	OK      bool   `json:"ok"`
	Message string `json:"message,omitempty"`
}

// ErrorCode is a machine-readable failure reason.
type ErrorCode string

const (
	// ErrUsage: bad command line.
	ErrUsage ErrorCode = "Usage"
	// ErrPlanInvalid: the plan could not be read or failed validation.
	ErrPlanInvalid ErrorCode = "PlanInvalid"
	// ErrFileMissing: a plan file is neither in place nor staged with the
	// right hash: upload it to the staging folder and apply again.
	ErrFileMissing ErrorCode = "FileMissing"
	// ErrFileInstall: moving a file into place or creating a folder failed.
	ErrFileInstall ErrorCode = "FileInstall"
	// ErrHostServiceMissing: a service the plan relies on (containerd) is
	// not installed.
	ErrHostServiceMissing ErrorCode = "HostServiceMissing"
	// ErrService: the service manager refused an operation.
	ErrService ErrorCode = "Service"
	// ErrTimeout: a service did not reach the wanted state in time.
	ErrTimeout ErrorCode = "Timeout"
	// ErrCheckFailed: a post-apply check failed.
	ErrCheckFailed ErrorCode = "CheckFailed"
	// ErrFirewall: opening or closing a firewall port failed.
	ErrFirewall ErrorCode = "Firewall"
	// ErrIgnition: the Ignition file is malformed or unsupported.
	ErrIgnition ErrorCode = "Ignition"
	// ErrBusy: another agent is applying or removing on this host: retry
	// when it has finished.
	ErrBusy ErrorCode = "Busy"
	// ErrHost: the host (service manager, filesystem, state) could not be
	// reached or read.
	ErrHost ErrorCode = "Host"
	// ErrStateInvalid: the agent's state file failed validation, so
	// `remove` does not know what is winnode's and deleted nothing.
	ErrStateInvalid ErrorCode = "StateInvalid"
	// ErrUntrustedFolder: one of winnode's folders (or a folder above it
	// or a file directly in it) is owned by someone who is not SYSTEM,
	// Administrators or TrustedInstaller; File names it.
	ErrUntrustedFolder ErrorCode = "UntrustedFolder"
	// ErrJoinConfig: `join` found no join config, or one that does not
	// decode or validate (Pull mode).
	ErrJoinConfig ErrorCode = "JoinConfig"
	// ErrUnsupportedVersion: `join` runs an agent whose version the
	// operator that wrote the join config does not support: the image is
	// too old or too new for that operator.
	ErrUnsupportedVersion ErrorCode = "UnsupportedVersion"
	// ErrImage: a payload file the Windows image must carry is missing or
	// does not match the image's manifest (File names it), or the image
	// has no manifest.
	ErrImage ErrorCode = "Image"
	// ErrNotJoined: `join` applied its plan, but the kubelet did not
	// register the Node, or the Node got no pod subnet, in time.
	ErrNotJoined ErrorCode = "NotJoined"
	// ErrWindowsFeature: a Windows feature the plan needs (Containers)
	// could not be read or enabled.
	ErrWindowsFeature ErrorCode = "WindowsFeature"
	// ErrRebootRequired: a Windows feature the plan needs is enabled, and
	// Windows finishes it only when it restarts: restart the host
	// (`winnode-agent reboot`) and apply again. Nothing else was changed.
	ErrRebootRequired ErrorCode = "RebootRequired"
	// ErrRolledBack: a service did not start with the plan's new programs;
	// the agent put the previous ones back, and the service runs again
	// with them. Service names it.
	ErrRolledBack ErrorCode = "RolledBack"
	// ErrTransfer: `receive` did not stage a blob: the stream was cut off
	// (the blob's .part is kept, and the next transfer continues it), or
	// a blob's bytes are not what its header says (File names the file;
	// the blob was deleted, and the next transfer sends it whole).
	ErrTransfer ErrorCode = "Transfer"
)

// ReceiveResult is the agent's answer to a successful receive: the blobs
// it staged, in the order of the stream.
type ReceiveResult struct {
	SchemaVersion string         `json:"schemaVersion"`
	Command       string         `json:"command"`
	Blobs         []ReceivedBlob `json:"blobs"`
}

// ReceivedBlob is one blob receive staged.
type ReceivedBlob struct {
	// File is the host path the blob is for; Name, the sha256 of its
	// bytes.
	File string `json:"file"`
	Name string `json:"name"`
	// Bytes counts what arrived in this run; ResumedFrom, the bytes of an
	// earlier transfer's .part that were kept.
	Bytes       int64 `json:"bytes"`
	ResumedFrom int64 `json:"resumedFrom,omitempty"`
}

// Error is a failure the agent reports; it is also a Go error.
type Error struct {
	Code    ErrorCode `json:"code"`
	Message string    `json:"message"`
	// Service and File name what the error is about, when it is about one.
	Service string `json:"service,omitempty"`
	File    string `json:"file,omitempty"`
}

func (e *Error) Error() string {
	switch {
	case e.Service != "":
		return fmt.Sprintf("%s: service %s: %s", e.Code, e.Service, e.Message)
	case e.File != "":
		return fmt.Sprintf("%s: file %s: %s", e.Code, e.File, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Errorf makes an Error.
func Errorf(code ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// AsError returns err as an *Error, wrapping other errors with code.
func AsError(err error, code ErrorCode) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: code, Message: err.Error()}
}

// ErrorDocument is what the agent prints on stdout when it fails. Result
// holds what was done before the failure, when the command got that far.
type ErrorDocument struct {
	SchemaVersion string  `json:"schemaVersion"`
	Error         Error   `json:"error"`
	Result        *Result `json:"result,omitempty"`
}

// Info is what `winnode-agent info` prints: the host facts the operator
// renders a plan from, and what is installed.
type Info struct {
	SchemaVersion string `json:"schemaVersion"`
	Hostname      string `json:"hostname"`
	FQDN          string `json:"fqdn"`
	// IPv4 lists the host's IPv4 addresses; DefaultIPv4 is the one on the
	// interface that carries the default route ("" if none).
	IPv4        []string `json:"ipv4"`
	DefaultIPv4 string   `json:"defaultIPv4"`
	OS          OSInfo   `json:"os"`
	// Containerd is the container runtime's service.
	Containerd ServiceInfo `json:"containerd"`
	// RebootPending: a restart (`winnode-agent reboot`) was asked for and
	// has not happened yet. Agents before it leave it out.
	RebootPending bool   `json:"rebootPending,omitempty"`
	AgentVersion  string `json:"agentVersion"`
	// InstalledPlan is nil on a host winnode never configured, and when
	// the agent's state file failed validation (see Warnings).
	InstalledPlan *InstalledPlan `json:"installedPlan,omitempty"`
	// Warnings: why the agent's state was not trusted, when it was not.
	Warnings []string `json:"warnings,omitempty"`
	// Services are the services of the applied plan that are not Running
	// (Stopped, restarting after a failure, missing), each with the end of
	// its log where the agent knows it: the --log-file of
	// winnode-service.exe, which hosts the kubelet, kube-proxy, flanneld
	// and csi-proxy, or hybrid-overlay-node's --logfile. Agents before it
	// leave it out.
	Services []ServiceStatus `json:"services,omitempty"`
	// Preflight is the results of the host-side pre-flight checks
	// (preflight.go), and System what the operator-side ones need; both
	// only when info was given a PreflightRequest.
	Preflight []PreflightResult `json:"preflight,omitempty"`
	System    *HostSystem       `json:"system,omitempty"`
}

// ServiceStatus is the state of a plan service that is not Running.
type ServiceStatus struct {
	Name string `json:"name"`
	// State is Windows' name of its state, or NotInstalled.
	State string `json:"state"`
	// LogFile and LogTail: where its program logs, and the last lines
	// there (at most MaxLogTailLines).
	LogFile string   `json:"logFile,omitempty"`
	LogTail []string `json:"logTail,omitempty"`
}

// MaxLogTailLines is how many of a failing service's last log lines info
// reports.
const MaxLogTailLines = 5

// LogsDocument is what `winnode-agent logs` prints: a part of a service's
// log, read on the host (for a node whose kubelet cannot serve it).
type LogsDocument struct {
	SchemaVersion string `json:"schemaVersion"`
	// Service is the service asked for ("winnode-agent": the agent's own
	// log); File the log file read (Windows path).
	Service string `json:"service"`
	File    string `json:"file"`
	// Size is the file's size when read; Offset where in it the bytes read
	// start (a reader following the log asks for the bytes from Size on
	// next time, and starts again from 0 once Size is smaller: rotated).
	Size   int64 `json:"size"`
	Offset int64 `json:"offset"`
	// Text is the log from Offset on, at most MaxLogsBytes of it (the
	// end), with --since and --tail applied.
	Text string `json:"text"`
	// Truncated: the file had more than MaxLogsBytes from Offset on, and
	// only the end was read.
	Truncated bool `json:"truncated,omitempty"`
	// Rotated are the rotated copies beside the file, oldest first (names
	// only): older lines are there.
	Rotated []string `json:"rotated,omitempty"`
}

// MaxLogsBytes bounds what `winnode-agent logs` reads of a file: the end
// of it, so that a host's answer stays small whatever its logs hold.
const MaxLogsBytes = 4 << 20

// OSInfo names the Windows release.
type OSInfo struct {
	ProductName string `json:"productName"` // "Windows Server 2022 Datacenter"
	Build       string `json:"build"`       // "10.0.20348"
}

// ServiceInfo says whether a service exists and runs, and whether it is
// winnode's.
type ServiceInfo struct {
	Present bool   `json:"present"`
	Running bool   `json:"running"`
	State   string `json:"state,omitempty"`
	// Winnode: its description is ServiceDescription, which winnode gives
	// every service it creates (a containerd winnode installed, under
	// containerRuntime Managed). Agents before it leave it out.
	Winnode bool `json:"winnode,omitempty"`
	// Command is its command line, for a service that is not winnode's
	// (what an administrator needs to find it).
	Command string `json:"command,omitempty"`
}

// InstalledPlan is the last plan applied to the host.
type InstalledPlan struct {
	Version string `json:"version"`
	// Files maps each installed file's Windows path to its sha256: the
	// operator uploads only the plan files whose hash differs.
	Files map[string]string `json:"files"`
	// Sizes maps each file of Files to its size on disk when the agent
	// reported (info looks each file up anyway): the operator needs a
	// file's size for the plan, and so opens no SFTP session to ask.
	// Agents before it leave it out.
	Sizes map[string]int64 `json:"sizes,omitempty"`
	// Complete is false when the last apply did not finish (the files map
	// then holds only what was verified in place).
	Complete bool `json:"complete"`
	// Services and Cluster are those of the plan applied last (only when
	// Complete): with them the operator can tell beforehand which services
	// a new plan restarts (ChangedServices), and so whether an upgrade
	// disturbs the node's pods.
	Services []Service `json:"services,omitempty"`
	Cluster  string    `json:"cluster,omitempty"`
}
