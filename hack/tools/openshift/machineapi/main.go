// Command winsim-machine-api runs the OpenShift Machine API's own
// controllers, from github.com/openshift/machine-api-operator at the version
// this module pins, against the test world's API server: the MachineSet
// controller, the node link controller, and the generic Machine controller
// (with its drain controller) driving the "winsim" provider (Actuator), whose
// instances live in a simulated cloud (winsimcloud.Client) that the test
// process serves.
//
// It is how winnode's tests see Machines created, provisioned, linked to
// Nodes and deleted by the real Machine API rather than by a stand-in; it
// runs in one controller-runtime manager, without webhooks, leader election,
// metrics or health probes (internal/testenv machineapi.go starts it).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	configv1 "github.com/openshift/api/config/v1"
	apifeatures "github.com/openshift/api/features"
	machinev1 "github.com/openshift/api/machine/v1beta1"
	"github.com/openshift/library-go/pkg/features"
	"github.com/openshift/machine-api-operator/pkg/controller/machine"
	"github.com/openshift/machine-api-operator/pkg/controller/machineset"
	"github.com/openshift/machine-api-operator/pkg/controller/nodelink"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/winnode/winnode/hack/tools/winsimcloud"
)

// options are the program's flags.
type options struct {
	kubeconfig, cloudURL, namespace string
	gate                            *features.FeatureGateOptions
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		klog.Errorf("winsim-machine-api: %v", err)
		klog.Flush()
		os.Exit(1)
	}
}

// parseFlags reads the flags, klog's among them, and sets up the feature
// gate as MAO's cmd/machineset does (library-go's NewFeatureGateOptions on
// the API server library's default gate, OpenShift's SelfManaged profile):
// the controllers ask it about MachineAPIMigration, which a gate that does
// not know the feature would panic on.
func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("winsim-machine-api", flag.ContinueOnError)
	klog.InitFlags(fs)
	if err := fs.Set("logtostderr", "true"); err != nil {
		return nil, err
	}
	o := &options{}
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (required)")
	fs.StringVar(&o.cloudURL, "cloud-url", "", "base URL of the simulated cloud's HTTP API (required)")
	fs.StringVar(&o.namespace, "namespace", "openshift-machine-api", "namespace whose Machines and MachineSets are reconciled")
	var err error
	o.gate, err = features.NewFeatureGateOptions(feature.DefaultMutableFeatureGate, apifeatures.SelfManaged,
		apifeatures.FeatureGateMachineAPIMigration)
	if err != nil {
		return nil, fmt.Errorf("setting up feature gates: %w", err)
	}
	o.gate.AddFlagsToGoFlagSet(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.kubeconfig == "" || o.cloudURL == "" || o.namespace == "" {
		return nil, errors.New("--kubeconfig, --cloud-url and --namespace are required")
	}
	warnings, err := o.gate.ApplyTo(feature.DefaultMutableFeatureGate)
	if err != nil {
		return nil, fmt.Errorf("setting feature gates from flags: %w", err)
	}
	for _, w := range warnings {
		klog.Warningf("feature gates: %s", w)
	}
	return o, nil
}

// run builds the manager, adds the three controllers and runs them until
// SIGTERM or SIGINT.
func run(args []string) error {
	ctrl.SetLogger(klog.NewKlogr())
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	cloud, err := winsimcloud.New(o.cloudURL)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("reading kubeconfig %s: %w", o.kubeconfig, err)
	}
	opts := manager.Options{
		Metrics:                server.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
		// Namespaced objects only of the watched namespace, as MAO's
		// programs run with --namespace; Nodes are cluster-scoped and
		// watched whole.
		Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{o.namespace: {}}},
	}
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		return fmt.Errorf("setting up the controller manager: %w", err)
	}
	if err := addControllers(mgr, opts, cloud); err != nil {
		return err
	}
	klog.Infof("winsim-machine-api: MachineSet, nodelink, machine and drain controllers on namespace %s; instances in the simulated cloud at %s; MachineAPIMigration %t",
		o.namespace, o.cloudURL, feature.DefaultMutableFeatureGate.Enabled(featuregate.Feature(apifeatures.FeatureGateMachineAPIMigration)))
	return mgr.Start(ctrl.SetupSignalHandler())
}

// addControllers wires MAO's controllers as its programs do: machineset.Add
// (cmd/machineset), nodelink.Add (cmd/nodelink-controller) and
// machine.AddWithActuator, which adds the Machine controller and the drain
// controller (cmd/vsphere), with the winsim Actuator in the vSphere one's
// place.
func addControllers(mgr manager.Manager, opts manager.Options, cloud *winsimcloud.Client) error {
	for _, install := range []func(*runtime.Scheme) error{configv1.Install, machinev1.Install} {
		if err := install(mgr.GetScheme()); err != nil {
			return err
		}
	}
	gate := feature.DefaultMutableFeatureGate
	if err := machineset.Add(mgr, opts, gate); err != nil {
		return fmt.Errorf("adding the MachineSet controller: %w", err)
	}
	if err := nodelink.Add(mgr, opts); err != nil {
		return fmt.Errorf("adding the nodelink controller: %w", err)
	}
	actuator := &Actuator{
		client:   mgr.GetClient(),
		reader:   mgr.GetAPIReader(),
		cloud:    cloud,
		recorder: mgr.GetEventRecorderFor("winsim-controller"),
	}
	if err := machine.AddWithActuator(mgr, actuator, gate); err != nil {
		return fmt.Errorf("adding the Machine controller: %w", err)
	}
	return nil
}
