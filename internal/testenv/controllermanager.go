package testenv

import (
	"context"
	"path/filepath"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// startControllerManager starts kube-controller-manager on port, signing
// CSRs with the cluster CA and running the bootstrap token controllers,
// and waits until it acts.
func (e *Env) startControllerManager(ctx context.Context, opts Options, client kubernetes.Interface, port int) error {
	p := e.pki.path
	kubeconfig := filepath.Join(e.Dir, "controller-manager.kubeconfig")
	if err := writeKubeconfig(kubeconfig, e.Host, p("ca.crt"), "system:kube-controller-manager", p("controller-manager.crt"), p("controller-manager.key")); err != nil {
		return err
	}
	kcm, err := startProcess(e.Dir, "kube-controller-manager", filepath.Join(e.binDir, "kube-controller-manager"),
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(e.Dir, "kcm-certs"),
		"--leader-elect=false",
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--cluster-signing-cert-file="+p("ca.crt"),
		"--cluster-signing-key-file="+p("ca.key"),
		"--root-ca-file="+p("ca.crt"),
		"--service-account-private-key-file="+p("sa.key"),
		"--use-service-account-credentials=true",
		"--node-monitor-grace-period="+opts.NodeMonitorGracePeriod.String(),
		"--node-monitor-period=2s",
		// Node subnets, as kubeadm asks for them with --pod-network-cidr:
		// each Node gets spec.podCIDR, a /24 of ClusterCIDR (flannel's and
		// winnode's flannel mode read it).
		"--allocate-node-cidrs=true",
		"--cluster-cidr="+ClusterCIDR,
		"--node-cidr-mask-size=24",
		"--service-cluster-ip-range="+ServiceCIDR,
		"--profiling=false",
		"--v=1")
	if err != nil {
		return err
	}
	e.procs = append(e.procs, kcm)
	// The service-account controller creating "default" in "default" shows
	// the controller manager is up and acting with its per-controller
	// service-account credentials.
	return waitFor(ctx, kcm, "kube-controller-manager (default ServiceAccount)", func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}
