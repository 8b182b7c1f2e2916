package instance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/workload"
)

// Deconfigurations run in a controller of their own, with workers of their
// own: however many hosts are being configured — slow ones included — a
// deleted instance is drained, its host cleaned, its Node deleted and its
// finalizer removed (and a Machine's termination released) without waiting
// for a free configuration worker. --max-concurrent-configurations does
// not count them: they are as many as the machine allows configurations
// (concurrency.go), whatever that cap.

// deconfigurer is the deconfiguration controller's reconciler.
type deconfigurer struct{ *Reconciler }

// setupDeconfigure registers the deconfiguration controller: instances
// being deleted, as many at once as the machine allows configurations.
func (r *Reconciler) setupDeconfigure(mgr ctrl.Manager) error {
	workers, _ := ConfigurationsAtOnce(r.machine(), 0)
	deleting := predicate.NewPredicateFuncs(func(o client.Object) bool { return !o.GetDeletionTimestamp().IsZero() })
	return ctrl.NewControllerManagedBy(mgr).
		Named("windowsinstance-deconfigure").
		For(&winnodev1.WindowsInstance{}, builder.WithPredicates(deleting, predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				// The start of the deletion, and a pinned host key cleared
				// while it waits.
				return e.ObjectOld.GetDeletionTimestamp().IsZero() || hostKeyCleared(e)
			},
		})).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: workers,
			RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, retryMax(r.RetryMax)),
		}).
		Complete(deconfigurer{r})
}

// Reconcile deconfigures one instance being deleted, once the
// configuration pass that may be running for it has stopped.
func (d deconfigurer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	if running := d.passes.stop(req.Name); running != nil {
		select {
		case <-running:
		case <-ctx.Done():
			return ctrl.Result{}, ctx.Err()
		case <-time.After(10 * time.Second):
			return ctrl.Result{RequeueAfter: time.Second}, nil // it is still stopping
		}
	}
	inst := &winnodev1.WindowsInstance{}
	if err := d.Reader.Get(ctx, req.NamespacedName, inst); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if inst.DeletionTimestamp == nil || !controllerutil.ContainsFinalizer(inst, winnodev1.Finalizer) {
		return ctrl.Result{}, nil
	}
	c, _ := d.configurer(ctx, inst, log)
	if err := d.inWorkloadCluster(ctx, inst, c); err != nil {
		var we *workload.Error
		switch {
		case !errors.As(err, &we):
			return ctrl.Result{}, err
		case we.Reason == workload.ReasonClusterNotFound:
			return d.forgetGoneCluster(ctx, inst, we)
		}
		return d.workloadUnusable(ctx, inst, we)
	}
	res, err := c.Deconfigure(ctx, inst)
	if err != nil || res.RequeueAfter > 0 {
		return ctrl.Result{RequeueAfter: res.RequeueAfter}, err
	}
	patch := client.MergeFrom(inst.DeepCopy())
	controllerutil.RemoveFinalizer(inst, winnodev1.Finalizer)
	if err := d.Client.Patch(ctx, inst, patch); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("removing finalizer %s from WindowsInstance %s: %w", winnodev1.Finalizer, inst.Name, err)
	}
	return ctrl.Result{}, nil
}

// hostKeyCleared: an administrator cleared the pinned host key.
func hostKeyCleared(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*winnodev1.WindowsInstance)
	n, ok2 := e.ObjectNew.(*winnodev1.WindowsInstance)
	return ok1 && ok2 && o.Status.HostKey != "" && n.Status.HostKey == ""
}

// passes are the configuration passes running now, by instance name.
type passes struct {
	mu      sync.Mutex
	running map[string]*pass
}

type pass struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// begin registers a configuration pass of instance name; the context it
// returns ends when a deletion stops the pass. done ends the pass.
func (p *passes) begin(ctx context.Context, name string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	ps := &pass{cancel: cancel, done: make(chan struct{})}
	p.mu.Lock()
	if p.running == nil {
		p.running = map[string]*pass{}
	}
	p.running[name] = ps
	p.mu.Unlock()
	return ctx, func() {
		p.mu.Lock()
		if p.running[name] == ps {
			delete(p.running, name)
		}
		p.mu.Unlock()
		cancel()
		close(ps.done)
	}
}

// stop stops the configuration pass of instance name, if one runs, and
// returns a channel closed once it has ended (nil when none runs).
func (p *passes) stop(name string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps := p.running[name]
	if ps == nil {
		return nil
	}
	ps.cancel()
	return ps.done
}
