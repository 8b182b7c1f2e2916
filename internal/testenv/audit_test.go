package testenv

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The audit log names each write of an identity in system:masters, and
// none of its reads.
func TestWritesAreAudited(t *testing.T) {
	env := Get(t)
	cfg, err := env.UserConfig("audit-test-writer", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	since := time.Now().Add(-time.Second)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "audited", Namespace: metav1.NamespaceDefault}}
	if _, err := c.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer c.CoreV1().ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{})
	for range 3 {
		if _, err := c.CoreV1().ConfigMaps(cm.Namespace).Get(ctx, cm.Name, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CoreV1().ConfigMaps(cm.Namespace).Patch(ctx, cm.Name, "application/merge-patch+json", []byte(`{"data":{"a":"b"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	writes, err := env.Writes("audit-test-writer", since)
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 2 || writes[0].Verb != "create" || writes[1].Verb != "patch" || writes[1].Resource != "configmaps" || writes[1].Name != "audited" {
		t.Fatalf("audited writes %v, want a create and a patch of configmap audited", writes)
	}
}
