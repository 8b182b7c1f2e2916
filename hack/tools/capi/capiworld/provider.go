package main

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"

	"github.com/winnode/winnode/hack/tools/winsimcloud"
)

// The winsim providers' kinds (CRDs in hack/tools/capi/config/crd). Their
// objects are handled unstructured, read field by field and written with
// JSON merge patches, as Cluster API itself handles its providers' objects:
// the program needs no generated Go API for them.
var (
	infraGroupVersion        = schema.GroupVersion{Group: "infrastructure.winsim.winnode.io", Version: "v1alpha1"}
	controlPlaneGroupVersion = schema.GroupVersion{Group: "controlplane.winsim.winnode.io", Version: "v1alpha1"}

	winsimClusterGVK      = infraGroupVersion.WithKind("WinsimCluster")
	winsimMachineGVK      = infraGroupVersion.WithKind("WinsimMachine")
	winsimControlPlaneGVK = controlPlaneGroupVersion.WithKind("WinsimControlPlane")
)

// The condition types the winsim objects report: Ready on the
// infrastructure kinds and Available on the control plane, the types
// Cluster API mirrors into the Cluster's and Machine's conditions.
const (
	readyCondition     = "Ready"
	availableCondition = "Available"
)

// addWinsimProviders adds the three controllers of the simulated
// providers. apiEndpoint is the API server's URL, the control plane
// endpoint that WinsimCluster reports; workloadKubeconfig is what
// WinsimControlPlane writes into the <cluster>-kubeconfig Secret.
func addWinsimProviders(mgr manager.Manager, cloud *winsimcloud.Client, apiEndpoint string, workloadKubeconfig []byte) error {
	endpoint, err := parseEndpoint(apiEndpoint)
	if err != nil {
		return err
	}
	if err := addClusterController(mgr, endpoint); err != nil {
		return fmt.Errorf("adding the WinsimCluster controller: %w", err)
	}
	if err := addControlPlaneController(mgr, workloadKubeconfig); err != nil {
		return fmt.Errorf("adding the WinsimControlPlane controller: %w", err)
	}
	if err := addMachineController(mgr, cloud); err != nil {
		return fmt.Errorf("adding the WinsimMachine controller: %w", err)
	}
	return nil
}

// newObject is an empty unstructured object of kind gvk, for Get and For.
func newObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// logf logs one line of a winsim provider; each says "simulated", since no
// real infrastructure is behind it.
func logf(u *unstructured.Unstructured, format string, args ...any) {
	klog.InfofDepth(1, "winsim (simulated provider): %s %s/%s: "+format,
		append([]any{u.GetKind(), u.GetNamespace(), u.GetName()}, args...)...)
}

// ownerCluster is the Cluster that owns u (Cluster API's Cluster
// controller sets the reference on the objects its Cluster refers to), or
// nil when none does yet.
func ownerCluster(ctx context.Context, c client.Client, u *unstructured.Unstructured) (*clusterv1.Cluster, error) {
	return util.GetOwnerCluster(ctx, c, metav1.ObjectMeta{Namespace: u.GetNamespace(), OwnerReferences: u.GetOwnerReferences()})
}

// ownerName is the name of u's owner of Cluster API's kind, or "".
func ownerName(u *unstructured.Unstructured, kind string) string {
	for _, ref := range u.GetOwnerReferences() {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil && gv.Group == clusterv1.GroupVersion.Group && ref.Kind == kind {
			return ref.Name
		}
	}
	return ""
}

// condition is a condition of u's kind, the generation observed u's.
func condition(u *unstructured.Unstructured, typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: u.GetGeneration()}
}

// findCondition is u's condition of type typ, or nil.
func findCondition(u *unstructured.Unstructured, typ string) *metav1.Condition {
	var conds []metav1.Condition
	if raw, ok, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); ok {
		if err := fromUnstructured(raw, &conds); err != nil {
			return nil
		}
	}
	return meta.FindStatusCondition(conds, typ)
}

// patchStatus merges status (the status fields to set) and conds into
// u's status through the status subresource. The conditions already on u
// are kept, each given condition replacing the one of its type (its
// transition time kept when its status did not change).
func patchStatus(ctx context.Context, c client.Client, u *unstructured.Unstructured, status map[string]any, conds ...metav1.Condition) error {
	var current []metav1.Condition
	if raw, ok, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); ok {
		if err := fromUnstructured(raw, &current); err != nil {
			return fmt.Errorf("%s %s/%s: reading status.conditions: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	for _, cond := range conds {
		meta.SetStatusCondition(&current, cond)
	}
	if status == nil {
		status = map[string]any{}
	}
	if len(conds) > 0 {
		status["conditions"] = current
	}
	return mergePatch(ctx, c, u, map[string]any{"status": status}, true)
}

// mergePatch sends patch as a JSON merge patch of u, to u itself or, with
// status, to its status subresource; u is updated from the answer.
func mergePatch(ctx context.Context, c client.Client, u *unstructured.Unstructured, patch map[string]any, status bool) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	p := client.RawPatch(types.MergePatchType, data)
	if status {
		err = c.Status().Patch(ctx, u, p)
	} else {
		err = c.Patch(ctx, u, p)
	}
	if err != nil {
		return fmt.Errorf("patching %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// fromUnstructured decodes raw (a value of an unstructured object) into out.
func fromUnstructured(raw any, out any) error {
	data, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// clusterToObject maps a Cluster to the object of kind gvk its ref names
// (infrastructureRef or controlPlaneRef), so that a change of the Cluster
// reaches its provider objects.
func clusterToObject(gvk schema.GroupVersionKind, ref func(*clusterv1.Cluster) clusterv1.ContractVersionedObjectReference) handler.MapFunc {
	return func(_ context.Context, o client.Object) []ctrl.Request {
		cluster, ok := o.(*clusterv1.Cluster)
		if !ok {
			return nil
		}
		r := ref(cluster)
		if !r.IsDefined() || r.GroupKind() != gvk.GroupKind() {
			return nil
		}
		return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: cluster.Namespace, Name: r.Name}}}
	}
}
