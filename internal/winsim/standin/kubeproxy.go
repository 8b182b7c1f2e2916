package standin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/winnode/winnode/internal/simhns"
)

// kubeProxyOptions are the stand-in's own flags.
type kubeProxyOptions struct {
	settings        proxySettings
	config, version string
	enableDSR       bool
	verbosity       int
}

// kubeProxyFlags are exactly the real kube-proxy's flags (flags.go), those
// the stand-in uses bound to o.
func kubeProxyFlags() (*kubeProxyOptions, *pflag.FlagSet, error) {
	o := &kubeProxyOptions{}
	own := pflag.NewFlagSet("kube-proxy", pflag.ContinueOnError)
	own.SetOutput(os.Stderr)
	own.StringVar(&o.config, "config", "", "path to the configuration file")
	own.StringVar(&o.settings.kubeconfig, "kubeconfig", "", "path to a kubeconfig file")
	own.StringVar(&o.settings.master, "master", "", "address of the Kubernetes API server")
	own.StringVar(&o.settings.hostnameOverride, "hostname-override", "", "name of this node")
	own.StringVar(&o.settings.mode, "proxy-mode", "", "which proxy mode to use (kernelspace on Windows)")
	own.StringVar(&o.settings.networkName, "network-name", "", "HNS network name")
	own.StringVar(&o.settings.sourceVIP, "source-vip", "", "source VIP for overlay networking")
	own.BoolVar(&o.enableDSR, "enable-dsr", false, "use direct server return")
	own.BoolVar(&o.settings.windowsService, "windows-service", false, "run as a Windows service")
	own.IntVarP(&o.verbosity, "v", "v", 0, "log verbosity")
	own.StringVar(&o.version, "version", "false", "print the version and quit")
	own.Lookup("version").NoOptDefVal = "true"
	fs, err := strictPFlags(KubeProxy, own)
	return o, fs, err
}

// proxySettings are what the stand-in kube-proxy uses of its flags or its
// configuration file.
type proxySettings struct {
	kubeconfig, master, hostnameOverride, mode string
	networkName, sourceVIP                     string
	windowsService                             bool
}

// runKubeProxy is the simulated kube-proxy: it validates its flags, its
// configuration file and its kubeconfig as kube-proxy on Windows does, then
// runs until stopped without programming any rules.
func runKubeProxy(ctx context.Context, args []string) int {
	log := newLogger("kube-proxy")
	o, fs, err := kubeProxyFlags()
	if err != nil {
		log.Errorf("%v", err)
		return 1
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		// cobra's refusal, as kube-proxy prints it.
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	if o.version != "false" {
		fmt.Printf("Kubernetes %s\n", kubeletVersion())
		return 0
	}
	set, config, verbosity := o.settings, o.config, o.verbosity
	log.verbose = verbosity
	// kube-proxy answers the service control manager before it reads its
	// configuration (cmd/kube-proxy/app/server.go: initForOS, then Complete).
	if set.windowsService {
		if err := answerServiceManager(ctx, log, "kube-proxy"); err != nil {
			fmt.Fprintf(os.Stderr, "Error: failed os init: %v\n", err)
			return 1
		}
	}
	set, err = validateKubeProxy(config, set)
	if err != nil {
		log.Errorf("%v", err)
		return 1
	}
	if err := checkProxyNetwork(ctx, log, set.networkName, set.sourceVIP); err != nil {
		log.Errorf("%v", err)
		return 1
	}
	if ctx.Err() != nil {
		log.Infof("stop signal received, kube-proxy exiting")
		return 0
	}
	log.Infof("running in %s mode on node %q (simulated: no HNS policies are programmed)", orDefault(set.mode, "kernelspace"), set.hostnameOverride)
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

// validateKubeProxy resolves the settings as kube-proxy does: a
// configuration file replaces what the flags said, except
// --hostname-override and --master (cmd/kube-proxy/app/options.go,
// Complete), and decodes strictly, falling back to a lenient decoding with
// a warning; then it checks the mode and the kubeconfig.
func validateKubeProxy(config string, flags proxySettings) (proxySettings, error) {
	set := flags
	if config != "" {
		c, err := loadKubeProxyConfig(config)
		if err != nil {
			return set, err
		}
		set = proxySettings{
			kubeconfig: c.ClientConnection.Kubeconfig, master: flags.master, mode: string(c.Mode),
			hostnameOverride: c.HostnameOverride, networkName: c.Winkernel.NetworkName, sourceVIP: c.Winkernel.SourceVip,
		}
		if flags.hostnameOverride != "" {
			set.hostnameOverride = flags.hostnameOverride
		}
	}
	if set.mode != "" && set.mode != "kernelspace" {
		return set, fmt.Errorf("invalid proxy mode %q on Windows: only kernelspace is supported", set.mode)
	}
	if set.kubeconfig == "" && set.master == "" {
		return set, errors.New("neither --kubeconfig nor --master was specified; kube-proxy cannot reach the API server")
	}
	if set.kubeconfig != "" {
		if _, err := loadKubeconfig(set.kubeconfig); err != nil {
			return set, err
		}
	}
	return set, nil
}

// loadKubeProxyConfig reads a KubeProxyConfiguration file.
func loadKubeProxyConfig(config string) (*kubeproxyv1alpha1.KubeProxyConfiguration, error) {
	p, err := hostPath(config)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("failed complete: open %s: %w", config, err)
	}
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return nil, fmt.Errorf("failed complete: failed to decode: %w", err)
	}
	if tm.APIVersion != kubeproxyv1alpha1.SchemeGroupVersion.String() || tm.Kind != "KubeProxyConfiguration" {
		return nil, fmt.Errorf("failed complete: config file %q: apiVersion %q kind %q, want kubeproxy.config.k8s.io/v1alpha1 KubeProxyConfiguration", config, tm.APIVersion, tm.Kind)
	}
	c := &kubeproxyv1alpha1.KubeProxyConfiguration{}
	if err := yaml.UnmarshalStrict(data, c); err != nil {
		c = &kubeproxyv1alpha1.KubeProxyConfiguration{}
		if lenient := yaml.Unmarshal(data, c); lenient != nil {
			return nil, fmt.Errorf("failed complete: failed lenient decoding: %w", err)
		}
	}
	return c, nil
}

// checkProxyNetwork is the kernelspace proxier's start on Windows
// (pkg/proxy/winkernel, NewProxier): it waits for the HNS network named by
// --network-name, logging "Unable to find HNS Network specified" every
// second until it exists (getNetworkInfo), and on an Overlay network
// --source-vip must be given. It returns nil when ctx ends first.
func checkProxyNetwork(ctx context.Context, log *logger, networkName, sourceVIP string) error {
	if networkName == "" {
		return nil // the proxier then uses KUBE_NETWORK or the first L2Bridge/Overlay network; not simulated
	}
	hns, err := simhns.FromEnv()
	if err != nil {
		return err
	}
	n, err := hns.Network(networkName)
	for err != nil {
		log.Errorf("Unable to find HNS Network specified, please check network name and CNI deployment: %v hnsNetworkName=%q", err, networkName)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
		n, err = hns.Network(networkName)
	}
	if n.Type == simhns.TypeOverlay && sourceVIP == "" {
		return errors.New("source-vip flag not set: required on an Overlay network")
	}
	return nil
}
