package plan

// How each service answers Windows' service control manager (SCM). The SCM
// starts a service's program and waits for it to call
// StartServiceCtrlDispatcher; a program that does not within the start
// timeout (30 s by default) is killed, and the start fails with error 1053.
//
//   - kubelet, kube-proxy, flanneld: the SCM starts the agent,
//     `winnode-agent.exe run-service` (internal/agent RunService), which
//     answers it and runs the program as its child, writing the child's
//     output to the service's log file. The child gets no --windows-service:
//     it is not the process the SCM started, so it could not answer
//     (StartServiceCtrlDispatcher fails in any other process). The wrapper
//     is what gives the kubelet and kube-proxy a log file: Kubernetes
//     removed klog's --log-file and --logtostderr from its components in
//     v1.26 (KEP-2845), so they log to standard error only. kube-log-runner
//     (k8s.io/component-base/logs/kube-log-runner) would redirect it too,
//     but it never answers the SCM, so as a service's program it is killed
//     with error 1053. flanneld has no service mode at all.
//   - hybrid-overlay-node answers the SCM itself (--windows-service) and
//     writes its own log file (--logfile): hybridoverlay.go.
//   - containerd, where winnode manages it (RuntimeManaged): through
//     run-service too, its output in ContainerdLogFile. containerd can
//     answer the SCM itself (--run-service, what its --register-service
//     writes; cmd/containerd/command/service_windows.go) and then writes
//     its own --log-file, opened once and never rotated; Windows cannot
//     rename a file another process holds open, so nothing else can rotate
//     it either. Under run-service its log is every winnode service's
//     (C:\var\log\<service>\<service>.log, rotated alike). What that
//     costs: a stop ends containerd.exe at once instead of through its
//     service handler's server.Stop, which containerd survives by design
//     (its metadata is a transactional bolt database, and the shims, which
//     run the containers, are processes of their own that it reconnects to
//     when it starts again); and its panics reach the same log instead of
//     a panic.log. The service is Running once run-service answers, so
//     apply waits for containerd's pipe (Service.ReadyPipe) to know it
//     runs. Under RuntimeExisting containerd is the host's, not the plan's.

// Log files of the services the agent's run-service hosts.
const (
	KubeletLogFile   = KubeletLogDir + `\kubelet.log`
	KubeProxyLogFile = KubeProxyLogDir + `\kube-proxy.log`
	FlanneldLogFile  = FlanneldLogDir + `\flanneld.log`
	// ContainerdLogFile is in containerd.go, with the rest of its layout.
)

// RunServiceCommand is the first argument of a service whose binary is the
// agent: `winnode-agent.exe run-service --name NAME --log-file FILE --
// PROGRAM ARGS...`.
const RunServiceCommand = "run-service"

// RunServiceArgs are the agent's arguments that run program with args as
// the service name, its output appended to logFile.
func RunServiceArgs(name, logFile, program string, args ...string) []string {
	return append([]string{RunServiceCommand, "--name", name, "--log-file", logFile, "--", program}, args...)
}
