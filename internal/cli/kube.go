package cli

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/winnode/winnode/api/bootstrap/v1alpha1"
	winnodev1 "github.com/winnode/winnode/api/v1alpha1"
)

// defaultNamespace is the operator's namespace (Secret cloud-private-key,
// ConfigMap windows-instances).
const defaultNamespace = "winnode-system"

// clusterFlags are the flags of commands that talk to a cluster.
type clusterFlags struct {
	kubeconfig string
	context    string
}

func (f *clusterFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&f.context, "context", "", "kubeconfig context to use (default: the current context)")
}

// restConfig loads the client configuration as kubectl does: --kubeconfig,
// else $KUBECONFIG, else ~/.kube/config.
func (f *clusterFlags) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: f.context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		where := f.kubeconfig
		if where == "" {
			where = "$KUBECONFIG or ~/.kube/config"
		}
		return nil, fmt.Errorf("loading the cluster's kubeconfig from %s: %w (pass --kubeconfig FILE)", where, err)
	}
	cfg.UserAgent = "winnodectl"
	return cfg, nil
}

// Scheme knows the built-in types and WindowsInstance.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := winnodev1.AddToScheme(s); err != nil {
		panic(err)
	}
	// Cluster API Machines and winnode's WinnodeConfigs: status lists the
	// Machines in Pull mode, which have no WindowsInstance.
	if err := bootstrapv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := clusterv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// NewClient is a controller-runtime client (direct, no cache) for cfg.
func NewClient(cfg *rest.Config) (client.Client, error) {
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, fmt.Errorf("connecting to the API server at %s: %w", cfg.Host, err)
	}
	return c, nil
}
