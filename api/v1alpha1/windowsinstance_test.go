package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/testkit/builder"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func newClient(t *testing.T) client.Client {
	t.Helper()
	env := testenv.Get(t)
	s := runtime.NewScheme()
	if err := winnodev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCRDAsInstalled checks the generated CRD (config/crd/bases, installed by
// testenv) does what the types promise: cluster scope, port default, username
// and port validation, and a status subresource that the main resource
// cannot write.
func TestCRDAsInstalled(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	wi := builder.Instance("api-test-1").Host("10.9.9.9", "Administrator").Phase(winnodev1.PhaseReady).Build()
	if err := c.Create(ctx, wi); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), wi) })
	if wi.Namespace != "" {
		t.Errorf("namespace %q: WindowsInstance must be cluster-scoped", wi.Namespace)
	}
	if wi.Spec.Port != 22 || wi.SSHPort() != 22 {
		t.Errorf("port %d, want the default 22", wi.Spec.Port)
	}
	if wi.Spec.Source.Kind != winnodev1.SourceManual {
		t.Errorf("source kind %q, want the default Manual", wi.Spec.Source.Kind)
	}
	if wi.Status.Phase != "" {
		t.Errorf("status written through the main resource: %+v (status is a subresource)", wi.Status)
	}
	wi.Status = winnodev1.WindowsInstanceStatus{Phase: winnodev1.PhaseConfiguring, Step: "sync", NodeName: "win-1", BootstrapTokenID: "abcdef"}
	if err := c.Status().Update(ctx, wi); err != nil {
		t.Fatalf("status update: %v", err)
	}

	for _, bad := range []winnodev1.WindowsInstanceSpec{
		{Address: "10.9.9.10", Username: "John Smith"},
		{Address: "10.9.9.10", Username: `CORP\admin`},
		{Address: "10.9.9.10", Username: "-oProxyCommand"},
		{Address: "10.9.9.10", Username: ""},
		{Address: "", Username: "a"},
		{Address: "10.9.9.10", Username: "a", Port: 70000},
		{Address: "10.9.9.10", Username: "a", Source: winnodev1.SourceRef{Kind: "Elsewhere"}},
	} {
		inst := builder.Instance("api-test-bad").Build()
		inst.Spec = bad // the spec under test, as a whole
		if err := c.Create(ctx, inst); !apierrors.IsInvalid(err) {
			t.Errorf("spec %+v: %v, want Invalid", bad, err)
			_ = c.Delete(ctx, builder.Instance("api-test-bad").Build())
		}
	}
	wi.Status.Phase = "Sleeping"
	if err := c.Status().Update(ctx, wi); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "phase") {
		t.Errorf("unknown phase: %v, want Invalid", err)
	}
}
