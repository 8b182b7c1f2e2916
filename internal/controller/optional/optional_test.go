package optional

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func namespaces(ns ...string) cache.ByObject {
	m := map[string]cache.Config{}
	for _, n := range ns {
		m[n] = cache.Config{}
	}
	return cache.ByObject{Namespaces: m}
}

// The parts that are on add their types to the scheme and their objects to
// the cache's by-object configuration, without changing the caller's map;
// two parts that cache one type share it in the namespaces of both.
func TestAddParts(t *testing.T) {
	scheme := runtime.NewScheme()
	caller := map[client.Object]cache.ByObject{&corev1.Secret{}: namespaces("ops")}
	added := false
	parts := []Part{
		{Name: "a", AddToScheme: []func(*runtime.Scheme) error{func(s *runtime.Scheme) error {
			added = true
			return clientgoscheme.AddToScheme(s)
		}}, Cache: map[client.Object]cache.ByObject{&corev1.Pod{}: namespaces("x")}},
		{Name: "b", Cache: map[client.Object]cache.ByObject{&corev1.Pod{}: namespaces("y"), &corev1.Secret{}: namespaces("z")}},
	}
	got, err := addParts(scheme, caller, parts)
	if err != nil {
		t.Fatal(err)
	}
	if !added {
		t.Error("the first part's types were not added to the scheme")
	}
	if len(caller) != 1 || len(caller[firstOf[*corev1.Secret](caller)].Namespaces) != 1 {
		t.Errorf("the caller's map changed: %v", caller)
	}
	want := map[string][]string{"Pod": {"x", "y"}, "Secret": {"ops", "z"}}
	if len(got) != len(want) {
		t.Fatalf("%d types cached, want %d: %v", len(got), len(want), got)
	}
	for obj, c := range got {
		kind := kindOf(obj)
		if ns := slices.Sorted(maps.Keys(c.Namespaces)); !slices.Equal(ns, want[kind]) {
			t.Errorf("%s cached in %v, want %v", kind, ns, want[kind])
		}
	}
}

// A type one part caches in the default namespaces (no namespaces given)
// cannot be shared with another part.
func TestAddPartsRefusesAnAmbiguousShare(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	parts := []Part{
		{Name: "a", Cache: map[client.Object]cache.ByObject{&corev1.Pod{}: {}}},
		{Name: "b", Cache: map[client.Object]cache.ByObject{&corev1.Pod{}: namespaces("y")}},
	}
	if _, err := addParts(scheme, nil, parts); err == nil || !strings.Contains(err.Error(), "the b caches Pod") {
		t.Errorf("addParts = %v, want an error naming part b and Pod", err)
	}
}

func firstOf[T client.Object](m map[client.Object]cache.ByObject) client.Object {
	for obj := range m {
		if _, ok := obj.(T); ok {
			return obj
		}
	}
	return nil
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *corev1.Pod:
		return "Pod"
	case *corev1.Secret:
		return "Secret"
	}
	return "?"
}
