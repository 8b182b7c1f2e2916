package exporter

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winnode/winnode/internal/metricstls"
)

// askCABundle keeps the ConfigMap windows-exporter-ca annotated for
// OpenShift's service-ca controller, which then writes the service CA
// bundle into it under service-ca.crt (replacing any other data), for
// scrapers that verify the exporter's certificate.
func (r *Reconciler) askCABundle(ctx context.Context) error {
	want := map[string]string{metricstls.AnnotationInjectCABundle: "true"}
	cm := &corev1.ConfigMap{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: metricstls.CAConfigMapName}, cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: metricstls.CAConfigMapName, Namespace: r.Namespace, Annotations: want, Labels: metricstls.Labels()}}
		err = client.IgnoreAlreadyExists(r.Client.Create(ctx, cm))
	case err == nil && !hasAll(cm.Annotations, want):
		cm.Annotations = putAll(cm.Annotations, want)
		err = r.Client.Update(ctx, cm)
	}
	if err != nil {
		return fmt.Errorf("asking OpenShift's service CA for its bundle in ConfigMap %s/%s: %w", r.Namespace, metricstls.CAConfigMapName, err)
	}
	return nil
}

// hasAll says whether m holds every key of want with its value.
func hasAll(m, want map[string]string) bool {
	for k, v := range want {
		if m[k] != v {
			return false
		}
	}
	return true
}

// putAll sets every key of want in m (made if nil), and returns it.
func putAll(m, want map[string]string) map[string]string {
	if m == nil && len(want) > 0 {
		m = map[string]string{}
	}
	for k, v := range want {
		m[k] = v
	}
	return m
}
