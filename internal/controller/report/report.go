// Package report writes the events the operator's controllers report one
// by one (Event), and names what a controller was doing when it reported
// (the events.k8s.io "action"). Each controller names its own reasons.
package report

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Event actions (events.k8s.io/v1 "action": what the controller was
// doing). Reasons (CamelCase) are each controller's own. Messages name the
// object, say what is wrong and what to do; they never contain key material
// or tokens.
const (
	ActionParse   = "Parse"
	ActionCreate  = "Create"
	ActionDelete  = "Delete"
	ActionUpdate  = "Update"
	ActionApprove = "Approve"
)

// reportingController names the operator in the events it writes itself.
const reportingController = "winnode.io/winnode-operator"

// Event writes one events.k8s.io/v1 Event about obj, always a new one.
//
// Why not client-go's recorders: they merge events that differ only in their
// message (events.k8s.io recorders into one series; core/v1 recorders after
// ten similar events), which would fold the one-per-entry warnings about the
// windows-instances ConfigMap into one. Those warnings go through here.
func Event(ctx context.Context, c client.Client, obj client.Object, eventType, reason, action, note string) error {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return err
	}
	ns := obj.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	if len(note) > 1000 { // the API's limit is 1 kB
		note = note[:1000] + "..."
	}
	host, _ := os.Hostname()
	instance := reportingController + "-" + host
	if len(instance) > 128 {
		instance = instance[:128]
	}
	ev := &eventsv1.Event{
		// Named as client-go names events: <object>.<unique hex>.
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x%04x", obj.GetName(), time.Now().UnixNano(), rand.IntN(1<<16)), Namespace: ns},
		EventTime:           metav1.NewMicroTime(time.Now()),
		ReportingController: reportingController,
		ReportingInstance:   instance,
		Action:              action,
		Reason:              reason,
		Type:                eventType,
		Note:                note,
		Regarding: corev1.ObjectReference{
			APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
			Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion(),
		},
	}
	if err := c.Create(ctx, ev); err != nil {
		return fmt.Errorf("recording event %s about %s %s: %w", reason, gvk.Kind, obj.GetName(), err)
	}
	return nil
}
