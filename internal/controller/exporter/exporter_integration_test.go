package exporter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/controller/internal/controllertest"
	"github.com/winnode/winnode/internal/metricstls"
	"github.com/winnode/winnode/internal/testkit"
)

func TestMain(m *testing.M) { controllertest.Main(m) }

// windowsNode creates a Windows Node at ip, Ready or not.
func windowsNode(t *testing.T, w *controllertest.World, name, ip string, ready bool) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelOSStable: "windows"}}}
	if err := w.Client.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Client.Delete(context.Background(), n) })
	setNode(t, w, name, ip, ready)
}

// setNode sets a Node's InternalIP and Ready condition.
func setNode(t *testing.T, w *controllertest.World, name, ip string, ready bool) {
	t.Helper()
	ctx := context.Background()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	// The node lifecycle controller writes the Node too (its taints).
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := w.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: ip}}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		return w.Client.Status().Update(ctx, n)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// instance creates a WindowsInstance whose node is node.
func instance(t *testing.T, w *controllertest.World, name, node string) {
	t.Helper()
	ctx := context.Background()
	wi := &winnodev1.WindowsInstance{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: winnodev1.WindowsInstanceSpec{Address: "10.9.9.9", Username: "Administrator"}}
	if err := w.Client.Create(ctx, wi); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.ForgetInstance(name) })
	wi.Status.NodeName = node
	if err := w.Client.Status().Update(ctx, wi); err != nil {
		t.Fatal(err)
	}
}

// sliceNodes are the node names the Service's slices list, by address.
func sliceNodes(ctx context.Context, w *controllertest.World) (map[string]string, []string, error) {
	var list discoveryv1.EndpointSliceList
	if err := w.Client.List(ctx, &list, client.InNamespace(w.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: ServiceName}); err != nil {
		return nil, nil, err
	}
	got := map[string]string{}
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
		for _, e := range s.Endpoints {
			if e.NodeName == nil || e.TargetRef == nil || e.TargetRef.Kind != "Node" || e.TargetRef.Name != *e.NodeName || len(s.Ports) != 1 || *s.Ports[0].Port != 9182 {
				return nil, nil, fmt.Errorf("slice %s: endpoint %+v, ports %+v", s.Name, e, s.Ports)
			}
			got[e.Addresses[0]] = *e.NodeName
		}
	}
	slices.Sort(names)
	return got, names, nil
}

// Against the real control plane, as the operator's generated RBAC: the
// Service without a selector and the published CA appear; the slices list
// exactly the Ready Windows nodes of WindowsInstances at their InternalIP,
// follow nodes as they become Ready, lose their instance or go away; a
// loopback InternalIP is left out (the API server refuses it in a slice);
// a slice edited or added by hand is put back.
func TestEndpointSlicesFollowTheWindowsNodes(t *testing.T) {
	w := controllertest.NewWorld(t)
	ctx := context.Background()
	op := w.OperatorConfig(t)
	p := w.Namespace // node names of this test only
	windowsNode(t, w, p+"-a", "10.77.0.1", true)
	windowsNode(t, w, p+"-b", "10.77.0.2", false)
	windowsNode(t, w, p+"-c", "127.0.0.77", true)
	windowsNode(t, w, p+"-d", "10.77.0.4", true) // no instance: not winnode's
	instance(t, w, p+"-ia", p+"-a")
	instance(t, w, p+"-ib", p+"-b")
	instance(t, w, p+"-ic", p+"-c")
	w.StartManagerAs(t, op, func(mgr ctrl.Manager) error {
		return (&Reconciler{Client: mgr.GetClient(), Namespace: w.Namespace, CA: &metricstls.Store{Client: mgr.GetClient(), Live: mgr.GetAPIReader(), Namespace: w.Namespace}}).SetupWithManager(mgr)
	})

	want := func(what string, expect map[string]string) {
		t.Helper()
		testkit.Eventually(t, 30*time.Second, what, func() (bool, string) {
			got, names, err := sliceNodes(ctx, w)
			if err != nil {
				return false, err.Error()
			}
			return fmt.Sprint(got) == fmt.Sprint(expect) && slices.Equal(names, []string{ServiceName + "-0"}), fmt.Sprintf("slices %v list %v", names, got)
		})
	}
	want("node a only", map[string]string{"10.77.0.1": p + "-a"})

	var svc corev1.Service
	if err := w.Client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: ServiceName}, &svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Selector != nil || svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 9182 || svc.Labels["app.kubernetes.io/name"] != LabelName {
		t.Errorf("Service %+v %v", svc.Spec, svc.Labels)
	}
	var cm corev1.ConfigMap
	if err := w.Client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: metricstls.CAConfigMapName}, &cm); err != nil || !strings.Contains(cm.Data[metricstls.CAKey], "BEGIN CERTIFICATE") {
		t.Errorf("the published CA: %v %v", cm.Data, err)
	}

	setNode(t, w, p+"-b", "10.77.0.2", true)
	want("a and b, once b is Ready", map[string]string{"10.77.0.1": p + "-a", "10.77.0.2": p + "-b"})
	w.ForgetInstance(p + "-ia")
	want("b only, once a's instance is gone", map[string]string{"10.77.0.2": p + "-b"})

	// Edited by hand: put back. Added by hand with winnode's labels: removed.
	var s discoveryv1.EndpointSlice
	if err := w.Client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: ServiceName + "-0"}, &s); err != nil {
		t.Fatal(err)
	}
	s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.77.0.99"}})
	if err := w.Client.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	extra := s.DeepCopy()
	extra.ObjectMeta = metav1.ObjectMeta{Name: ServiceName + "-7", Namespace: w.Namespace, Labels: s.Labels}
	if err := w.Client.Create(ctx, extra); err != nil {
		t.Fatal(err)
	}
	want("b only, after edits by hand", map[string]string{"10.77.0.2": p + "-b"})

	if err := w.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: p + "-b"}}); err != nil {
		t.Fatal(err)
	}
	want("no node, one empty slice", map[string]string{})
}
