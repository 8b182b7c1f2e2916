package instance

import (
	"context"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// A pass must never start from a status older than the one the last pass
// wrote: it would redo a step the host has done (issue a second join
// credential, upload again). The cache can lag behind the reconciler's own
// writes, so each pass used to read its instance from the API server: one
// GET per pass, 5,000 a minute for 10,000 unreachable hosts retried every
// two minutes (docs/performance.md). Passes now read the cache, and go to
// the API server only when the cache holds another version than the last
// one this reconciler wrote or read: the cache has not caught up with a
// write yet, or someone else wrote (then the cache is newer, and one read
// makes its version the known one). A retry that writes nothing, as a host
// that is still down, reads the cache only.

// freshReads reads instances from the cache unless it may be behind.
type freshReads struct {
	cache client.Reader // the manager's cache
	live  client.Reader // the API server
	mu    sync.Mutex
	known map[string]string // instance name → the last resourceVersion seen
}

func newFreshReads(cache, live client.Reader) *freshReads {
	return &freshReads{cache: cache, live: live, known: map[string]string{}}
}

// get reads the instance key names into inst: from the cache when it holds
// the last version seen (or none was seen since the operator started: no
// write of this process can be missing from it), else from the API server.
// An instance gone is forgotten.
func (f *freshReads) get(ctx context.Context, key client.ObjectKey, inst *winnodev1.WindowsInstance) error {
	err := f.cache.Get(ctx, key, inst)
	if err == nil {
		f.mu.Lock()
		seen, ok := f.known[key.Name]
		f.mu.Unlock()
		if !ok || seen == inst.ResourceVersion {
			f.saw(inst)
			return nil
		}
		err = f.live.Get(ctx, key, inst)
	}
	if client.IgnoreNotFound(err) == nil && err != nil {
		f.forget(key.Name)
	}
	if err == nil {
		f.saw(inst)
	}
	return err
}

// saw records inst's version as the newest this reconciler knows: call it
// after a pass, whose writes updated inst's resourceVersion.
func (f *freshReads) saw(inst *winnodev1.WindowsInstance) {
	f.mu.Lock()
	f.known[inst.Name] = inst.ResourceVersion
	f.mu.Unlock()
}

func (f *freshReads) forget(name string) {
	f.mu.Lock()
	delete(f.known, name)
	f.mu.Unlock()
}
