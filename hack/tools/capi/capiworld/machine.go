package main

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"

	"github.com/winnode/winnode/hack/tools/winsimcloud"
)

// machineFinalizer holds a WinsimMachine until its instance is deleted from
// the simulated cloud.
const machineFinalizer = "infrastructure.winsim.winnode.io/winsimmachine"

// The reasons of a WinsimMachine's Ready condition.
const (
	reasonWaitingForCluster        = "WaitingForCluster"
	reasonWaitingForInfrastructure = "WaitingForClusterInfrastructure"
	reasonWaitingForBootstrapData  = "WaitingForBootstrapData"
	reasonBootstrapDataUnreadable  = "BootstrapDataUnreadable"
	reasonInstanceNotCreated       = "InstanceNotCreated"
	reasonProvisioned              = "Provisioned"
)

// machineReconciler is the WinsimMachine controller (infrastructure
// contract: InfraMachine). For a WinsimMachine whose Machine has its
// bootstrap data, it creates the instance named after the Machine in the
// simulated cloud, booting from the image spec.image names with the
// bootstrap data Secret's "value" as its user data, and reports the
// instance: spec.providerID, status.addresses
// (InternalIP, and the host name as InternalDNS and Hostname) and
// status.initialization.provisioned, which Cluster API copies into the
// Machine. Deleting the WinsimMachine deletes the instance.
type machineReconciler struct {
	client   client.Client
	cloud    *winsimcloud.Client
	recorder record.EventRecorder
}

func addMachineController(mgr manager.Manager, cloud *winsimcloud.Client) error {
	r := &machineReconciler{client: mgr.GetClient(), cloud: cloud, recorder: mgr.GetEventRecorderFor("winsimmachine-controller")}
	return ctrl.NewControllerManagedBy(mgr).
		Named("winsimmachine").
		For(newObject(winsimMachineGVK)).
		// The Machine gets its bootstrap data Secret's name after the
		// WinsimMachine exists, from the bootstrap provider.
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(util.MachineToInfrastructureMapFunc(winsimMachineGVK))).
		// The Cluster's infrastructure is provisioned after its Machines
		// may exist.
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.clusterToMachines)).
		Complete(r)
}

// clusterToMachines maps a Cluster to its WinsimMachines (Cluster API
// labels each with the cluster's name).
func (r *machineReconciler) clusterToMachines(ctx context.Context, o client.Object) []ctrl.Request {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(winsimMachineGVK.GroupVersion().WithKind(winsimMachineGVK.Kind + "List"))
	if err := r.client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingLabels{clusterv1.ClusterNameLabel: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the Cluster's WinsimMachines", "cluster", client.ObjectKeyFromObject(o))
		return nil
	}
	var reqs []ctrl.Request
	for _, wm := range list.Items {
		reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&wm)})
	}
	return reqs
}

func (r *machineReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wm := newObject(winsimMachineGVK)
	if err := r.client.Get(ctx, req.NamespacedName, wm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !wm.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, wm)
	}
	// The Machine controller sets the owner reference, an update of this
	// object that brings it back here.
	name := ownerName(wm, "Machine")
	if name == "" {
		return ctrl.Result{}, nil
	}
	m := &clusterv1.Machine{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: wm.GetNamespace(), Name: name}, m); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cluster := &clusterv1.Cluster{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.ClusterName}, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.wait(ctx, wm, reasonWaitingForCluster, fmt.Sprintf("Cluster %s does not exist", m.Spec.ClusterName))
		}
		return ctrl.Result{}, err
	}
	if err := r.ensureFinalizer(ctx, wm); err != nil {
		return ctrl.Result{}, err
	}
	if provisioned, _, _ := unstructured.NestedBool(wm.Object, "status", "initialization", "provisioned"); provisioned {
		return ctrl.Result{}, nil
	}
	if !ptr.Deref(cluster.Status.Initialization.InfrastructureProvisioned, false) {
		return ctrl.Result{}, r.wait(ctx, wm, reasonWaitingForInfrastructure, fmt.Sprintf("Cluster %s's infrastructure is not provisioned yet", cluster.Name))
	}
	if m.Spec.Bootstrap.DataSecretName == nil {
		return ctrl.Result{}, r.wait(ctx, wm, reasonWaitingForBootstrapData, fmt.Sprintf("Machine %s has no bootstrap data yet (spec.bootstrap.dataSecretName)", m.Name))
	}
	return ctrl.Result{}, r.provision(ctx, wm, m)
}

// provision creates the Machine's instance with its bootstrap data and
// records it. The cloud returns an existing instance of that name as it is,
// so a repeated pass (after a crash between the call and the patches)
// creates nothing.
func (r *machineReconciler) provision(ctx context.Context, wm *unstructured.Unstructured, m *clusterv1.Machine) error {
	userData, err := r.bootstrapData(ctx, m)
	if err != nil {
		return r.fail(ctx, wm, reasonBootstrapDataUnreadable, err)
	}
	image, _, _ := unstructured.NestedString(wm.Object, "spec", "image")
	inst, err := r.cloud.CreateFrom(ctx, m.Name, image, userData)
	if err != nil {
		return r.fail(ctx, wm, reasonInstanceNotCreated, fmt.Errorf("creating the simulated instance %s: %w", m.Name, err))
	}
	if id, _, _ := unstructured.NestedString(wm.Object, "spec", "providerID"); id != inst.ProviderID {
		if err := mergePatch(ctx, r.client, wm, map[string]any{"spec": map[string]any{"providerID": inst.ProviderID}}, false); err != nil {
			return err
		}
	}
	status := map[string]any{
		"initialization": map[string]any{"provisioned": true},
		"addresses": []clusterv1.MachineAddress{
			{Type: clusterv1.MachineInternalIP, Address: inst.Address},
			{Type: clusterv1.MachineInternalDNS, Address: inst.Hostname},
			{Type: clusterv1.MachineHostName, Address: inst.Hostname},
		},
		"instanceID":    inst.ID,
		"instanceState": inst.State,
	}
	ready := condition(wm, readyCondition, metav1.ConditionTrue, reasonProvisioned, fmt.Sprintf("simulated instance %s is %s", inst.ID, inst.State))
	if err := patchStatus(ctx, r.client, wm, status, ready); err != nil {
		return err
	}
	// A pass on a stale cache may get here twice for one instance (the
	// cloud answers the second with the same instance): "running", not
	// "created".
	logf(wm, "instance %s (%s, %s) of Machine %s is %s, provider ID %s", inst.ID, inst.Hostname, inst.Address, m.Name, inst.State, inst.ProviderID)
	r.recorder.Eventf(wm, corev1.EventTypeNormal, "InstanceRunning", "Simulated instance %s (%s) is %s", inst.ID, inst.Address, inst.State)
	return nil
}

// bootstrapData is the "value" of the Machine's bootstrap data Secret, read
// from the API server (the manager caches no Secrets but kubeconfigs).
func (r *machineReconciler) bootstrapData(ctx context.Context, m *clusterv1.Machine) ([]byte, error) {
	s := &corev1.Secret{}
	key := client.ObjectKey{Namespace: m.Namespace, Name: *m.Spec.Bootstrap.DataSecretName}
	if err := r.client.Get(ctx, key, s); err != nil {
		return nil, fmt.Errorf("reading the bootstrap data Secret %s: %w", key, err)
	}
	data := s.Data["value"]
	if len(data) == 0 {
		return nil, fmt.Errorf("the bootstrap data Secret %s has no key \"value\"", key)
	}
	return data, nil
}

// wait reports why the WinsimMachine is not provisioned yet (Ready=False),
// unless its Ready condition says so already.
func (r *machineReconciler) wait(ctx context.Context, wm *unstructured.Unstructured, reason, message string) error {
	if c := findCondition(wm, readyCondition); c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason && c.Message == message {
		return nil
	}
	return patchStatus(ctx, r.client, wm, nil, condition(wm, readyCondition, metav1.ConditionFalse, reason, message))
}

// fail reports err on the WinsimMachine (a Warning event, Ready=False with
// reason) and returns it, so that the pass is retried with back-off.
func (r *machineReconciler) fail(ctx context.Context, wm *unstructured.Unstructured, reason string, err error) error {
	r.recorder.Eventf(wm, corev1.EventTypeWarning, reason, "%v", err)
	return errors.Join(err, r.wait(ctx, wm, reason, err.Error()))
}

// ensureFinalizer adds machineFinalizer before anything is created in the
// cloud.
func (r *machineReconciler) ensureFinalizer(ctx context.Context, wm *unstructured.Unstructured) error {
	if controllerutil.ContainsFinalizer(wm, machineFinalizer) {
		return nil
	}
	orig := wm.DeepCopy()
	controllerutil.AddFinalizer(wm, machineFinalizer)
	return r.client.Patch(ctx, wm, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

// reconcileDelete deletes the instance named after the owner Machine, then
// releases the WinsimMachine. An instance the cloud does not know is gone
// already.
func (r *machineReconciler) reconcileDelete(ctx context.Context, wm *unstructured.Unstructured) error {
	if !controllerutil.ContainsFinalizer(wm, machineFinalizer) {
		return nil
	}
	if name := ownerName(wm, "Machine"); name != "" {
		if err := r.cloud.Delete(ctx, name); err != nil {
			r.recorder.Eventf(wm, corev1.EventTypeWarning, "InstanceNotDeleted", "%v", err)
			return err
		}
		logf(wm, "instance %s deleted", name)
		r.recorder.Eventf(wm, corev1.EventTypeNormal, "InstanceDeleted", "Deleted simulated instance %s", name)
	}
	orig := wm.DeepCopy()
	controllerutil.RemoveFinalizer(wm, machineFinalizer)
	return r.client.Patch(ctx, wm, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}
