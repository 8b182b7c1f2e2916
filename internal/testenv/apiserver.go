package testenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// startAPIServer issues the API server's and the clients' certificates,
// starts kube-apiserver on port with etcd at etcdURL, sets e.Config and
// e.KubeconfigPath, and waits until /readyz answers. It returns an admin
// client.
func (e *Env) startAPIServer(ctx context.Context, opts Options, etcdURL string, port int) (kubernetes.Interface, error) {
	if err := e.issueCertificates(); err != nil {
		return nil, err
	}
	e.Host = fmt.Sprintf("https://127.0.0.1:%d", port)
	p := e.pki.path
	e.KubeletClientCertFile, e.KubeletClientKeyFile = p("apiserver-kubelet-client.crt"), p("apiserver-kubelet-client.key")
	audit, err := e.auditFlags()
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + p("apiserver.crt"), "--tls-private-key-file=" + p("apiserver.key"),
		"--client-ca-file=" + p("ca.crt"),
		// Reaching kubelets (logs, exec, the node proxy) as a cluster
		// does: at their InternalIP, checked against the cluster CA that
		// signs their serving certificates, with a client certificate
		// the kubelet's webhook authorization accepts (kubeletClientRBAC).
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--kubelet-certificate-authority=" + p("ca.crt"),
		"--kubelet-client-certificate=" + p("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + p("apiserver-kubelet-client.key"),
		"--enable-bootstrap-token-auth=" + strconv.FormatBool(!opts.NoBootstrapTokenAuth),
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--service-account-key-file=" + p("sa.pub"),
		"--service-account-signing-key-file=" + p("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--allow-privileged=true",
		// A loopback advertise address is only allowed without the
		// endpoint reconciler (there is no kubernetes Service to point at us).
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + filepath.Join(e.Dir, "apiserver-certs"),
		"--profiling=false",
		"--v=1"}, audit...)
	apiserver, err := startProcess(e.Dir, "kube-apiserver", filepath.Join(e.binDir, "kube-apiserver"), args...)
	if err != nil {
		return nil, err
	}
	e.procs = append(e.procs, apiserver)

	e.Config = &rest.Config{
		Host: e.Host,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile: p("ca.crt"), CertFile: p("admin.crt"), KeyFile: p("admin.key"),
		},
		QPS: 200, Burst: 400,
	}
	e.KubeconfigPath = filepath.Join(e.Dir, "admin.kubeconfig")
	if err := writeKubeconfig(e.KubeconfigPath, e.Host, p("ca.crt"), "winnode-testenv-admin", p("admin.crt"), p("admin.key")); err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return nil, err
	}
	err = waitFor(ctx, apiserver, "kube-apiserver /readyz", func(ctx context.Context) (bool, error) {
		res := client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx)
		var code int
		res.StatusCode(&code)
		return code == http.StatusOK, nil
	})
	if err != nil {
		return nil, err
	}
	return client, kubeletClientRBAC(ctx, client)
}

// kubeletClientRBAC lets the API server's kubelet client
// (kube-apiserver-kubelet-client) use the kubelets' API, as kubeadm binds
// it: ClusterRole system:kubelet-api-admin.
func kubeletClientRBAC(ctx context.Context, client kubernetes.Interface) error {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver-kubelet-client"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: kubeletClientUser}},
	}
	_, err := client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("binding the API server's kubelet client to system:kubelet-api-admin: %w", err)
	}
	return nil
}

// kubeletClientUser is the API server's user on kubelets.
const kubeletClientUser = "kube-apiserver-kubelet-client"

// issueCertificates issues the API server's serving certificate and the
// client certificates of the admin and the controller manager.
func (e *Env) issueCertificates() error {
	if err := e.pki.issue("apiserver", "kube-apiserver", nil, true,
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(kubernetesServiceIP)},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}); err != nil {
		return err
	}
	if err := e.pki.issue("apiserver-kubelet-client", kubeletClientUser, nil, false, nil, nil); err != nil {
		return err
	}
	if err := e.pki.issue("admin", "winnode-testenv-admin", []string{"system:masters"}, false, nil, nil); err != nil {
		return err
	}
	if err := e.pki.issue("controller-manager", "system:kube-controller-manager", nil, false, nil, nil); err != nil {
		return err
	}
	return e.pki.issue("scheduler", "system:kube-scheduler", nil, false, nil, nil)
}
