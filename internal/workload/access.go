package workload

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/winnode/winnode/config"
)

// ServiceAccount is winnode's ServiceAccount in every workload cluster, in
// the operator's namespace there: every request of the operator in a
// workload cluster, but the installation below and its own tokens, is made
// as it.
const ServiceAccount = "winnode-workload"

// manifestNamespace is the namespace config/workload/access.yaml names,
// replaced by the operator's own.
const manifestNamespace = "winnode-system"

// fieldManager owns what the operator installs (server-side apply).
const fieldManager = "winnode-operator"

// AccessObjects are the objects the operator installs in a workload
// cluster (config/workload/access.yaml), with namespace as winnode's
// namespace there.
func AccessObjects(namespace string) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(config.WorkloadAccess)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("config/workload/access.yaml: %w", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		renamespace(u, namespace)
		objs = append(objs, u)
	}
}

// renamespace puts u, and the ServiceAccount subjects it binds, in
// namespace in place of the manifest's.
func renamespace(u *unstructured.Unstructured, namespace string) {
	if u.GetKind() == "Namespace" && u.GetName() == manifestNamespace {
		u.SetName(namespace)
	}
	if u.GetNamespace() == manifestNamespace {
		u.SetNamespace(namespace)
	}
	subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
	for _, s := range subjects {
		if m, ok := s.(map[string]any); ok && m["namespace"] == manifestNamespace {
			m["namespace"] = namespace
		}
	}
	if subjects != nil {
		_ = unstructured.SetNestedSlice(u.Object, subjects, "subjects")
	}
}

// install applies AccessObjects to the cluster of admin, with server-side
// apply: a repeated installation changes nothing, a changed object is put
// back.
func install(ctx context.Context, admin *rest.Config, namespace string) error {
	objs, err := AccessObjects(namespace)
	if err != nil {
		return err
	}
	c, err := client.New(admin, client.Options{})
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("installing %s %s: %w", o.GetKind(), qualified(o), err)
		}
	}
	return nil
}

func qualified(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
