package standin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// podIP gives a pod its address as containerd does when it creates the
// pod's sandbox: from the loaded CNI configuration's IPAM plugin, run as a
// CNI plugin (ADD, with the pod's UID as container ID). On a simulated host
// the IPAM plugin in containerd's bin_dir is the Linux build of the real
// program (host-local), so the addresses, their uniqueness and their
// exhaustion are host-local's own. The network plugin itself (win-overlay,
// which programs HNS endpoints) is not run: it exists only for Windows.
func (k *kubelet) podIP(ctx context.Context, pod *corev1.Pod) (string, error) {
	if ip, ok := k.podIPs[pod.UID]; ok {
		return ip, nil
	}
	network, err := k.networkStatus()
	if err != nil {
		return "", fmt.Errorf("network is not ready: %s (%v)", networkNotReadyMessage, err)
	}
	ipam, err := ipamConfig(network)
	if err != nil {
		return "", err
	}
	if ip := reservedIP(ipam, network.Name, string(pod.UID)); ip != "" {
		k.podIPs[pod.UID] = ip
		return ip, nil
	}
	out, err := runIPAM(ctx, "ADD", network, ipam, string(pod.UID))
	if err != nil {
		return "", err
	}
	ip, err := resultIP(out)
	if err != nil {
		return "", fmt.Errorf("plugin type=%q: %v", ipam["type"], err)
	}
	k.podIPs[pod.UID] = ip
	k.log.Infof("pod %s/%s: address %s from IPAM %s of network %s (simulated sandbox)", pod.Namespace, pod.Name, ip, ipam["type"], network.Name)
	return ip, nil
}

// releasePodIP gives a deleted pod's address back (CNI DEL), best effort.
func (k *kubelet) releasePodIP(ctx context.Context, pod *corev1.Pod) {
	if _, ok := k.podIPs[pod.UID]; !ok {
		return
	}
	delete(k.podIPs, pod.UID)
	network, err := k.networkStatus()
	if err != nil {
		return
	}
	if ipam, err := ipamConfig(network); err == nil {
		if _, err := runIPAM(ctx, "DEL", network, ipam, string(pod.UID)); err != nil {
			k.log.Warningf("pod %s/%s: releasing its address: %v", pod.Namespace, pod.Name, err)
		}
	}
}

// ipamConfig is the network's "ipam" section, with its dataDir (where
// host-local records what it handed out; on Windows C:\var\lib\cni\networks
// by default) mapped to the simulated host's folder, since the plugin that
// reads it is a Linux program.
func ipamConfig(n *cniNetwork) (map[string]any, error) {
	var conf struct {
		IPAM map[string]any `json:"ipam"`
	}
	if err := json.Unmarshal(n.Raw, &conf); err != nil || conf.IPAM == nil {
		return nil, fmt.Errorf("%s: no ipam section", n.File)
	}
	if t, _ := conf.IPAM["type"].(string); t == "" {
		return nil, fmt.Errorf("%s: ipam has no type", n.File)
	}
	dir, _ := conf.IPAM["dataDir"].(string)
	if dir == "" {
		dir = `C:\var\lib\cni\networks`
	}
	local, err := hostPath(dir)
	if err != nil {
		return nil, err
	}
	conf.IPAM["dataDir"] = local
	return conf.IPAM, nil
}

// reservedIP is the address host-local already recorded for containerID
// (a kubelet restarted while its pods run): host-local keeps one file per
// address, named by it, whose first line is the container ID.
func reservedIP(ipam map[string]any, network, containerID string) string {
	dir := filepath.Join(ipam["dataDir"].(string), network)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		first, _, _ := strings.Cut(string(data), "\n")
		if strings.TrimSpace(first) == containerID {
			if _, err := netip.ParseAddr(e.Name()); err == nil {
				return e.Name()
			}
		}
	}
	return ""
}

// runIPAM runs the IPAM plugin as containerd's CNI library would: the
// plugin from containerd's CNI bin_dir, the CNI_* environment, and the
// network's name, cniVersion and ipam section on stdin.
func runIPAM(ctx context.Context, command string, n *cniNetwork, ipam map[string]any, containerID string) ([]byte, error) {
	plugin, local, err := findPlugin(n.BinDirs, ipam["type"].(string))
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(plugin); err == nil && fi.Mode().Perm()&0o100 == 0 {
		_ = os.Chmod(plugin, fi.Mode().Perm()|0o755) // Windows needs no execute bit
	}
	var version struct {
		CNIVersion string `json:"cniVersion"`
	}
	_ = json.Unmarshal(n.Raw, &version)
	stdin, _ := json.Marshal(map[string]any{"cniVersion": version.CNIVersion, "name": n.Name, "ipam": ipam})
	cmd := exec.CommandContext(ctx, plugin)
	cmd.Env = []string{"CNI_COMMAND=" + command, "CNI_CONTAINERID=" + containerID, "CNI_NETNS=none",
		"CNI_IFNAME=eth0", "CNI_PATH=" + local, "PATH=/usr/bin:/bin"}
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("plugin type=%q failed (%s): %v %s%s", ipam["type"], strings.ToLower(command), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes(), nil
}

// resultIP reads the address out of an IPAM result: CNI 0.2.0's "ip4" or
// 0.3.0 and later's "ips".
func resultIP(out []byte) (string, error) {
	var r struct {
		IP4 *struct {
			IP string `json:"ip"`
		} `json:"ip4"`
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return "", fmt.Errorf("result %q: %v", out, err)
	}
	addr := ""
	switch {
	case r.IP4 != nil:
		addr = r.IP4.IP
	case len(r.IPs) > 0:
		addr = r.IPs[0].Address
	}
	p, err := netip.ParsePrefix(addr)
	if err != nil {
		return "", errors.New("the IPAM result has no address")
	}
	return p.Addr().String(), nil
}

// findPlugin finds a CNI plugin in containerd's bin_dirs, the first that
// has it (libcni's FindInPath): its file and that folder (local paths).
func findPlugin(binDirs []string, name string) (string, string, error) {
	for _, dir := range binDirs {
		local, err := hostPath(dir)
		if err != nil {
			continue
		}
		plugin := filepath.Join(local, name+".exe")
		if _, err := os.Stat(plugin); err == nil {
			return plugin, local, nil
		}
	}
	return "", "", fmt.Errorf("failed to find plugin %q in path [%s]", name, strings.Join(binDirs, " "))
}
