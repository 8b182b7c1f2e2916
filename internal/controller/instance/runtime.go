package instance

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/openshift"
	"github.com/winnode/winnode/internal/registries"
)

// The container runtime's part of the instance controller: each instance's
// mode (spec.containerRuntime), and rechecking every instance when what
// its plan says about registries, the proxy and trusted CAs changes, so
// that the change reaches every host (hosts.toml: no restart; the proxy:
// the services restart; internal/configure runtime.go reads them).

// On OpenShift the mirror sets and the Proxy; on Kubernetes the
// ConfigMaps and Secrets of the operator's namespace, which the cache
// already holds (roles.yaml).
// +kubebuilder:rbac:groups=config.openshift.io,resources=imagedigestmirrorsets;imagetagmirrorsets;proxies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=openshift-config,resources=secrets,resourceNames=pull-secret,verbs=get
// +kubebuilder:rbac:groups="",namespace=openshift-config,resources=configmaps,verbs=get

// EventReasonContainerRuntime is the Normal event of an instance given
// its mode by the operator.
const EventReasonContainerRuntime = "ContainerRuntime"

// setContainerRuntime gives an instance without spec.containerRuntime its
// mode, once: Existing when the operator had configured it before the
// field existed (its status has a phase: its host runs a containerd
// winnode never installed), else the operator's default. It is the
// one-time migration of instances configured before winnode managed
// containerd, done instance by instance on the operator's first start:
// each write is one patch of one field, a crash leaves the others to the
// next reconcile, and an instance with a mode is never touched again. It
// reports whether it wrote.
func (r *Reconciler) setContainerRuntime(ctx context.Context, inst *winnodev1.WindowsInstance) (bool, error) {
	if inst.Spec.ContainerRuntime != "" || inst.DeletionTimestamp != nil {
		return false, nil
	}
	mode, why := r.defaultRuntime(), "the operator's default (--container-runtime)"
	if inst.Status.Phase != "" {
		mode, why = winnodev1.ContainerRuntimeExisting, "it was configured before winnode managed containerd, so its host's own containerd stays as it is"
	}
	patch := client.MergeFromWithOptions(inst.DeepCopy(), client.MergeFromWithOptimisticLock{})
	inst.Spec.ContainerRuntime = mode
	if err := r.Client.Patch(ctx, inst, patch); err != nil {
		return false, fmt.Errorf("setting spec.containerRuntime of WindowsInstance %s: %w", inst.Name, err)
	}
	r.Recorder.Eventf(inst, nil, corev1.EventTypeNormal, EventReasonContainerRuntime, "Configure", "spec.containerRuntime set to %s: %s", mode, why)
	return true, nil
}

// defaultRuntime is the operator's --container-runtime (Managed when
// unset).
func (r *Reconciler) defaultRuntime() winnodev1.ContainerRuntime {
	if r.ContainerRuntime != "" {
		return r.ContainerRuntime
	}
	return winnodev1.ContainerRuntimeManaged
}

// watchRuntimeOpenShift rechecks every instance when a mirror set changes
// (its spec: generation) or the Proxy does (its status, which the cluster
// computes: any new version). Only metadata is watched.
func (r *Reconciler) watchRuntimeOpenShift(b *builder.Builder) *builder.Builder {
	meta := func(kind string) *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: kind})
		return m
	}
	for _, kind := range []string{"ImageDigestMirrorSet", "ImageTagMirrorSet"} {
		b = b.Watches(meta(kind), handler.EnqueueRequestsFromMapFunc(r.allInstances),
			builder.OnlyMetadata, builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	}
	return b.Watches(meta("Proxy"), handler.EnqueueRequestsFromMapFunc(r.allInstances), builder.OnlyMetadata,
		builder.WithPredicates(predicate.ResourceVersionChangedPredicate{},
			predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == openshift.ProxyName })))
}

// watchRuntimeKubernetes rechecks every instance when the
// windows-registries ConfigMap, the trusted CA ConfigMap or a registry
// credentials Secret of the operator's namespace changes.
func (r *Reconciler) watchRuntimeKubernetes(b *builder.Builder) *builder.Builder {
	inNamespace := func(match func(client.Object) bool) predicate.Predicate {
		return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.Namespace && match(o) })
	}
	b = b.Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.allInstances),
		builder.WithPredicates(predicate.ResourceVersionChangedPredicate{}, inNamespace(func(o client.Object) bool {
			return o.GetName() == registries.ConfigMapName || (r.TrustedCAConfigMap != "" && o.GetName() == r.TrustedCAConfigMap)
		})))
	return b.Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.allInstances),
		builder.WithPredicates(predicate.ResourceVersionChangedPredicate{}, inNamespace(func(o client.Object) bool {
			s, ok := o.(*corev1.Secret)
			return ok && s.Type == corev1.SecretTypeDockerConfigJson
		})))
}
