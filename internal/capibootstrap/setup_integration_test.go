package capibootstrap

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	"github.com/winnode/winnode/internal/controller/optional"
	"github.com/winnode/winnode/internal/testenv"
	"github.com/winnode/winnode/internal/workload"
)

// On a cluster without Cluster API (the default test control plane has
// winnode's CRDs only), the part adds nothing and says why. With Cluster
// API's CRDs installed it is on: the world tests run it that way.
func TestPartIsOffWithoutClusterAPI(t *testing.T) {
	env := testenv.Get(t)
	var logs bytes.Buffer
	logger := funcr.New(func(prefix, args string) { logs.WriteString(prefix + " " + args + "\n") }, funcr.Options{})
	mgr, err := optional.NewManager(env.Config, ctrl.Options{
		Scheme: runtime.NewScheme(), Logger: logger, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	}, Part(operatorNamespace, &workload.Clusters{}, Pull{}))
	if err != nil {
		t.Fatalf("a manager with the part on a cluster without Cluster API: %v", err)
	}
	if !strings.Contains(logs.String(), "Cluster API bootstrap provider off: the API server does not serve cluster.x-k8s.io/v1beta2; restart the operator") {
		t.Errorf("no log line says why the part is off; logs:\n%s", logs.String())
	}
	if mgr.GetScheme().Recognizes(bootstrapGVK) {
		t.Error("the part changed the manager's scheme although it is off")
	}
}

var bootstrapGVK = bootstrapv1.GroupVersion.WithKind("WinnodeConfig")
