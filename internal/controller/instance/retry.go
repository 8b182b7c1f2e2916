package instance

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// When and in which order instances are reconciled again.
//
// controller-runtime v0.25's priority queue (pkg/controller/priorityqueue)
// hands out the ready item of the highest priority first, oldest first
// within a priority, and an item keeps the priority it was handed out
// with when it is requeued after an error or a RequeueAfter, unless the
// Result names another. Events are queued at priority 0, but the objects
// of the informer's first list at handler.LowPriority (-100). So with
// errors returned to controller-runtime, an instance that had one pass
// triggered by an event (its own spec patch, a Node's readiness) was
// retried at 0 forever after, ahead of every instance of the first list
// not yet tried: at 3,000 instances the reachable hosts of the first
// list had had no pass after 16 minutes while unreachable ones were
// retried (docs/performance.md). Retrying at the lowest priority instead
// would not do with errors alone: a failed pass still logged twice
// (controller-runtime's "Reconciler error" with a stack trace beside ours),
// and the retries of hosts that failed together came back together.
//
// So a pass never returns its error to controller-runtime. nextPass
// decides, and the reconciler logs one line per failure:
//
//   - a failed pass is retried after a capped exponential backoff with
//     jitter (retryDelay: the delays of hosts that failed together drift
//     apart, so a whole subnet down does not come back as one burst), at
//     RetryPriority: below both events and the first list, so a host not
//     tried yet, or one that changed, is always served before retries;
//   - a pass that succeeded and asks to be called again (a Node awaited,
//     the periodic check of a Ready host) is queued at
//     handler.LowPriority, with the first list: after events, before
//     retries.

// The informer's first list is queued at handler.LowPriority by
// controller-runtime's handler; but in an operator started beside a fleet
// being created, the hosts of that first list then waited behind every
// instance created after it (at 3,000 and 10,000 instances, the reachable
// hosts created first had their first pass last). So the instance
// controller queues an instance's creation by what it needs
// (createPriority): a first configuration before anything else, whether
// the instance came in the first list or later; from the first list, a
// configured instance's check with the periodic checks, and an instance
// that had failed with the retries.

// createPriority is the queue priority of an instance's creation event
// (initialList: the informer's first list, at the operator's start).
func createPriority(inst *winnodev1.WindowsInstance, initialList bool) int {
	switch {
	case inst == nil || inst.Status.Phase == "" || !initialList:
		return 0
	case inst.Status.Phase == winnodev1.PhaseFailed:
		return RetryPriority
	}
	return handler.LowPriority
}

// enqueueByState is the instance controller's handler of WindowsInstance
// events: controller-runtime's (handler.EnqueueRequestForObject), with a
// creation queued at createPriority.
type enqueueByState struct {
	handler.EnqueueRequestForObject
}

func (*enqueueByState) Create(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)}
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		q.Add(req)
		return
	}
	inst, _ := e.Object.(*winnodev1.WindowsInstance)
	pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(createPriority(inst, e.IsInInitialList))}, req)
}

// RetryPriority is the queue priority of a failed instance's retry: below
// handler.LowPriority (the informer's first list) and 0 (events).
const RetryPriority = handler.LowPriority - 100

// retryJitter is the largest share of a retry's delay taken off at random.
const retryJitter = 0.25

// retryDelay is the delay before the retry that follows failures
// consecutive failed passes (1: the first failure): base doubled at each
// failure, capped at max, less up to retryJitter of it as u (in [0, 1))
// says. It never exceeds max, and is never below (1-retryJitter) of the
// capped delay.
func retryDelay(failures int, base, max time.Duration, u float64) time.Duration {
	d := base
	for i := 1; i < failures && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	return d - time.Duration(float64(d)*retryJitter*u)
}

// nextPass is what the queue does after a pass: the Result to return,
// given whether the pass failed, its own requeue (RequeueAfter of a pass
// that succeeded) and, for a failure, the delay retryDelay gave.
func nextPass(failed bool, requeueAfter, retryIn time.Duration) ctrl.Result {
	if failed {
		return ctrl.Result{RequeueAfter: retryIn, Priority: ptr.To(RetryPriority)}
	}
	if requeueAfter <= 0 {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: requeueAfter, Priority: ptr.To(handler.LowPriority)}
}

// retries counts each instance's consecutive failed passes.
type retries struct {
	base, max time.Duration
	mu        sync.Mutex
	failures  map[string]int
}

func newRetries(base, max time.Duration) *retries {
	return &retries{base: base, max: max, failures: map[string]int{}}
}

// failed counts a failed pass of the instance and returns the delay of
// its retry and the failures so far.
func (r *retries) failed(name string) (time.Duration, int) {
	r.mu.Lock()
	r.failures[name]++
	n := r.failures[name]
	r.mu.Unlock()
	return retryDelay(n, r.base, r.max, rand.Float64()), n
}

// succeeded forgets the instance's failures.
func (r *retries) succeeded(name string) {
	r.mu.Lock()
	delete(r.failures, name)
	r.mu.Unlock()
}
