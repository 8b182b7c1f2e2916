package configure

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// Upgrades. A Ready host whose plan changes (a new payload, operator
// version or cluster fact) is upgraded in place. What that costs its Node
// depends on what changes, which plan.ChangedServices predicts from the
// agent's info:
//
//   - no service restarts (a new file nobody reads yet, a version-only
//     change): the files and plan are applied with the Node in service;
//   - services restart: the Node is cordoned and drained as `kubectl drain`
//     does, then upgraded, then uncordoned when Ready. At most
//     MaxUnavailable Windows nodes are out at once (--max-unavailable,
//     default 1); the others wait with condition Configured=False, reason
//     UpgradeWaiting.
//
// A node counts as unavailable while it is Upgrading, and while it is
// Failed after having been Ready once (a broken upgrade, a host that went
// down): like a Deployment's maxUnavailable, a rollout does not take more
// nodes out while earlier ones have not come back. A node that is itself
// unavailable (NotReady) is upgraded without waiting.

// DefaultMaxUnavailable is the default of --max-unavailable.
const DefaultMaxUnavailable = 1

// upgradeRecheck is how often a waiting upgrade looks for its turn when no
// other instance's change wakes it first (Configurer.UpgradeRecheck).
const upgradeRecheck = 15 * time.Second

// Rollout bounds the Windows nodes that disruptive upgrades take out of
// service at once. One Rollout is shared by every reconcile of an operator
// (the leader); its lock makes "count the unavailable nodes, then mark this
// one Upgrading" one step, and the count is read from the API server, so it
// holds across restarts of the operator.
type Rollout struct {
	// Reader reads WindowsInstances from the API server, not from a cache
	// that may lag behind the last admission.
	Reader client.Reader
	// MaxUnavailable is how many nodes may be unavailable at once (0:
	// DefaultMaxUnavailable).
	MaxUnavailable int

	mu sync.Mutex
}

// Admit runs begin (which must persist the instance as Upgrading) when
// fewer than MaxUnavailable other instances are unavailable, and returns
// nil. Otherwise it returns the names of those instances and runs nothing.
func (r *Rollout) Admit(ctx context.Context, name string, begin func() error) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	busy, err := r.busy(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(busy) >= r.max() {
		return busy, nil
	}
	return nil, begin()
}

// busy names the instances other than name that are out of service.
func (r *Rollout) busy(ctx context.Context, name string) ([]string, error) {
	var list winnodev1.WindowsInstanceList
	if err := r.Reader.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing WindowsInstances to count the nodes out of service: %w", err)
	}
	var busy []string
	for i := range list.Items {
		if list.Items[i].Name != name && Unavailable(&list.Items[i]) {
			busy = append(busy, list.Items[i].Name)
		}
	}
	return busy, nil
}

// full says whether the rollout has no room for name now.
func (r *Rollout) full(ctx context.Context, name string) (bool, error) {
	busy, err := r.busy(ctx, name)
	return len(busy) >= r.max(), err
}

func (r *Rollout) max() int {
	if r.MaxUnavailable <= 0 {
		return DefaultMaxUnavailable
	}
	return r.MaxUnavailable
}

// Unavailable says whether an instance's node is out of service for the
// rollout's count: being upgraded, or failed after it had joined.
func Unavailable(inst *winnodev1.WindowsInstance) bool {
	if inst.DeletionTimestamp != nil {
		return false // leaving the cluster: not coming back either way
	}
	switch inst.Status.Phase {
	case winnodev1.PhaseUpgrading:
		return true
	case winnodev1.PhaseFailed:
		return inst.Status.JoinedAt != nil
	}
	return false
}

// beginUpgrade moves a Ready instance to Upgrading. An upgrade that restarts
// services of a Ready Node first waits for its turn in c.Rollout; while it
// waits, beginUpgrade returns false and a Result to call again. An instance
// already Upgrading (resumed after a restart) goes on.
func (c *Configurer) beginUpgrade(ctx context.Context, inst *winnodev1.WindowsInstance, node *corev1.Node, restarts []string, from, to string) (bool, Result, error) {
	if inst.Status.Phase == winnodev1.PhaseUpgrading {
		return true, Result{}, nil
	}
	begin := func() error {
		c.start(inst, winnodev1.PhaseUpgrading)
		if len(restarts) == 0 {
			c.event(inst, corev1.EventTypeNormal, string(winnodev1.PhaseUpgrading), "moving %s from plan %s to %s; no service restarts, the Node stays in service", inst.Spec.Address, from, to)
		} else {
			c.event(inst, corev1.EventTypeNormal, string(winnodev1.PhaseUpgrading), "moving %s from plan %s to %s; %s restart, so the Node is drained first", inst.Spec.Address, from, to, strings.Join(restarts, ", "))
		}
		return c.save(ctx, inst)
	}
	if len(restarts) == 0 || node == nil || !NodeReady(node) || c.Rollout == nil {
		return true, Result{}, begin()
	}
	busy, err := c.Rollout.Admit(ctx, inst.Name, begin)
	if err != nil {
		return false, Result{}, err
	}
	if busy == nil {
		return true, Result{}, nil
	}
	// The message names the nodes out of service when the wait began; it
	// is not rewritten as they come and go (that would be a status write
	// of every waiting instance at every turn of the rollout).
	head := fmt.Sprintf("plan %s restarts %s and waits for its turn", to, strings.Join(restarts, ", "))
	msg := fmt.Sprintf("%s: at most %d nodes out of service at a time (--max-unavailable); out of service when it began waiting: %s",
		head, c.Rollout.max(), strings.Join(busy, ", "))
	waiting := meta.FindStatusCondition(inst.Status.Conditions, winnodev1.ConditionConfigured)
	if waiting == nil || waiting.Reason != winnodev1.ReasonUpgradeWaiting || !strings.HasPrefix(waiting.Message, head+":") {
		c.event(inst, corev1.EventTypeNormal, winnodev1.ReasonUpgradeWaiting, "%s", msg)
		SetCondition(inst, winnodev1.ConditionConfigured, metav1.ConditionFalse, winnodev1.ReasonUpgradeWaiting, msg)
	}
	c.waited(inst)
	return false, Result{RequeueAfter: c.upgradeRecheck()}, c.save(ctx, inst)
}

// stillWaiting answers the recheck of an upgrade that waits for its turn
// without asking the host anything: while its Node stays Ready and the
// rollout has no room, nothing the host could say would let it go on, so
// a recheck costs one read of the Node and one list of the instances, no
// SSH connection and no write. When there is room (or the Node is not
// Ready, or a read fails) the instance is checked as any Ready one is.
func (c *Configurer) stillWaiting(ctx context.Context, inst *winnodev1.WindowsInstance) (bool, Result) {
	if c.Rollout == nil || inst.Status.Phase != winnodev1.PhaseReady {
		return false, Result{}
	}
	if cond := meta.FindStatusCondition(inst.Status.Conditions, winnodev1.ConditionConfigured); cond == nil || cond.Reason != winnodev1.ReasonUpgradeWaiting {
		return false, Result{}
	}
	if node, err := c.getNode(ctx, inst); err != nil || !NodeReady(node) {
		return false, Result{}
	}
	if full, err := c.Rollout.full(ctx, inst.Name); err != nil || !full {
		return false, Result{}
	}
	c.waited(inst)
	return true, Result{RequeueAfter: c.upgradeRecheck()}
}

// waited tells AfterStep that an upgrade looked for its turn and found
// none (StepWaited).
func (c *Configurer) waited(inst *winnodev1.WindowsInstance) {
	if c.AfterStep != nil {
		c.AfterStep(inst, StepWaited)
	}
}
