// Package optional turns on the operator's optional parts — the OpenShift
// Machine API source (internal/machineapi), the Cluster API bootstrap
// provider (internal/capibootstrap) and the Cluster API Machine source
// (internal/capisource) — where the cluster serves their APIs, one way for
// all of them (NewManager): asked once, before the manager is built;
// their API types added to the manager's scheme; what they watch added to
// the manager's own cache; their controllers registered.
//
// Why the manager's cache and not one of each part's own: one set of
// informers, started, synced and stopped with the manager's, and one place
// that says what the operator caches where. The reason the parts once
// built their own caches still holds, and is kept here: the operator's
// cache covers its own namespace only (namespaced objects such as the key
// Secrets), while the parts watch objects of other namespaces — Machines
// of openshift-machine-api only (the operator may list them there alone),
// Cluster API's objects in every namespace. controller-runtime's by-object
// cache configuration (cache.Options.ByObject) gives each of those types
// its own namespaces in the manager's cache. It has to be decided before
// the manager exists (the cache asks the API server about each type when
// it is built, and fails on a type the server does not serve), which is
// why the parts are asked about first.
package optional

import (
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/winnode/winnode/internal/platform"
)

// Part is one optional part of the operator.
type Part struct {
	// Name names the part in the log: "<Name> on", or "<Name> off: <why>".
	Name string
	// Requires are the resources the API server must serve for the part to
	// be on. They are asked for once, when the manager is built: installing
	// the APIs later takes a restart of the operator.
	Requires []schema.GroupVersionResource
	// TurnOn, when set, ends the "off" line: what to do to turn the part on.
	TurnOn string
	// AddToScheme adds the part's API types to the manager's scheme.
	AddToScheme []func(*runtime.Scheme) error
	// Cache is what the part watches outside the operator namespace: for
	// each type, the namespaces the manager's cache keeps of it
	// (cache.AllNamespaces for every namespace).
	Cache map[client.Object]cache.ByObject
	// Setup registers the part's controllers with the manager, whose cache
	// covers Cache.
	Setup func(mgr ctrl.Manager) error
}

// NewManager builds a manager on cfg from mo, with every part of parts
// that the API server serves: its API types added to mo.Scheme (a new
// scheme with client-go's types when nil), its Cache to mo.Cache.ByObject,
// its controllers registered. A part it does not serve is logged with the
// reason and changes nothing.
func NewManager(cfg *rest.Config, mo ctrl.Options, parts ...Part) (ctrl.Manager, error) {
	log := mo.Logger
	if log.GetSink() == nil {
		log = ctrl.Log
	}
	log = log.WithName("setup")
	on, err := served(cfg, parts, func(p Part, why string) {
		msg := p.Name + " off: " + why
		if p.TurnOn != "" {
			msg += "; " + p.TurnOn
		}
		log.Info(msg)
	})
	if err != nil {
		return nil, err
	}
	if mo.Scheme == nil {
		mo.Scheme = runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(mo.Scheme); err != nil {
			return nil, err
		}
	}
	if mo.Cache.ByObject, err = addParts(mo.Scheme, mo.Cache.ByObject, on); err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	for _, p := range on {
		if err := p.Setup(mgr); err != nil {
			return nil, fmt.Errorf("setting up the %s: %w", p.Name, err)
		}
		log.Info(p.Name+" on", "apis", fmt.Sprint(p.Requires))
	}
	return mgr, nil
}

// served are the parts whose resources the API server of cfg serves; off
// hears about each other one, with the reason.
func served(cfg *rest.Config, parts []Part, off func(p Part, why string)) ([]Part, error) {
	if len(parts) == 0 {
		return nil, nil
	}
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building a discovery client: %w", err)
	}
	var on []Part
	for _, p := range parts {
		ok, why, err := platform.Serves(d, p.Requires...)
		if err != nil {
			return nil, fmt.Errorf("checking for the APIs of the %s: %w", p.Name, err)
		}
		if !ok {
			off(p, why)
			continue
		}
		on = append(on, p)
	}
	return on, nil
}

// addParts adds the parts' API types to scheme and returns byObject (not
// changed) with their Cache. Two parts that cache the same type share it,
// in the namespaces of both.
func addParts(scheme *runtime.Scheme, byObject map[client.Object]cache.ByObject, parts []Part) (map[client.Object]cache.ByObject, error) {
	for _, p := range parts {
		for _, add := range p.AddToScheme {
			if err := add(scheme); err != nil {
				return nil, fmt.Errorf("adding the API types of the %s: %w", p.Name, err)
			}
		}
	}
	out := maps.Clone(byObject)
	seen := map[schema.GroupVersionKind]client.Object{}
	for obj := range out {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return nil, err
		}
		seen[gvk] = obj
	}
	for _, p := range parts {
		for obj, c := range p.Cache {
			gvk, err := apiutil.GVKForObject(obj, scheme)
			if err != nil {
				return nil, fmt.Errorf("the %s caches %T: %w", p.Name, obj, err)
			}
			if out == nil {
				out = map[client.Object]cache.ByObject{}
			}
			if prev, ok := seen[gvk]; ok {
				if out[prev].Namespaces == nil || c.Namespaces == nil {
					return nil, fmt.Errorf("the %s caches %s, which is cached already: both must name their namespaces", p.Name, gvk.Kind)
				}
				merged := out[prev]
				merged.Namespaces = maps.Clone(merged.Namespaces)
				maps.Copy(merged.Namespaces, c.Namespaces)
				out[prev] = merged
				continue
			}
			seen[gvk] = obj
			out[obj] = c
		}
	}
	return out, nil
}
