package config

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/winnode/winnode/internal/testenv"
)

// What a host reports lands in a WindowsInstance's status, and the CRD
// bounds it as Windows and DNS do: a hostname is one DNS label of at most
// 63 characters, an FQDN at most 253, at most 32 IPv4 addresses. The API
// server (with the CRD of config/crd/bases) refuses a status beyond them.
func TestStatusLimitsOfWhatAHostReports(t *testing.T) {
	env := testenv.Get(t)
	c := newClient(t, env.Config)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wi := readObjects(t, "samples/windowsinstance.yaml")[0].DeepCopy()
	wi.SetName("winnode-status-limits")
	if err := c.Create(ctx, wi); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), wi) })
	addresses := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)
		}
		return out
	}
	for _, tc := range []struct {
		field string
		value any
		ok    bool
	}{
		{"hostname", strings.Repeat("a", 63), true},
		{"hostname", strings.Repeat("a", 64), false},
		{"hostname", "win.example.com", false},
		{"hostname", "win\u001b[2J", false},
		{"fqdn", strings.Repeat("a.", 126) + "a", true},
		{"fqdn", strings.Repeat("a.", 127), false},
		{"addresses", addresses(32), true},
		{"addresses", addresses(33), false},
	} {
		var cur unstructured.Unstructured
		cur.SetGroupVersionKind(wi.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(wi), &cur); err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(cur.Object, tc.value, "status", tc.field)
		err := c.Status().Update(ctx, &cur, client.DryRunAll)
		if tc.ok != (err == nil) {
			t.Errorf("status.%s of %d characters/items: %v; want accepted %v", tc.field, size(tc.value), err, tc.ok)
		}
	}
}

func size(v any) int {
	if s, ok := v.(string); ok {
		return len(s)
	}
	return len(v.([]any))
}
