package standin

import (
	"context"
	"errors"
	"fmt"
	"github.com/winnode/winnode/internal/simhns"
	"os"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// runKubeProxy is the simulated kube-proxy: it validates its flags, its
// configuration file and its kubeconfig as kube-proxy on Windows does, then
// runs until stopped without programming any rules.
func runKubeProxy(ctx context.Context, args []string) int {
	log := newLogger("kube-proxy")
	fs := pflag.NewFlagSet("kube-proxy", pflag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	var (
		config, kubeconfig, hostnameOverride, clusterCIDR, proxyMode, featureGates     string
		networkName, sourceVIP, bindAddress, healthzBind, metricsBind, logFile, master string
		windowsService, enableDSR, logToStderr                                         bool
		verbosity                                                                      int
	)
	fs.StringVar(&config, "config", "", "path to the configuration file")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "path to a kubeconfig file")
	fs.StringVar(&master, "master", "", "address of the Kubernetes API server")
	fs.StringVar(&hostnameOverride, "hostname-override", "", "name of this node")
	fs.StringVar(&clusterCIDR, "cluster-cidr", "", "CIDR range of pods in the cluster")
	fs.StringVar(&proxyMode, "proxy-mode", "", "which proxy mode to use (kernelspace on Windows)")
	fs.StringVar(&featureGates, "feature-gates", "", "feature gates")
	fs.StringVar(&networkName, "network-name", "", "HNS network name")
	fs.StringVar(&sourceVIP, "source-vip", "", "source VIP for overlay networking")
	fs.BoolVar(&enableDSR, "enable-dsr", false, "use direct server return")
	fs.StringVar(&bindAddress, "bind-address", "0.0.0.0", "bind address")
	fs.StringVar(&healthzBind, "healthz-bind-address", "0.0.0.0:10256", "healthz address")
	fs.StringVar(&metricsBind, "metrics-bind-address", "127.0.0.1:10249", "metrics address")
	fs.BoolVar(&windowsService, "windows-service", false, "run as a Windows service")
	fs.IntVarP(&verbosity, "v", "v", 0, "log verbosity")
	fs.StringVar(&logFile, "log-file", "", "file to write logs to")
	fs.BoolVar(&logToStderr, "logtostderr", true, "log to standard error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	log.verbose = verbosity
	// kube-proxy answers the service control manager before it reads its
	// configuration (cmd/kube-proxy/app/server.go: initForOS, then Complete).
	if windowsService {
		if err := answerServiceManager(ctx, log, "kube-proxy"); err != nil {
			fmt.Fprintf(os.Stderr, "Error: failed os init: %v\n", err)
			return 1
		}
	}
	if logFile != "" {
		if err := log.toFile(logFile); err != nil {
			fmt.Fprintf(os.Stderr, "kube-proxy: %v\n", err)
			return 1
		}
	}
	if err := validateKubeProxy(config, kubeconfig, master, proxyMode); err != nil {
		log.Errorf("%v", err)
		return 1
	}
	if err := checkProxyNetwork(networkName, sourceVIP); err != nil {
		log.Errorf("%v", err)
		return 1
	}
	log.Infof("running in %s mode on node %q (simulated: no HNS policies are programmed)", orDefault(proxyMode, "kernelspace"), hostnameOverride)
	<-ctx.Done()
	log.Infof("stop signal received, kube-proxy exiting")
	return 0
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// kubeProxyConfig is the part of KubeProxyConfiguration the stand-in checks.
type kubeProxyConfig struct {
	APIVersion       string `json:"apiVersion"`
	Kind             string `json:"kind"`
	Mode             string `json:"mode"`
	ClientConnection struct {
		Kubeconfig string `json:"kubeconfig"`
	} `json:"clientConnection"`
}

func validateKubeProxy(config, kubeconfig, master, mode string) error {
	if config != "" {
		p, err := hostPath(config)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("failed to read config file %q: %w", config, err)
		}
		var c kubeProxyConfig
		if err := yaml.Unmarshal(data, &c); err != nil {
			return fmt.Errorf("failed to decode config file %q: %w", config, err)
		}
		if c.APIVersion != "kubeproxy.config.k8s.io/v1alpha1" || c.Kind != "KubeProxyConfiguration" {
			return fmt.Errorf("config file %q: apiVersion %q kind %q, want kubeproxy.config.k8s.io/v1alpha1 KubeProxyConfiguration", config, c.APIVersion, c.Kind)
		}
		if c.Mode != "" && mode == "" {
			mode = c.Mode
		}
		if kubeconfig == "" {
			kubeconfig = c.ClientConnection.Kubeconfig
		}
	}
	if mode != "" && mode != "kernelspace" {
		return fmt.Errorf("invalid proxy mode %q on Windows: only kernelspace is supported", mode)
	}
	if kubeconfig == "" && master == "" {
		return errors.New("neither --kubeconfig nor --master was specified; kube-proxy cannot reach the API server")
	}
	if kubeconfig != "" {
		if _, err := loadKubeconfig(kubeconfig); err != nil {
			return err
		}
	}
	return nil
}

// checkProxyNetwork is the kernelspace proxier's start on Windows
// (pkg/proxy/winkernel): the HNS network named by --network-name must
// exist, and on an Overlay network --source-vip must be given.
func checkProxyNetwork(networkName, sourceVIP string) error {
	if networkName == "" {
		return nil // the proxier then uses KUBE_NETWORK or the first L2Bridge/Overlay network; not simulated
	}
	hns, err := simhns.FromEnv()
	if err != nil {
		return err
	}
	n, err := hns.Network(networkName)
	if err != nil {
		return fmt.Errorf("unable to find HNS Network specified by %s. Please check network name and CNI deployment: %v", networkName, err)
	}
	if n.Type == simhns.TypeOverlay && sourceVIP == "" {
		return errors.New("source-vip flag not set: required on an Overlay network")
	}
	return nil
}
