package configure

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit/builder"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// FindNode is the one rule by which the operator and winnodectl find a
// host's Node; it runs against the real API server.
func TestFindNode(t *testing.T) {
	kube, err := kubernetes.NewForConfig(testenv.Get(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := fmt.Sprintf("findnode-%d", os.Getpid()%100000)
	addNode := func(name string, addrs ...corev1.NodeAddress) {
		t.Helper()
		if _, err := kube.CoreV1().Nodes().Create(ctx, builder.Node(name).Build(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		// The node lifecycle controller writes a new Node too (taints), so
		// the status update re-reads on conflict.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Status.Addresses = addrs
			_, err = kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	addNode(p+"-a", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.71"},
		corev1.NodeAddress{Type: corev1.NodeHostName, Address: strings.ToUpper(p) + "-A.corp.example.com"})
	addNode(p+"-b", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.72"})
	addNode(p+"-c", corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "192.0.2.72"})

	for _, tc := range []struct {
		what, nodeName, address string
		want                    string // node name, "" for none
		err                     string
	}{
		{"by node name", strings.ToUpper(p) + "-A", "192.0.2.99", p + "-a", ""},
		{"by a node name that does not exist", p + "-gone", "192.0.2.71", "", ""},
		{"by internal IP", "", "192.0.2.71", p + "-a", ""},
		{"by another address, case-insensitively", "", p + "-a.corp.example.com", p + "-a", ""},
		{"by the node's name given as address", "", strings.ToUpper(p) + "-B", p + "-b", ""},
		{"nowhere", "", "192.0.2.73", "", ""},
		{"on several Nodes", "", "192.0.2.72", "", "several Nodes have the name or address 192.0.2.72"},
	} {
		node, err := FindNode(ctx, kube, tc.nodeName, tc.address)
		got := ""
		if node != nil {
			got = node.Name
		}
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.what, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.what, err)
		case got != tc.want:
			t.Errorf("%s: found %q, want %q", tc.what, got, tc.want)
		}
	}
}
