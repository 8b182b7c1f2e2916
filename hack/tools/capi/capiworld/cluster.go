package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"
)

// WinsimCluster is the infrastructure of a Cluster in the simulated cloud.
// The cloud has nothing to build for a cluster (no network, no load
// balancer): the control plane exists already, it is the test world's API
// server, so a WinsimCluster owned by a Cluster is provisioned at once,
// with that API server as its control plane endpoint unless its spec names
// one (infrastructure contract: InfraCluster).
type clusterReconciler struct {
	client   client.Client
	endpoint clusterv1.APIEndpoint
}

func addClusterController(mgr manager.Manager, endpoint clusterv1.APIEndpoint) error {
	r := &clusterReconciler{client: mgr.GetClient(), endpoint: endpoint}
	return ctrl.NewControllerManagedBy(mgr).
		Named("winsimcluster").
		For(newObject(winsimClusterGVK)).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(clusterToObject(winsimClusterGVK,
			func(c *clusterv1.Cluster) clusterv1.ContractVersionedObjectReference { return c.Spec.InfrastructureRef }))).
		Complete(r)
}

func (r *clusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wc := newObject(winsimClusterGVK)
	if err := r.client.Get(ctx, req.NamespacedName, wc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// Nothing in the cloud to tear down, so no finalizer and nothing to do
	// on deletion.
	if !wc.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil
	}
	cluster, err := ownerCluster(ctx, r.client, wc)
	if cluster == nil || apierrors.IsNotFound(err) {
		// The Cluster controller sets the owner reference, an update of
		// this object that brings it back here.
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if provisioned, _, _ := unstructured.NestedBool(wc.Object, "status", "initialization", "provisioned"); provisioned {
		return ctrl.Result{}, nil
	}
	if wait, err := r.waitForKubeconfig(ctx, wc, cluster); wait || err != nil {
		return ctrl.Result{RequeueAfter: time.Second}, err
	}
	if host, _, _ := unstructured.NestedString(wc.Object, "spec", "controlPlaneEndpoint", "host"); host == "" {
		patch := map[string]any{"spec": map[string]any{"controlPlaneEndpoint": map[string]any{"host": r.endpoint.Host, "port": r.endpoint.Port}}}
		if err := mergePatch(ctx, r.client, wc, patch, false); err != nil {
			return ctrl.Result{}, err
		}
	}
	host, _, _ := unstructured.NestedString(wc.Object, "spec", "controlPlaneEndpoint", "host")
	port, _, _ := unstructured.NestedInt64(wc.Object, "spec", "controlPlaneEndpoint", "port")
	ready := condition(wc, readyCondition, metav1.ConditionTrue, "Provisioned",
		"simulated: the test world's API server is the control plane endpoint")
	if err := patchStatus(ctx, r.client, wc, map[string]any{"initialization": map[string]any{"provisioned": true}}, ready); err != nil {
		return ctrl.Result{}, err
	}
	logf(wc, "provisioned for Cluster %s, control plane endpoint %s", cluster.Name, net.JoinHostPort(host, strconv.FormatInt(port, 10)))
	return ctrl.Result{}, nil
}

// waitForKubeconfig says whether the WinsimCluster must wait for the
// Cluster's kubeconfig Secret, which the control-plane stand-in writes, and
// reports the wait (Ready=False). The infrastructure is ready for Cluster
// API once Cluster API can reach the cluster: reporting it provisioned
// earlier makes the ClusterCache's first connection fail, and the
// ClusterCache retries only every 30 s. A Cluster without a control plane
// object gets no such Secret from the winsim providers: no wait then.
func (r *clusterReconciler) waitForKubeconfig(ctx context.Context, wc *unstructured.Unstructured, cluster *clusterv1.Cluster) (bool, error) {
	if !cluster.Spec.ControlPlaneRef.IsDefined() {
		return false, nil
	}
	name := secret.Name(cluster.Name, secret.Kubeconfig)
	err := r.client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: name}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		return false, err
	}
	waiting := condition(wc, readyCondition, metav1.ConditionFalse, "WaitingForKubeconfig",
		fmt.Sprintf("simulated: waiting for Secret %s, which the control plane provider writes", name))
	if c := findCondition(wc, readyCondition); c != nil && c.Reason == waiting.Reason {
		return true, nil
	}
	return true, patchStatus(ctx, r.client, wc, nil, waiting)
}

// parseEndpoint is the host and port of the API server's URL.
func parseEndpoint(apiServer string) (clusterv1.APIEndpoint, error) {
	u, err := url.Parse(apiServer)
	if err != nil || u.Hostname() == "" {
		return clusterv1.APIEndpoint{}, fmt.Errorf("the kubeconfig's server %q is not a URL with a host", apiServer)
	}
	port := 443
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return clusterv1.APIEndpoint{}, fmt.Errorf("the kubeconfig's server %q: port: %w", apiServer, err)
		}
	}
	return clusterv1.APIEndpoint{Host: u.Hostname(), Port: int32(port)}, nil
}

// WinsimControlPlane stands in for a control-plane provider (control-plane
// contract: ControlPlane). Cluster API calls a Cluster's control plane
// initialized — which it waits for before it watches the workload
// cluster's Nodes and sets Machines' nodeRefs — only when a control-plane
// provider says so, or when one of the Cluster's own control-plane Machines
// has a Node. The test world's control plane is running already and is no
// Machine, so this stand-in only reports it: initialized, Available and
// managed outside the cluster's Nodes (externalManagedControlPlane), and
// writes, as the contract asks of a control-plane provider, the
// <cluster>-kubeconfig Secret through which Cluster API reaches the
// workload cluster (the program's own kubeconfig: the same cluster). A
// WinsimControlPlane whose spec.workloadKubeconfigSecret names a Secret
// of its namespace stands for another cluster's control plane, already
// running (the test world's second control plane): the kubeconfig under
// that Secret's key "value" is the one written, so Cluster API (and
// winnode) reach that cluster, as with a control plane a provider made
// elsewhere.
type controlPlaneReconciler struct {
	client     client.Client
	reader     client.Reader
	kubeconfig []byte
}

func addControlPlaneController(mgr manager.Manager, kubeconfig []byte) error {
	r := &controlPlaneReconciler{client: mgr.GetClient(), reader: mgr.GetAPIReader(), kubeconfig: kubeconfig}
	return ctrl.NewControllerManagedBy(mgr).
		Named("winsimcontrolplane").
		For(newObject(winsimControlPlaneGVK)).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(clusterToObject(winsimControlPlaneGVK,
			func(c *clusterv1.Cluster) clusterv1.ContractVersionedObjectReference { return c.Spec.ControlPlaneRef }))).
		Complete(r)
}

func (r *controlPlaneReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cp := newObject(winsimControlPlaneGVK)
	if err := r.client.Get(ctx, req.NamespacedName, cp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cp.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil
	}
	cluster, err := ownerCluster(ctx, r.client, cp)
	if cluster == nil || apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	// Written on every pass, so that a deleted or changed Secret comes back.
	if err := r.writeKubeconfig(ctx, cp, cluster); err != nil {
		return ctrl.Result{}, err
	}
	initialized, _, _ := unstructured.NestedBool(cp.Object, "status", "initialization", "controlPlaneInitialized")
	external, _, _ := unstructured.NestedBool(cp.Object, "status", "externalManagedControlPlane")
	if initialized && external {
		return ctrl.Result{}, nil
	}
	available := condition(cp, availableCondition, metav1.ConditionTrue, "Available",
		"simulated stand-in: the test world's control plane is serving")
	status := map[string]any{
		"initialization": map[string]any{"controlPlaneInitialized": true},
		// No Node of the cluster is a control plane member: without this
		// Cluster API would refuse to drain and delete a deleted Machine's
		// Node, to keep the last control plane member (contract:
		// ControlPlane machines).
		"externalManagedControlPlane": true,
	}
	if err := patchStatus(ctx, r.client, cp, status, available); err != nil {
		return ctrl.Result{}, err
	}
	logf(cp, "reports the test world's control plane initialized and available for Cluster %s", cluster.Name)
	return ctrl.Result{}, nil
}

// writeKubeconfig creates or updates the Cluster's kubeconfig Secret in
// Cluster API's format: named <cluster>-kubeconfig, type
// cluster.x-k8s.io/secret, labelled with the cluster's name (Cluster API's
// managers cache only Secrets so labelled), the kubeconfig under key
// "value", controlled by the control plane object.
func (r *controlPlaneReconciler) writeKubeconfig(ctx context.Context, cp *unstructured.Unstructured, cluster *clusterv1.Cluster) error {
	kubeconfig, whose := r.kubeconfig, "the test world's admin kubeconfig: the workload cluster is this cluster"
	if from, _, _ := unstructured.NestedString(cp.Object, "spec", "workloadKubeconfigSecret"); from != "" {
		var src corev1.Secret
		if err := r.reader.Get(ctx, client.ObjectKey{Namespace: cp.GetNamespace(), Name: from}, &src); err != nil {
			return fmt.Errorf("reading Secret %s/%s (spec.workloadKubeconfigSecret): %w", cp.GetNamespace(), from, err)
		}
		if len(src.Data[secret.KubeconfigDataName]) == 0 {
			return fmt.Errorf("Secret %s/%s (spec.workloadKubeconfigSecret) has no key %q", cp.GetNamespace(), from, secret.KubeconfigDataName)
		}
		kubeconfig, whose = src.Data[secret.KubeconfigDataName], "the kubeconfig of Secret "+from+": another cluster's control plane"
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: secret.Name(cluster.Name, secret.Kubeconfig)}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.client, s, func() error {
		s.Type = clusterv1.ClusterSecretType
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[clusterv1.ClusterNameLabel] = cluster.Name
		s.Data = map[string][]byte{secret.KubeconfigDataName: kubeconfig}
		return controllerutil.SetControllerReference(cp, s, r.client.Scheme())
	})
	if err != nil {
		return fmt.Errorf("writing Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	if op != controllerutil.OperationResultNone {
		logf(cp, "Secret %s %s (%s)", s.Name, op, whose)
	}
	return nil
}

// workloadKubeconfig is the kubeconfig at path reduced to its current
// context, with the certificates it names inlined, so that it works from a
// Secret.
func workloadKubeconfig(path string) ([]byte, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", path, err)
	}
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: inlining its files: %w", path, err)
	}
	return clientcmd.Write(*cfg)
}
