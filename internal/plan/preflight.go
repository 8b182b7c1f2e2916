package plan

import "time"

// Pre-flight checks (issue 28): what `winnode-agent info` reports about a
// host before winnode sends it anything. They are called "preflight", not
// "checks": Check and CheckResult are the post-apply checks.

// PreflightRequest is what the operator hands `winnode-agent info
// --preflight` (and `install`) on stdin: what the host-side checks need
// from the cluster.
type PreflightRequest struct {
	// APIServer is the cluster's (internal) API endpoint,
	// "https://host:port"; CAData the cluster CA (PEM) its serving
	// certificate must verify against. Empty: the check cannot run, and is
	// a warning saying so.
	APIServer string `json:"apiServer,omitempty"`
	CAData    []byte `json:"caData,omitempty"`
	// MinFreeGiB is the free space the system drive needs (default
	// DefaultMinFreeGiB).
	MinFreeGiB int `json:"minFreeGiB,omitempty"`
	// ListedByIP: the instance's address is an IP address, not a name
	// (the addressing check warns of a DHCP address then).
	ListedByIP bool `json:"listedByIP,omitempty"`
	// Address is the instance's address, as listed.
	Address string `json:"address,omitempty"`
}

// DefaultMinFreeGiB is the free space on the system drive a host needs by
// default: the payload (about 1 GiB unpacked), containerd's content store
// and a Windows base image (servercore's unpacked layers are about 5 GiB
// for ltsc2022, and image pulls stage a compressed copy beside them), with
// room for workloads' images and logs.
const DefaultMinFreeGiB = 30

// PreflightOutcome is a check's result.
type PreflightOutcome string

const (
	PreflightPass PreflightOutcome = "pass"
	PreflightWarn PreflightOutcome = "warn"
	PreflightFail PreflightOutcome = "fail"
)

// PreflightResult is one check's result; Message names the fix when it is
// not a pass.
type PreflightResult struct {
	Check   string           `json:"check"`
	Result  PreflightOutcome `json:"result"`
	Message string           `json:"message"`
}

// HostSystem is what `info --preflight` reports of the host beyond its
// names and addresses, for the checks the operator decides (the clock is
// compared with the operator's).
type HostSystem struct {
	// Clock is the host's clock when it answered (UTC).
	Clock time.Time `json:"clock"`
	// UBR is the update build revision: the number after the build
	// (20348.681: UBR 681), HKLM\SOFTWARE\Microsoft\Windows
	// NT\CurrentVersion\UBR.
	UBR int `json:"ubr"`
}
