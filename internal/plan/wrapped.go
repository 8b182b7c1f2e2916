package plan

import (
	"slices"
	"strings"

	"github.com/winnode/winnode/internal/logrotate"
)

// Which process answers Windows' service control manager (SCM) for each
// service winnode installs, and where each service logs. The SCM starts a
// service's program and waits for it to call StartServiceCtrlDispatcher;
// a program that does not within the start timeout (30 s by default) is
// killed, and the start fails with error 1053.
//
// | service             | the SCM starts                  | the program runs as       | its log (rotated at --log-file-size, --log-file-age)  |
// |---------------------|---------------------------------|---------------------------|-------------------------------------------------------|
// | kubelet             | winnode-service.exe             | its child                 | C:\var\log\kubelet\kubelet.log, by winnode-service    |
// | kube-proxy          | winnode-service.exe             | its child                 | C:\var\log\kube-proxy\kube-proxy.log, same            |
// | flanneld            | winnode-service.exe             | its child                 | C:\var\log\flanneld\flanneld.log, same                |
// | csi-proxy           | winnode-service.exe             | its child                 | C:\var\log\csi-proxy\csi-proxy.log, same              |
// | containerd (Managed)| winnode-service.exe             | its child                 | C:\var\log\containerd\containerd.log, same            |
// | windows_exporter    | winnode-service.exe             | its child                 | C:\var\log\windows_exporter\windows_exporter.log, same|
// | hybrid-overlay-node | winnode-service.exe             | its child                 | C:\var\log\hybrid-overlay\hybrid-overlay.log, its own;|
// |                     |                                 |                           | its wait and stderr: C:\var\log\hybrid-overlay-node\...|
// | (the agent)         | not a service: run over SSH     |                           | C:\var\log\winnode-agent\winnode-agent.log, its own   |
//
// Why the wrapper (winnode-service.exe, internal/svcwrap) for the first
// four (containerd: below): the kubelet and kube-proxy could answer the SCM themselves
// (--windows-service), but since Kubernetes v1.26 they log only to
// standard error (KEP-2845 removed klog's --log-file and --logtostderr),
// which the wrapper puts in their log file; as the wrapper's child they get
// no --windows-service, since StartServiceCtrlDispatcher fails in any
// process but the one the SCM started. kube-log-runner
// (k8s.io/component-base/logs/kube-log-runner) would redirect their output
// too, but it never answers the SCM, so as a service's program it is
// killed with error 1053. flanneld has no service mode at all. csi-proxy
// answers the SCM only with -windows-service, and then its process may
// outlive a stop (its server loop cannot be stopped; the wrapper kills its
// child), and writes a file only with -logtostderr=false -log_file=...,
// which klog rotates at 1800 MB without an age: under the wrapper it logs
// to standard error, as by default, and gets the same rotation as the
// others. A service is wrapped by being declared in Wrapped; the renderer
// then runs it through winnode-service.exe with its log in LogFile(name)
// and creates LogDir(name).
//
// windows_exporter could answer the SCM itself too, and is wrapped for
// its log (windowsexporter.go says why).
//
// hybrid-overlay-node could answer the SCM itself (--windows-service), and
// writes and rotates its own log file (--logfile, --logfile-maxsize in
// megabytes, --logfile-maxage in days: lumberjack in ovn-kubernetes'
// go-controller/pkg/config). It is wrapped for what it needs at its start,
// as flanneld is: the wrapper runs `winnode-agent pod-network --wait-only`
// before it (hybridoverlay.go says why).
//
// containerd, where winnode manages it (RuntimeManaged), is wrapped too,
// although it can answer the SCM itself: `containerd.exe --run-service`,
// what its --register-service writes (cmd/containerd/command/
// service_windows.go). It is wrapped for the reason the kubelet is, which
// could answer the SCM too: its log. Run as a service, containerd writes
// its own --log-file, opened once and never rotated, and Windows cannot
// rename a file another process holds open (Go opens files without
// FILE_SHARE_DELETE), so nothing else can rotate it either: the file
// would grow for the life of the node. Under winnode-service its log is
// every wrapped service's, C:\var\log\containerd\containerd.log, rotated at
// the same --log-file-size and --log-file-age, and read the same way
// (winnodectl logs, the kubelet's /logs/). What that costs: a stop ends
// containerd.exe at once instead of through its service handler's
// server.Stop, which containerd survives by design (its metadata is a
// transactional bolt database, and the shims, which run the containers,
// are processes of their own that it reconnects to when it starts again);
// and its panics reach the same log instead of a panic.log. The service is
// Running once winnode-service answers, so apply waits for containerd's
// pipe (Service.ReadyPipe) to know it runs. Under RuntimeExisting
// containerd is the host's, not the plan's: winnode neither wraps it nor
// reads its log.

// PayloadService is winnode-service.exe, the wrapper.
const PayloadService = "winnode-service.exe"

// Wrapped are the services that winnode-service.exe runs.
var Wrapped = []string{KubeletService, KubeProxyService, FlanneldService, CSIProxyService, ContainerdService, WindowsExporterService, HybridOverlayService}

// IsWrapped says whether a service is one of Wrapped.
func IsWrapped(name string) bool {
	for _, w := range Wrapped {
		if strings.EqualFold(w, name) {
			return true
		}
	}
	return false
}

// LogRoot is the folder of every service's log folder.
const LogRoot = `C:\var\log`

// LogDir is a service's log folder, C:\var\log\<service>.
func LogDir(service string) string { return LogRoot + `\` + service }

// LogFile is a service's log, C:\var\log\<service>\<service>.log.
func LogFile(service string) string { return LogDir(service) + `\` + service + ".log" }

// Log folders and files of the wrapped services, and of the agent's own
// runs.
var (
	KubeletLogDir    = LogDir(KubeletService)
	KubeProxyLogDir  = LogDir(KubeProxyService)
	FlanneldLogDir   = LogDir(FlanneldService)
	CSIProxyLogDir   = LogDir(CSIProxyService)
	KubeletLogFile   = LogFile(KubeletService)
	KubeProxyLogFile = LogFile(KubeProxyService)
	FlanneldLogFile  = LogFile(FlanneldService)
	// ContainerdLogDir and ContainerdLogFile are a managed containerd's.
	ContainerdLogDir  = LogDir(ContainerdService)
	ContainerdLogFile = LogFile(ContainerdService)
	AgentLogDir       = LogDir("winnode-agent")
	AgentLogFile      = LogFile("winnode-agent")
)

// ServiceArgs are winnode-service.exe's arguments that run program with
// args as the service name, its output written to logFile and rotated at
// limits (internal/svcwrap parses them).
func ServiceArgs(name, logFile string, limits logrotate.Limits, program string, args ...string) []string {
	return append([]string{
		"--name", name,
		"--log-file", logFile,
		"--log-file-size", logrotate.FormatSize(limits.Size),
		"--log-file-age", limits.Age.String(),
		"--", program}, args...)
}

// withBefore adds to winnode-service.exe's arguments args a program to
// run, with its arguments, before the service's own (--before,
// --before-arg).
func withBefore(args []string, program string, programArgs ...string) []string {
	i := slices.Index(args, "--")
	before := []string{"--before", program}
	for _, a := range programArgs {
		before = append(before, "--before-arg", a)
	}
	return slices.Concat(args[:i], before, args[i:])
}

// wrap makes s a service of winnode-service.exe running program with
// args, its log in LogFile(s.Name) at the plan's limits: the service's
// binary is the wrapper, and program is one of the files it uses.
func (in RenderInput) wrap(s Service, program string, args ...string) Service {
	wrapper, _ := in.Payload.Lookup(PayloadService)
	s.Binary = wrapper.HostPath
	s.Args = ServiceArgs(s.Name, LogFile(s.Name), in.logLimits(), program, args...)
	s.Uses = append([]string{program}, s.Uses...)
	return s
}

// logLimits are RenderInput.Logs, or the defaults when unset.
func (in RenderInput) logLimits() logrotate.Limits {
	if in.Logs == nil {
		return logrotate.Defaults
	}
	return *in.Logs
}

// logDirs are the log folders of the plan's wrapped services.
func logDirs(services []Service) []Directory {
	var dirs []Directory
	for _, s := range services {
		if IsWrapped(s.Name) {
			dirs = append(dirs, Directory{Path: LogDir(s.Name), Logs: true})
		}
	}
	return dirs
}
