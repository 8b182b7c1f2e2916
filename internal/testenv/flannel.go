package testenv

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The test cluster's networks, kubeadm's and flannel's defaults: pods in
// ClusterCIDR (the controller manager gives each Node a /24 of it, as
// kubeadm's --pod-network-cidr does), Services in ServiceCIDR (the API
// server's --service-cluster-ip-range, kubeadm's default; winnode's
// --service-cidr default too).
const (
	ClusterCIDR         = "10.244.0.0/16"
	ServiceCIDR         = "10.96.0.0/12"
	kubernetesServiceIP = "10.96.0.1"
	// KubernetesDNSIP is the cluster DNS Service's address by kubeadm's
	// and OpenShift's rule (the tenth of ServiceCIDR); no DNS server runs.
	KubernetesDNSIP = "10.96.0.10"
)

// FlannelNetConf is the net-conf.json of the test world's flannel, as
// kube-flannel.yml ships it with the VXLAN settings Windows nodes need
// (flannel's backends.md: VNI 4096 or more, port 4789 on Windows).
const FlannelNetConf = `{
  "Network": "` + ClusterCIDR + `",
  "Backend": {
    "Type": "vxlan",
    "VNI": 4096,
    "Port": 4789
  }
}
`

// publishFlannelConfig creates namespace kube-flannel and ConfigMap
// kube-flannel-cfg as flannel's manifest does: the test cluster "runs
// flannel" for winnode, which reads its configuration there. (No Linux
// node runs flanneld: the test world has no Linux nodes.)
func publishFlannelConfig(ctx context.Context, client kubernetes.Interface) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-flannel"}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace kube-flannel: %w", err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-flannel", Name: "kube-flannel-cfg", Labels: map[string]string{"app": "flannel", "tier": "node"}},
		Data:       map[string]string{"net-conf.json": FlannelNetConf},
	}
	if _, err := client.CoreV1().ConfigMaps("kube-flannel").Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ConfigMap kube-flannel/kube-flannel-cfg: %w", err)
	}
	return nil
}
