package capibootstrap

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
)

// names remembers the computer names this process gave, so that two
// configs reconciled one after the other cannot both get a name the cache
// does not show yet.
type names struct {
	mu    sync.Mutex
	given map[string]types.NamespacedName // computer name -> config
}

// computerName returns the config's computer name: the one its status
// records, or the first of ComputerName(..., attempt) for attempt 0, 1, ...
// that no other WinnodeConfig in the cluster (any namespace: all their hosts
// join this one cluster) has. ok is false when maxAttempts names are all
// taken.
func (r *Reconciler) computerName(ctx context.Context, cfg *bootstrapv1.WinnodeConfig, machine string) (name string, ok bool, err error) {
	me := types.NamespacedName{Namespace: cfg.Namespace, Name: cfg.Name}
	if n := cfg.Status.ComputerName; n != "" && CheckComputerName(n) == nil {
		r.names.remember(n, me)
		return n, true, nil
	}
	var list bootstrapv1.WinnodeConfigList
	if err := r.Cache.List(ctx, &list); err != nil {
		return "", false, fmt.Errorf("listing WinnodeConfigs: %w", err)
	}
	taken := map[string]bool{}
	for _, other := range list.Items {
		if other.Namespace != cfg.Namespace || other.Name != cfg.Name {
			taken[other.Status.ComputerName] = true
		}
	}
	r.names.mu.Lock()
	defer r.names.mu.Unlock()
	for attempt := range maxAttempts {
		n := ComputerName(cfg.Namespace, machine, cfg.Spec.ComputerNamePrefix, attempt)
		if holder, given := r.names.given[n]; taken[n] || given && holder != me {
			continue
		}
		if r.names.given == nil {
			r.names.given = map[string]types.NamespacedName{}
		}
		r.names.given[n] = me
		return n, true, nil
	}
	return "", false, nil
}

func (n *names) remember(name string, cfg types.NamespacedName) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.given == nil {
		n.given = map[string]types.NamespacedName{}
	}
	n.given[name] = cfg
}

// forget drops the names given to a config that no longer exists.
func (n *names) forget(cfg types.NamespacedName) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for name, holder := range n.given {
		if holder == cfg {
			delete(n.given, name)
		}
	}
}
