package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/winnode/winnode/internal/plan"
	"github.com/winnode/winnode/internal/winpath"
)

// waitForNode waits until the kubelet has joined (its TLS bootstrap wrote
// the node's kubeconfig, plan.KubeconfigPath) and its Node exists, read
// with the node's own credentials (the node authorizer lets a node read
// Nodes); in flannel mode, until the Node also has its pod subnet
// (spec.podCIDR, which kube-controller-manager's node IPAM gives it).
func (r *joinRun) waitForNode(ctx context.Context) error {
	log := r.log("node")
	wantSubnet := r.cfg.Network.Mode == plan.NetworkFlannel
	log.Info("waiting for the kubelet to join and register its Node", "node", r.cfg.NodeName, "podSubnet", wantSubnet, "timeout", r.o.Timeout.String())
	var nodes *rest.RESTClient
	last := "the kubelet has not written " + plan.KubeconfigPath + " yet: its certificate request is not approved"
	err := wait.PollUntilContextTimeout(ctx, r.o.PollInterval, r.o.Timeout, true, func(ctx context.Context) (bool, error) {
		var state string
		if nodes == nil {
			nodes, state = r.a.nodeClient()
		}
		var node *corev1.Node
		if nodes != nil {
			node, state = getNode(ctx, nodes, r.cfg.NodeName)
		}
		if node != nil && (!wantSubnet || node.Spec.PodCIDR != "") {
			r.podCIDR = node.Spec.PodCIDR
			return true, nil
		}
		if node != nil {
			state = "Node " + node.Name + " has no pod subnet (spec.podCIDR) yet"
		}
		if state != last {
			log.Info("waiting", "for", state)
			last = state
		}
		return false, nil
	})
	if err != nil {
		return plan.Errorf(plan.ErrNotJoined, "waited %s: %s. Look at the kubelet's log, %s; its client certificate request (CSR) is approved by the winnode operator, which must run and reach the workload cluster",
			r.o.Timeout, last, plan.KubeletLogFile)
	}
	r.doc.PodCIDR = r.podCIDR
	log.Info("the Node is registered", "node", r.cfg.NodeName, "podCIDR", r.podCIDR)
	return nil
}

// getNode reads the Node; nil and why not while it cannot.
func getNode(ctx context.Context, nodes *rest.RESTClient, name string) (*corev1.Node, string) {
	node := &corev1.Node{}
	err := nodes.Get().Resource("nodes").Name(name).VersionedParams(&metav1.GetOptions{}, metav1.ParameterCodec).Do(ctx).Into(node)
	switch {
	case apierrors.IsNotFound(err):
		return nil, "the kubelet has its certificate; Node " + name + " is not registered yet"
	case err != nil:
		return nil, "reading Node " + name + " with the node's credentials: " + err.Error()
	}
	return node, ""
}

// coreV1 is a scheme of the core API group alone: the client below reads
// Nodes and nothing else, and client-go's kubernetes/scheme, which knows
// every API group, would double the agent's size.
var coreV1 = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	metav1.AddToGroupVersion(s, corev1.SchemeGroupVersion)
	return s
}()

// nodeClient is a client of the core API with the node's own credentials, from
// the kubeconfig the kubelet wrote after its TLS bootstrap; nil and why
// not while there is none. The kubelet names its certificate and key by
// Windows paths, which are mapped through the platform (on a simulated
// host, into its C:\ folder).
func (a *Agent) nodeClient() (*rest.RESTClient, string) {
	wp, _ := winpath.Parse(plan.KubeconfigPath)
	local, err := a.Platform.LocalPath(wp)
	if err != nil {
		return nil, err.Error()
	}
	data, err := os.ReadFile(local)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "the kubelet has not written " + plan.KubeconfigPath + " yet: its certificate request is not approved"
	}
	if err != nil {
		return nil, err.Error()
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", plan.KubeconfigPath, err)
	}
	for _, c := range cfg.Clusters {
		c.CertificateAuthority = a.hostFileRef(c.CertificateAuthority, filepath.Dir(local))
	}
	for _, u := range cfg.AuthInfos {
		for _, ref := range []*string{&u.ClientCertificate, &u.ClientKey, &u.TokenFile} {
			*ref = a.hostFileRef(*ref, filepath.Dir(local))
		}
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", plan.KubeconfigPath, err)
	}
	rc.UserAgent = "winnode-agent-join"
	rc.APIPath = "/api"
	rc.GroupVersion = &corev1.SchemeGroupVersion
	rc.NegotiatedSerializer = serializer.NewCodecFactory(coreV1).WithoutConversion()
	rc.WrapTransport = a.nodeTransport
	c, err := rest.RESTClientFor(rc)
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", plan.KubeconfigPath, err)
	}
	return c, ""
}

// hostFileRef maps a file a kubeconfig names: a Windows path through the
// platform, a relative one against the kubeconfig's folder.
func (a *Agent) hostFileRef(ref, dir string) string {
	if ref == "" {
		return ""
	}
	if wp, err := winpath.Parse(ref); err == nil {
		if local, err := a.Platform.LocalPath(wp); err == nil {
			return local
		}
	}
	if !filepath.IsAbs(ref) {
		return filepath.Join(dir, ref)
	}
	return ref
}
