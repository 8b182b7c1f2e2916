package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate/csr"
	"k8s.io/client-go/util/keyutil"

	"github.com/winnode/winnode/internal/testkit"
	"github.com/winnode/winnode/internal/testkit/builder"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv("TESTENV_CHILD"); mode != "" {
		os.Exit(runChild(mode))
	}
	Main(m)
}

func admin(t *testing.T, env *Env) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// createBootstrapToken stores a bootstrap token Secret the way kubeadm does.
func createBootstrapToken(t *testing.T, c kubernetes.Interface, id, secret string, expires time.Time, usages ...string) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: metav1.NamespaceSystem},
		Type:       corev1.SecretTypeBootstrapToken,
		StringData: map[string]string{
			"token-id":                       id,
			"token-secret":                   secret,
			"usage-bootstrap-authentication": "true",
			"expiration":                     expires.UTC().Format(time.RFC3339),
		},
	}
	for _, u := range usages {
		s.StringData["usage-bootstrap-"+u] = "true"
	}
	if _, err := c.CoreV1().Secrets(metav1.NamespaceSystem).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A kubelet's join, done by hand against the real control plane: a bootstrap
// token client asks for a client certificate, an admin approves, the
// controller manager signs, and the node's own identity is then bound by the
// Node authorizer and NodeRestriction.
func TestBootstrapTokenJoinAndNodeRestriction(t *testing.T) {
	env := Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := admin(t, env)

	createBootstrapToken(t, c, "abcdef", "0123456789abcdef", time.Now().Add(time.Hour))
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "testenv-bootstrappers"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:bootstrappers"}},
	}
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	boot := env.AnonymousConfig()
	boot.BearerToken = "abcdef.0123456789abcdef"
	bootClient := kubernetes.NewForConfigOrDie(boot)

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	csrPEM, err := cert.MakeCSR(key, &pkix.Name{CommonName: "system:node:win-a", Organization: []string{"system:nodes"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	// The bootstrap token authenticates: the CSR is created as its user.
	var reqName string
	var reqUID types.UID
	// RBAC caches are eventually consistent: Unauthorized and Forbidden
	// for a moment.
	testkit.Eventually(t, 30*time.Second, "the bootstrap token client creating a CSR", func() (bool, string) {
		reqName, reqUID, err = csr.RequestCertificateWithContext(ctx, bootClient, csrPEM, "", certificatesv1.KubeAPIServerClientKubeletSignerName, nil, usages, key)
		return err == nil, fmt.Sprint(err)
	})
	got, err := c.CertificatesV1().CertificateSigningRequests().Get(ctx, reqName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Username != "system:bootstrap:abcdef" {
		t.Fatalf("CSR requested by %q, want system:bootstrap:abcdef", got.Spec.Username)
	}

	got.Status.Conditions = append(got.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "TestApproved",
	})
	if _, err := c.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, reqName, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	certPEM, err := csr.WaitForCertificate(ctx, bootClient, reqName, reqUID)
	if err != nil {
		t.Fatalf("kube-controller-manager did not issue the certificate: %v", err)
	}

	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	node := &rest.Config{Host: env.Host, TLSClientConfig: rest.TLSClientConfig{CAFile: env.CACertFile, CertData: certPEM, KeyData: keyPEM}}
	nodeClient := kubernetes.NewForConfigOrDie(node)
	if _, err := nodeClient.CoreV1().Nodes().Create(ctx, builder.Node("win-a").Build(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("node creating its own Node: %v", err)
	}
	if _, err := c.CoreV1().Nodes().Create(ctx, builder.Node("win-b").Build(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"labels":{"stolen":"yes"}}}`)
	_, err = nodeClient.CoreV1().Nodes().Patch(ctx, "win-b", types.MergePatchType, patch, metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("node win-a modifying node win-b: got %v, want Forbidden (NodeRestriction)", err)
	}
	if _, err := nodeClient.CoreV1().Nodes().Patch(ctx, "win-a", types.MergePatchType, []byte(`{"metadata":{"labels":{"mine":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("node win-a modifying itself: %v", err)
	}
}

func TestExpiredBootstrapTokenIsCleanedUp(t *testing.T) {
	env := Get(t)
	c := admin(t, env)
	createBootstrapToken(t, c, "expird", "0123456789abcdef", time.Now().Add(-time.Minute))
	testkit.Eventually(t, time.Minute, "the token cleaner deleting the expired bootstrap token", func() (bool, string) {
		_, err := c.CoreV1().Secrets(metav1.NamespaceSystem).Get(context.Background(), "bootstrap-token-expird", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func TestClusterInfoIsPublicAndSigned(t *testing.T) {
	env := Get(t)
	c := admin(t, env)
	createBootstrapToken(t, c, "signme", "0123456789abcdef", time.Now().Add(time.Hour), "signing")
	anon := kubernetes.NewForConfigOrDie(env.AnonymousConfig())
	testkit.Eventually(t, time.Minute, "cluster-info readable anonymously and signed by the bootstrap signer", func() (bool, string) {
		cm, err := anon.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(context.Background(), "cluster-info", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, signed := cm.Data["jws-kubeconfig-signme"]
		return signed && strings.Contains(cm.Data["kubeconfig"], env.Host), fmt.Sprintf("signed: %t, kubeconfig:\n%s", signed, cm.Data["kubeconfig"])
	})
}

// runChild is the body of a child test process used by
// TestNoProcessLeftBehind: it starts a control plane, writes its PIDs to the
// file named by TESTENV_PIDS, then ends the way mode says.
func runChild(mode string) int {
	env, err := Start(context.Background(), Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	var pids []string
	for _, p := range env.PIDs() {
		pids = append(pids, strconv.Itoa(p))
	}
	if err := os.WriteFile(os.Getenv("TESTENV_PIDS"), []byte(strings.Join(pids, " ")), 0o600); err != nil {
		return 4
	}
	switch mode {
	case "panic":
		panic("testenv child: panicking with a running control plane")
	case "stop":
		if err := env.Stop(); err != nil {
			return 5
		}
	}
	return 0
}

// No etcd, kube-apiserver, kube-controller-manager or kube-scheduler outlives its test
// process: neither after a clean stop nor after a panic.
func TestNoProcessLeftBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two extra control planes")
	}
	for _, mode := range []string{"stop", "panic"} {
		t.Run(mode, func(t *testing.T) {
			pidFile := t.TempDir() + "/pids"
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "TESTENV_CHILD="+mode, "TESTENV_PIDS="+pidFile)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if mode == "stop" && err != nil || mode == "panic" && !errors.As(err, &exit) {
				t.Fatalf("child (%s): %v\n%s", mode, err, out)
			}
			pids := readPIDs(pidFile)
			if len(pids) != len(controlPlaneBinaries) {
				t.Fatalf("child (%s) recorded PIDs %v, want %d\n%s", mode, pids, len(controlPlaneBinaries), out)
			}
			testkit.Eventually(t, 20*time.Second, fmt.Sprintf("the control-plane processes %v of the child (%s) to end", pids, mode), func() (bool, string) {
				for _, pid := range pids {
					if processAlive(pid) && !isZombie(pid) {
						return false, fmt.Sprintf("process %d still runs", pid)
					}
				}
				return true, ""
			})
		})
	}
}

func isZombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// A component that exits because its port was taken is told apart from
// other failures: Start begins again on new ports only for that.
func TestPortTakenIsRecognised(t *testing.T) {
	for msg, taken := range map[string]bool{
		"listen tcp 127.0.0.1:41003: bind: address already in use": true,
		"open /nonexistent/ca.crt: no such file or directory":      false,
	} {
		p, err := startProcess(t.TempDir(), "component", "/bin/sh", "-c", "echo '"+msg+"' >&2; exit 1")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = waitFor(ctx, p, "it to serve", func(context.Context) (bool, error) { return false, nil })
		cancel()
		if err == nil || errors.Is(err, errPortTaken) != taken {
			t.Errorf("component that said %q: %v; port taken: want %v", msg, err, taken)
		}
	}
}
