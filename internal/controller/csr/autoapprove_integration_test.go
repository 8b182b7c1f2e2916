package csr

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/winnode/winnode/internal/bootstrap"
	"github.com/winnode/winnode/internal/controller/internal/controllertest"
	"github.com/winnode/winnode/internal/csrapproval"
	"github.com/winnode/winnode/internal/testkit"
)

// calls is an events.EventRecorder that keeps the name of each object it
// is asked to write an event about, as it is asked, and passes the event
// on (the recorder writes it later, in a goroutine of its own).
type calls struct {
	events.EventRecorder
	mu    sync.Mutex
	names []string
}

func (c *calls) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if o, ok := regarding.(metav1.Object); ok {
		c.mu.Lock()
		c.names = append(c.names, o.GetName())
		c.mu.Unlock()
	}
	c.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

func (c *calls) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, got := range c.names {
		if got == name {
			n++
		}
	}
	return n
}

// TestAutoApprovalWarning: against the real API server, a ClusterRoleBinding
// that lets kube-controller-manager auto-approve node client certificates
// for winnode's bootstrappers group gets a Warning event when the operator
// starts; one for another group does not.
func TestAutoApprovalWarning(t *testing.T) {
	w := controllertest.NewWorld(t)
	ctx := context.Background()
	bind := func(name, group string) {
		b := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: csrapproval.NodeClientRole},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
		}
		if _, err := w.Kube.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = w.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	bypass, harmless := w.Namespace+"-autoapprove-winnode", w.Namespace+"-autoapprove-other"
	bind(bypass, bootstrap.Group)
	bind(harmless, w.Namespace+"-some-other-group")

	// The check runs once, when the manager starts it: once it returned,
	// every event it was going to write has been asked for.
	recorder := &calls{}
	checked := make(chan struct{})
	w.StartManager(t, func(mgr ctrl.Manager) error {
		recorder.EventRecorder = mgr.GetEventRecorder("winnode-csr-approver")
		warner := &AutoApprovalWarner{Kube: w.Kube, Recorder: recorder}
		return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			defer close(checked)
			return warner.Start(ctx)
		}))
	})
	testkit.Eventually(t, 30*time.Second, "the auto-approval check to have run", func() (bool, string) {
		select {
		case <-checked:
			return true, "it returned"
		default:
			return false, "it has not returned"
		}
	})
	if n := recorder.count(bypass); n != 1 {
		t.Errorf("%d warnings asked for about %s, want one", n, bypass)
	}
	if n := recorder.count(harmless); n != 0 {
		t.Errorf("a binding for another group got %d warnings asked for", n)
	}
	testkit.Eventually(t, 30*time.Second, "a warning on "+bypass, func() (bool, string) {
		evs, err := w.EventsFor(ctx, metav1.NamespaceDefault, bypass, EventReasonAutoApprovalBypass)
		return err == nil && len(evs) == 1, fmt.Sprintf("%d events (%v)", len(evs), err)
	})
	evs, err := w.EventsFor(ctx, metav1.NamespaceDefault, harmless, EventReasonAutoApprovalBypass)
	if err != nil || len(evs) != 0 {
		t.Fatalf("a binding for another group got %d warnings (%v)", len(evs), err)
	}
}
