package plan

// The CSI proxy (github.com/kubernetes-csi/csi-proxy): a Windows CSI node
// plugin runs in a container that cannot touch the host's disks, volumes
// and SMB shares, so it asks csi-proxy.exe, running on the host, through
// named pipes (\\.\pipe\csi-proxy-disk-v1, -volume-v1, -filesystem-v1,
// -smb-v1, ...). It acts only on paths under the kubelet's folder (its
// -kubelet-path, C:\var\lib\kubelet by default, where the kubelet puts
// pods' volumes) and under its -working-dir folders.
const (
	PayloadCSIProxy = "csi-proxy.exe"
	CSIProxyService = "csi-proxy"
)

// csiProxyService runs csi-proxy.exe with the kubelet's folder, through
// winnode-service.exe (wrapped.go: csi-proxy's own service mode may not
// stop), logging to standard error as it does by default (klog's
// -logtostderr), which the wrapper writes to C:\var\log\csi-proxy. It
// needs nothing else running: the kubelet does not talk to it, CSI node
// plugins' pods do.
func (in RenderInput) csiProxyService() Service {
	csiProxy, _ := in.Payload.Lookup(PayloadCSIProxy)
	return in.wrap(Service{
		Name:        CSIProxyService,
		DisplayName: "CSI proxy (csi-proxy)",
		StartType:   StartAuto,
		Recovery:    serviceRecovery,
		// csi-proxy parses with Go's flag package: each flag and its
		// value, or -name=value.
	}, csiProxy.HostPath, "-kubelet-path", KubeletStateDir, "-v=2")
}
