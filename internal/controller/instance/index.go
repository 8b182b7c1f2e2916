package instance

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/identity"
	"github.com/winnode/winnode/internal/inventory"
)

// The conflict checks of a connection (address, host key, node name:
// internal/identity) compared each instance with every other one, read
// from the cache: at 10,000 instances each retry of an unreachable host
// went through the whole fleet (docs/performance.md). The cache keeps an
// index instead (controller-runtime's field indexer: a client-go indexer
// beside the informer's store, kept up to date with it), under which each
// instance is filed by its endpoint, pinned host key and node name; a
// check reads only the instances filed under its keys.

// PeerIndex is the name of the cache's index of WindowsInstances by the
// keys their conflict checks look up.
const PeerIndex = "winnode.io/peers"

// peerKeys are the keys an instance is filed under.
func peerKeys(o client.Object) []string {
	wi, ok := o.(*winnodev1.WindowsInstance)
	if !ok {
		return nil
	}
	keys := inventory.EndpointKeys(inventory.Endpoint{Address: wi.Spec.Address, Port: wi.SSHPort()})
	return append(keys, identity.Keys(wi)...)
}

// IndexPeers adds PeerIndex to the manager's cache; it must be called
// before the manager starts.
func IndexPeers(ctx context.Context, mgr ctrl.Manager) error {
	return mgr.GetFieldIndexer().IndexField(ctx, &winnodev1.WindowsInstance{}, PeerIndex, peerKeys)
}

// peers lists the instances filed under any of keys, each once, as the
// cache holds them (read only: not copied).
func peers(ctx context.Context, c client.Reader, keys []string) ([]winnodev1.WindowsInstance, error) {
	var out []winnodev1.WindowsInstance
	seen := map[string]bool{}
	for _, k := range keys {
		var list winnodev1.WindowsInstanceList
		if err := c.List(ctx, &list, client.MatchingFields{PeerIndex: k}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		for _, wi := range list.Items {
			if !seen[wi.Name] {
				seen[wi.Name] = true
				out = append(out, wi)
			}
		}
	}
	return out, nil
}
