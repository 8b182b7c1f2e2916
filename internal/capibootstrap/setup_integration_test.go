package capibootstrap

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	"github.com/winnode/winnode/internal/testenv"
)

// On a cluster without Cluster API (the default test control plane has
// winnode's CRDs only), Setup adds nothing and says why; with Cluster API's
// CRDs installed, the APIs are found.
func TestSetupIsOffWithoutClusterAPI(t *testing.T) {
	env := testenv.Get(t)
	d, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ok, why, err := Available(d)
	if err != nil || ok || !strings.Contains(why, "cluster.x-k8s.io/v1beta2") {
		t.Fatalf("Available on a cluster without Cluster API = %v, %q, %v", ok, why, err)
	}

	var logs bytes.Buffer
	logger := funcr.New(func(prefix, args string) { logs.WriteString(prefix + " " + args + "\n") }, funcr.Options{})
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Logger: logger, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := Setup(mgr, operatorNamespace); err != nil {
		t.Fatalf("Setup on a cluster without Cluster API: %v", err)
	}
	if !strings.Contains(logs.String(), "Cluster API bootstrap provider off: the API server does not serve cluster.x-k8s.io/v1beta2") {
		t.Errorf("Setup did not log why it is off; logs:\n%s", logs.String())
	}
	if mgr.GetScheme().Recognizes(bootstrapGVK) {
		t.Error("Setup changed the manager's scheme although it is off")
	}

	w := newCAPIWorld(t) // another control plane, with Cluster API's CRDs
	d, err = discovery.NewDiscoveryClientForConfig(w.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why, err := Available(d); err != nil || !ok {
		t.Errorf("Available with Cluster API installed = %v, %q, %v", ok, why, err)
	}
}

var bootstrapGVK = bootstrapv1.GroupVersion.WithKind("WinnodeConfig")
