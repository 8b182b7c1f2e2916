package preflight

import (
	"math"
	"strconv"
	"strings"

	"github.com/winnode/winnode/internal/plan"
)

// The checks decided from what the agent reads on the host.

// release is a Windows Server release winnode supports, and the first
// update (UBR) it needs.
type release struct {
	name   string
	minUBR int
	update string // the update that brings minUBR
}

// releases by build. Windows Server 2022 needs 20348.681 (KB5012637,
// April 2022), the update Windows container networking on Kubernetes
// needs and the floor Red Hat's WMCO documents for it; 2019 (1809) and
// 2025 need no specific update.
var releases = map[string]release{
	"10.0.17763": {name: "Windows Server 2019"},
	"10.0.20348": {name: "Windows Server 2022", minUBR: 681, update: "KB5012637"},
	"10.0.26100": {name: "Windows Server 2025"},
}

// CheckWindowsBuild: a supported release, at its required update.
func CheckWindowsBuild(build string, ubr int) plan.PreflightResult {
	r, ok := releases[build]
	if !ok {
		return fail(WindowsBuild, "Windows build %s is not one winnode supports (Windows Server 2019 10.0.17763, 2022 10.0.20348, 2025 10.0.26100); use a supported release", orUnknown(build))
	}
	if ubr < r.minUBR {
		return fail(WindowsBuild, "%s build %s.%d lacks update %s (%s.%d or later is needed); install the latest cumulative update (Windows Update or sconfig) and restart the host", r.name, build, ubr, r.update, build, r.minUBR)
	}
	return pass(WindowsBuild, "%s, build %s.%d", r.name, build, ubr)
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

// FeatureState is the Containers feature's state as DISM names it
// ("Enabled", "EnablePending", "Disabled"), or "" when Windows has no such
// feature.
type FeatureState string

// CheckContainersFeature: enabled; otherwise winnode enables it and
// restarts the host (issue 26, apply_features.go), which the warning says.
// A restart pending for any other reason is reported too.
func CheckContainersFeature(state FeatureState, rebootPending bool) plan.PreflightResult {
	switch {
	case state == "":
		return fail(ContainersFeature, "this Windows has no Containers feature (a Server Core or Desktop Experience installation of Windows Server has it); use Windows Server")
	case state == "Disabled":
		return warn(ContainersFeature, "the Containers feature is disabled: winnode enables it and restarts the host once (to avoid that restart, run Install-WindowsFeature Containers and restart before adding the host)")
	case state == "EnablePending":
		return warn(ContainersFeature, "the Containers feature is enabled but waits for a restart: winnode restarts the host (or restart it yourself: Restart-Computer)")
	case rebootPending:
		return warn(ContainersFeature, "a restart is pending on the host: winnode waits for it; restart the host (Restart-Computer) to go on sooner")
	}
	return pass(ContainersFeature, "the Containers feature is enabled")
}

// CheckDisk: at least minGiB free on the system drive.
func CheckDisk(free uint64, minGiB int) plan.PreflightResult {
	if minGiB <= 0 {
		minGiB = plan.DefaultMinFreeGiB
	}
	freeGiB := float64(free) / (1 << 30)
	if free < uint64(minGiB)<<30 {
		return fail(Disk, "the system drive C: has %s GiB free, less than the %d GiB winnode needs for its programs, the container runtime and a Windows base image; free space (or extend the volume) on C:", gib(freeGiB), minGiB)
	}
	return pass(Disk, "%s GiB free on C: (at least %d GiB needed)", gib(freeGiB), minGiB)
}

func gib(v float64) string {
	return strconv.FormatFloat(math.Floor(v*10)/10, 'f', -1, 64)
}

// CheckDefender: Microsoft Defender Antivirus scanning containerd's and
// the kubelet's files slows containers down; winnode adds process
// exclusions for its programs when it runs (issue 26, apply_defender.go),
// so a running Defender is reported, not refused.
func CheckDefender(running bool) plan.PreflightResult {
	if running {
		return pass(Defender, "Microsoft Defender Antivirus runs: winnode adds process exclusions for containerd and its services")
	}
	return pass(Defender, "Microsoft Defender Antivirus does not run")
}

// CheckAddressing: a host listed by its IP address whose address DHCP
// gave can lose it at a lease renewal, and its node with it.
func CheckAddressing(listedByIP bool, address string, dhcp []string) plan.PreflightResult {
	if listedByIP {
		for _, a := range dhcp {
			if a == address {
				return warn(Addressing, "the host is listed by address %s, which DHCP gave it and may change; give it a static address (or a DHCP reservation), or list it by a DNS name", address)
			}
		}
	}
	return pass(Addressing, "the host's address is not a DHCP lease winnode depends on")
}

// CheckAPIServer: the host reached the API server and completed a TLS
// handshake against the cluster CA (err nil), or not. No endpoint: the
// check cannot run.
func CheckAPIServer(endpoint string, err error) plan.PreflightResult {
	if endpoint == "" {
		return warn(APIServer, "the api-server check could not run: no API server endpoint was given to the agent")
	}
	if err != nil {
		return fail(APIServer, "the host cannot reach the API server %s (%v); open the route and firewalls from the host to it (TCP, the endpoint's port), and check that its certificate is signed by the cluster CA", endpoint, err)
	}
	return pass(APIServer, "the host completed a TLS handshake with %s against the cluster CA", endpoint)
}

// CheckContainerRuntime: under containerRuntime Managed, a containerd
// winnode did not install is a conflict (issue 26's
// ContainerRuntimeConflict, for the same reason: two runtimes would fight
// over the named pipe and the HNS networks); under Existing, the host's
// own must run.
func CheckContainerRuntime(ctd plan.ServiceInfo, mode plan.ContainerRuntime) plan.PreflightResult {
	if mode == plan.RuntimeManaged || mode == "" {
		if ctd.Present && !ctd.Winnode {
			cmd := ctd.Command
			if cmd == "" {
				cmd = "its command line unknown"
			}
			return fail(ContainerRuntime, "ContainerRuntimeConflict: a containerd winnode did not install is there (service containerd: %s); uninstall it (containerd.exe --unregister-service), or set spec.containerRuntime to Existing to keep it", cmd)
		}
		return pass(ContainerRuntime, "no foreign container runtime: winnode installs containerd")
	}
	if !ctd.Present || !ctd.Running {
		return fail(ContainerRuntime, "NoContainerRuntime: under containerRuntime Existing the host's own containerd must run (state: %s); install it and start its service, or set spec.containerRuntime to Managed", strings.ToLower(orString(ctd.State, "not installed")))
	}
	return pass(ContainerRuntime, "the host's own containerd runs (containerRuntime Existing)")
}

func orString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
